//! The shared conformance suite over the GPU layer's fake runtime with every plan's last late
//! C chains in three pieces (`HETBLAS_TAIL_PIECES=3`, whatever the tiles' size): the pieces'
//! 2D copies and adds on column ranges of slots and of C, through the layer's links.

mod fake;

use fake::FakeBackend;
use hetblas_conformance::{conformance_suite, gpu_targets, Target};
use hetblas_core::Backend;

fn targets() -> Option<Vec<Target>> {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // Before any plan of this binary is built; every test sets the same value.
    ONCE.call_once(|| std::env::set_var("HETBLAS_TAIL_PIECES", "3"));
    gpu_targets("fake", || FakeBackend::new().discover())
}

conformance_suite!(targets);
