//! The shared conformance suite over the GPU layer's fake runtime with every plan's last late
//! C chains in three pieces (`DevicePool::set_tail_pieces`, whatever the tiles' size): the
//! pieces' 2D copies and adds on column ranges of slots and of C, through the layer's links.

mod fake;

use fake::FakeBackend;
use hetblas_conformance::{conformance_suite, gpu_targets, Target};
use hetblas_core::Backend;

fn targets() -> Option<Vec<Target>> {
    let targets = gpu_targets("fake", || FakeBackend::new().discover())?;
    for t in &targets {
        t.pool.set_tail_pieces(Some(3));
    }
    Some(targets)
}

conformance_suite!(targets);
