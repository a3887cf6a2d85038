//! The shared conformance suite on GPUs driven through HIP (skipped without one unless
//! HETBLAS_REQUIRE=hip): one GPU, and every GPU together when there are several.

use hetblas_conformance::{conformance_suite, targets_or_skip, Target};
use hetblas_core::{Backend, DevicePool};
use hetblas_hip::HipBackend;
use std::sync::Arc;

fn targets() -> Option<Vec<Target>> {
    targets_or_skip("hip", || {
        let d = HipBackend.discover().map_err(|e| e.to_string())?;
        let n = d.devices.len();
        let pool = Arc::new(DevicePool::new(d.devices, d.links).map_err(|e| e.to_string())?);
        let mut t = vec![Target {
            name: "hip:0".into(),
            pool: pool.clone(),
            compute: vec![0],
            homes: vec![0],
            small_tile: 64,
        }];
        if n > 1 {
            t.push(Target {
                name: format!("hip x{n}"),
                pool,
                compute: (0..n).collect(),
                homes: (0..n).collect(),
                small_tile: 64,
            });
        }
        Ok(t)
    })
}

conformance_suite!(targets);
