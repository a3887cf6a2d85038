//! The call overhead measured through a pool ([`DevicePool::measure_call_overhead`]), checked
//! the same way on every backend whose devices are GPUs (CUDA, and emulated devices that
//! carry a GPU's kind in CI): a quick calibration of the f32 tiles the measurement uses, the
//! measurement, and the model with it against fresh one-tile calls.

use hetblas_core::autotune::pipeline_model;
use hetblas_core::calibrate::CalibrationOptions;
use hetblas_core::model::cocopelia::Offload;
use hetblas_core::{
    Blocking, DType, DeviceKind, DevicePool, GemmOptions, MatMut, MatRef, MemorySpace, Trans,
};
use std::time::{Duration, Instant};

/// f32 tiles only, small links: seconds.
fn quick_f32() -> CalibrationOptions {
    CalibrationOptions {
        link_sides: vec![16, 64, 128, 256, 512],
        gemm_tiles: vec![64, 128, 256],
        dtypes: vec![DType::F32],
        rel_ci: 0.1,
        min_reps: 3,
        max_reps: 30,
        point_time_cap: Duration::from_millis(100),
        bidirectional: false,
        cross_links: false,
        max_buffer_bytes: 4 << 20,
        strided_sides: vec![64],
        gemm_sample: Duration::ZERO,
        gemm_warmup: Duration::ZERO,
    }
}

/// Median seconds of 40 calls (after 10) of `side`^3 f32, beta = 0, host operands, on device
/// `i` in `tile` tiles.
fn median_call(pool: &DevicePool, i: usize, side: usize, tile: usize) -> f64 {
    let n = side * side;
    let mut rng = crate::data::rng(side as u64);
    let a: Vec<f32> = crate::data::random_vec(&mut rng, n);
    let b: Vec<f32> = crate::data::random_vec(&mut rng, n);
    let mut c = vec![f32::NAN; n];
    let opts = GemmOptions::default()
        .devices([i])
        .tile(tile)
        .host_fold(false)
        .k_split(false);
    let mut times: Vec<f64> = (0..50)
        .map(|_| {
            let t = Instant::now();
            pool.gemm_with(
                Trans::N,
                Trans::N,
                1.0f32,
                MatRef::packed(&a, side, side).unwrap(),
                MatRef::packed(&b, side, side).unwrap(),
                0.0f32,
                MatMut::packed(&mut c, side, side).unwrap(),
                &opts,
            )
            .expect("call");
            t.elapsed().as_secs_f64()
        })
        .skip(10)
        .collect();
    assert!(c.iter().all(|x| x.is_finite()), "C not written");
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

/// Calibrates `pool` quickly, measures every GPU's call overhead, and checks it: one entry per
/// GPU and none for other devices, positive costs, the model's use of them, and the model with
/// them within `tolerance` (relative) of fresh one-tile calls, closer than the model without
/// any (no setup, no issue cost).
pub fn check_call_overhead(pool: &DevicePool, tolerance: f64) {
    let mut profile = pool
        .calibrate(&quick_f32(), &mut |_| {})
        .expect("calibration");
    let measured = pool.measure_call_overhead(&profile).expect("measured");
    let gpus: Vec<(usize, String)> = pool
        .devices()
        .iter()
        .enumerate()
        .filter(|(_, d)| d.info().kind == DeviceKind::Gpu)
        .map(|(i, d)| (i, d.info().label()))
        .collect();
    assert_eq!(
        measured.iter().map(|m| m.0.clone()).collect::<Vec<_>>(),
        gpus.iter().map(|g| g.1.clone()).collect::<Vec<_>>(),
        "one measurement per GPU"
    );
    for (label, o) in &measured {
        assert!(
            o.setup_s > 0.0 && o.setup_s < 0.01 && o.task_issue_s > 0.0 && o.task_issue_s < 0.01,
            "{label}: {o:?}"
        );
        profile
            .devices
            .iter_mut()
            .find(|d| &d.label == label)
            .expect("profiled")
            .call_overhead = Some(*o);
    }
    for (i, label) in &gpus {
        let space = pool.devices()[*i].space();
        let (model, exec) =
            pipeline_model(&profile, label, DType::F32, true, true).expect("modelled");
        let o = measured.iter().find(|m| &m.0 == label).unwrap().1;
        assert_eq!(
            (model.setup_s, model.task_issue_s),
            (o.setup_s, o.task_issue_s)
        );
        let bare = hetblas_core::model::pipeline::PipelineModel {
            setup_s: 0.0,
            task_issue_s: 0.0,
            ..model.clone()
        };
        let side = 64;
        let p = hetblas_core::problem::GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m: side,
            n: side,
            k: side,
            dtype: DType::F32,
            beta_zero: true,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        };
        let off = Offload::from_problem(&p, space);
        let with = model.predict(&off, Blocking::square(side), &exec).seconds;
        let without = bare.predict(&off, Blocking::square(side), &exec).seconds;
        let got = median_call(pool, *i, side, side);
        assert!(
            (with / got - 1.0).abs() <= tolerance,
            "{label} {side}^3: predicted {with:e} s with the overhead, measured {got:e} s ({o:?})"
        );
        assert!(
            (without / got - 1.0).abs() > (with / got - 1.0).abs(),
            "{label} {side}^3: predicted {without:e} s without the overhead, as close to the \
             measured {got:e} s as with it ({with:e} s)"
        );
    }
}
