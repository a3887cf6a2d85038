//! The autotuner's decisions: which devices take part and which tile size they use. Until a
//! calibrated machine profile drives them (the models), these are fixed, documented rules.

use crate::device::{Device, DeviceKind};
use crate::problem::{GemmProblem, Operand};
use crate::scalar::DType;
use std::sync::Arc;

/// Default device subset: the accelerators (GPUs, emulated devices) that support the dtype; the
/// CPU alone when there are none. The CPU joins accelerators only when the balancer says so.
pub fn default_devices(devices: &[Arc<dyn Device>], dtype: DType) -> Vec<usize> {
    let accel: Vec<usize> = devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.info().kind != DeviceKind::Cpu && d.kernel().supports(dtype))
        .map(|(i, _)| i)
        .collect();
    if !accel.is_empty() {
        return accel;
    }
    devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.kernel().supports(dtype))
        .map(|(i, _)| i)
        .take(1)
        .collect()
}

/// Default tile size for a problem on the chosen devices.
///
/// - One device that holds every operand in its own space computes in place: no tiling at all
///   (one call of its library GEMM is as fast as it gets).
/// - Otherwise a quarter of the largest dimension, rounded down to a power of two, clamped to
///   [256, 4096]: big enough for a GPU GEMM to run near peak, small enough to pipeline.
/// - Shrunk until every device's budget holds 6 tiles (double-buffered A, B and C).
///
/// `budgets[i]` is the memory device `i` may use for tiles.
pub fn default_tile(p: &GemmProblem, devices: &[&Arc<dyn Device>], budgets: &[u64]) -> usize {
    let maxdim = p.m.max(p.n).max(p.k).max(1);
    if let [d] = devices {
        if Operand::ALL.iter().all(|&op| p.location(op) == d.space()) {
            return maxdim;
        }
    }
    let mut t = prev_pow2(maxdim / 4).clamp(256, 4096).min(maxdim);
    let min_budget = devices
        .iter()
        .zip(budgets)
        .filter(|(d, _)| Operand::ALL.iter().any(|&op| p.location(op) != d.space()))
        .map(|(_, &b)| b)
        .min()
        .unwrap_or(u64::MAX);
    while t > 16 && 6 * (t * t * p.dtype.size()) as u64 > min_budget {
        t /= 2;
    }
    t
}

fn prev_pow2(x: usize) -> usize {
    if x == 0 {
        1
    } else {
        1 << (usize::BITS - 1 - x.leading_zeros())
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pow2() {
        assert_eq!(super::prev_pow2(2048), 2048);
        assert_eq!(super::prev_pow2(2047), 1024);
        assert_eq!(super::prev_pow2(0), 1);
    }
}
