//! The balancer: per-device shares of the C tiles from rate models, and the choice of the device
//! subset (PARALiA, HDGEMM).
//!
//! A device's predicted time for a share `w` of the work is the longer of its compute
//! (`w * flops / rate`) and its host traffic (the A and B panels its tiles touch, about
//! `sqrt(w)` of each for a 2D block of C, plus its share of C in and out, over its host link);
//! a device that computes in host memory (the CPU) moves nothing and runs at its in-situ rate
//! (it also feeds the GPUs, HDGEMM's observation). Shares start equal and are scaled by
//! `mean time / own time` until every device's time is within 5% of the others'. The subset
//! is the fastest of all non-empty subsets; a larger subset must win by `MIN_GAIN` to be taken,
//! so a device is only added where the model predicts a real gain.

use crate::problem::{GemmProblem, Operand};
use serde::Serialize;

/// What the balancer knows of one device.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct DeviceRate {
    /// Sustained GEMM rate at the tile size in use (flop/s).
    pub flops_per_sec: f64,
    /// Host link bandwidth (bytes/s) for devices with their own memory; `None` for a device
    /// computing in host memory.
    pub host_bytes_per_sec: Option<f64>,
    /// Fixed cost of taking part (first tiles' latency, launch, synchronisation), seconds.
    pub overhead: f64,
}

/// Shares and predicted times.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Balance {
    /// Fraction of the C tiles per device (sums to 1).
    pub weights: Vec<f64>,
    /// Predicted seconds per device.
    pub times: Vec<f64>,
    /// The longest of them.
    pub makespan: f64,
}

/// Factor a CPU's rate drops by while it also feeds accelerators (HDGEMM measured 10-30%; on
/// H200 nodes the accelerators' DMA and the CPU share one memory bandwidth: 0.8 was too high).
pub const IN_SITU: f64 = 0.5;
/// A larger subset must beat a smaller one by this fraction to be chosen.
pub const MIN_GAIN: f64 = 0.03;

/// What a CPU pays to join accelerators in one call (its BLAS threads re-sized and woken, its
/// tiles interleaved with the accelerators' host traffic): on H200 a 512^3 DGEMM took 1.0 ms on
/// GPU + CPU against 0.4 ms on the GPU alone, 1024^3 3.1 ms against 0.7 ms.
pub const CPU_JOIN_S: f64 = 1e-3;

fn device_time(p: &GemmProblem, r: &DeviceRate, w: f64, shared: bool) -> f64 {
    if w <= 0.0 {
        return 0.0;
    }
    let flops = p.flops() * w;
    match r.host_bytes_per_sec {
        None => {
            let (rate, join) = if shared {
                (r.flops_per_sec * IN_SITU, CPU_JOIN_S)
            } else {
                (r.flops_per_sec, 0.0)
            };
            r.overhead + join + flops / rate
        }
        Some(bw) => {
            let e = p.dtype.size() as f64;
            let touch = w.sqrt().min(1.0);
            let host = |op: Operand| p.location(op).is_host();
            let mut bytes = 0.0;
            if host(Operand::A) {
                bytes += (p.m * p.k) as f64 * e * touch;
            }
            if host(Operand::B) {
                bytes += (p.k * p.n) as f64 * e * touch;
            }
            if host(Operand::C) {
                let c = (p.m * p.n) as f64 * e * w;
                bytes += c + if p.beta_zero { 0.0 } else { c };
            }
            r.overhead + (flops / r.flops_per_sec).max(bytes / bw)
        }
    }
}

/// Balances `p` over `rates` (every device takes part).
pub fn balance(p: &GemmProblem, rates: &[DeviceRate]) -> Balance {
    let n = rates.len().max(1);
    let mut w = vec![1.0 / n as f64; rates.len()];
    let mut t = times(p, rates, &w);
    for _ in 0..200 {
        let active: Vec<f64> = t
            .iter()
            .zip(&w)
            .filter(|(_, &x)| x > 1e-9)
            .map(|(&ti, _)| ti)
            .collect();
        let (lo, hi) = active.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
            (lo.min(x), hi.max(x))
        });
        if active.is_empty() || hi <= lo * 1.05 {
            break;
        }
        let mean = active.iter().sum::<f64>() / active.len() as f64;
        for (wi, &ti) in w.iter_mut().zip(&t) {
            if ti > 0.0 {
                // Damped: compute-bound devices scale linearly, transfer-bound ones by sqrt.
                *wi *= (mean / ti).powf(0.7);
            }
        }
        let s: f64 = w.iter().sum();
        w.iter_mut().for_each(|x| *x /= s);
        t = times(p, rates, &w);
    }
    let makespan = t.iter().copied().fold(0.0, f64::max);
    Balance {
        weights: w,
        times: t,
        makespan,
    }
}

/// Each device's predicted time for its share in `weights`.
fn times(p: &GemmProblem, rates: &[DeviceRate], weights: &[f64]) -> Vec<f64> {
    let shared = rates.iter().any(|r| r.host_bytes_per_sec.is_some()) && rates.len() > 1;
    let time = |(r, &w): (&DeviceRate, &f64)| device_time(p, r, w, shared);
    rates.iter().zip(weights).map(time).collect()
}

/// The predicted makespan of `p` with the given shares (rounded ones, say), on `rates`.
pub fn makespan(p: &GemmProblem, rates: &[DeviceRate], weights: &[f64]) -> f64 {
    times(p, rates, weights).into_iter().fold(0.0, f64::max)
}

/// Whole tile counts for `tiles` C tiles: the floors of `weights * tiles`, then each remaining
/// tile to the device whose predicted time is lowest with it. A slow device (the CPU) gets a
/// tile only where it still finishes before the others: the continuous shares cannot be
/// followed below one tile, and rounding up could make it the last to finish.
pub fn tile_counts(
    p: &GemmProblem,
    rates: &[DeviceRate],
    weights: &[f64],
    tiles: usize,
) -> Vec<usize> {
    let shared = rates.iter().any(|r| r.host_bytes_per_sec.is_some()) && rates.len() > 1;
    let mut count: Vec<usize> = weights
        .iter()
        .map(|w| (w * tiles as f64 + 1e-9).floor() as usize)
        .collect();
    while count.iter().sum::<usize>() < tiles {
        let d = (0..rates.len())
            .min_by(|&a, &b| {
                let ta = device_time(p, &rates[a], (count[a] + 1) as f64 / tiles as f64, shared);
                let tb = device_time(p, &rates[b], (count[b] + 1) as f64 / tiles as f64, shared);
                ta.total_cmp(&tb)
            })
            .unwrap_or(0);
        count[d] += 1;
    }
    count
}

/// One evaluated subset, for `hetblas predict`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SubsetChoice {
    /// Indices into the candidate list.
    pub devices: Vec<usize>,
    pub balance: Balance,
}

/// Evaluates every non-empty subset of the candidates and returns the chosen one (fastest,
/// with the `MIN_GAIN` rule favouring fewer devices) and all evaluated subsets sorted by
/// makespan, each device's rate in a subset of its own from `alone` and in a subset of several
/// from `shared` (same length): a device whose plan differs between the two
/// (a GPU with host folds and its model's blocking alone, square tiles and C sent beside the
/// CPU) is priced as each plan runs.
pub fn choose_subset_split(
    p: &GemmProblem,
    alone: &[DeviceRate],
    shared: &[DeviceRate],
) -> (SubsetChoice, Vec<SubsetChoice>) {
    debug_assert_eq!(alone.len(), shared.len());
    let n = alone.len().min(shared.len()).min(16);
    if n == 0 {
        // No candidate: no subset (the caller reports that no device can take the call).
        return (SubsetChoice::default(), Vec::new());
    }
    let mut all = Vec::new();
    for mask in 1u32..(1 << n) {
        let devices: Vec<usize> = (0..n).filter(|&i| mask & (1 << i) != 0).collect();
        let rates = if devices.len() == 1 { alone } else { shared };
        let sub: Vec<DeviceRate> = devices.iter().map(|&i| rates[i]).collect();
        all.push(SubsetChoice {
            devices,
            balance: balance(p, &sub),
        });
    }
    all.sort_by(|a, b| a.balance.makespan.total_cmp(&b.balance.makespan));
    // Among subsets within MIN_GAIN of the fastest, the one with the fewest devices (the
    // fastest of those: the first, `all` being sorted).
    let best = all[0].balance.makespan;
    let chosen = all
        .iter()
        .filter(|s| s.balance.makespan <= best * (1.0 + MIN_GAIN))
        .min_by_key(|s| s.devices.len())
        .cloned()
        .unwrap_or_else(|| all[0].clone());
    (chosen, all)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::operand::Trans;
    use crate::scalar::DType;

    fn problem(n: usize, locs: [MemorySpace; 3]) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m: n,
            n,
            k: n,
            dtype: DType::F64,
            beta_zero: false,
            locations: locs,
            sym: None,
        }
    }

    fn dev(rate: f64) -> DeviceRate {
        DeviceRate {
            flops_per_sec: rate,
            host_bytes_per_sec: None,
            overhead: 0.0,
        }
    }

    /// An H200 offloading from host memory, and the 16-core host beside it.
    fn h200_gpu() -> DeviceRate {
        DeviceRate {
            flops_per_sec: 55e12,
            host_bytes_per_sec: Some(50e9),
            overhead: 2e-3,
        }
    }

    fn host_cpu() -> DeviceRate {
        DeviceRate {
            flops_per_sec: 0.9e12,
            host_bytes_per_sec: None,
            overhead: 20e-6,
        }
    }

    /// No candidate gives no subset (the decision then says no device can take the call)
    /// instead of a panic.
    #[test]
    fn no_candidates_no_subset() {
        let (chosen, all) = choose_subset_split(&problem(1024, [MemorySpace::HOST; 3]), &[], &[]);
        assert!(chosen.devices.is_empty() && all.is_empty());
    }

    #[test]
    fn whole_tiles_never_slow_the_call() {
        let host = [MemorySpace::HOST; 3];
        let (gpu, cpu) = (h200_gpu(), host_cpu());
        // 64 tiles of a 32768^3 problem: one C tile (1.1 TFLOP over all of K) would keep the
        // CPU busy 1.5 s against 0.64 s for the GPUs: it gets none.
        let p = problem(32768, host);
        let b = balance(&p, &[gpu, gpu, cpu]);
        assert!(b.weights[2] > 0.0);
        let c = tile_counts(&p, &[gpu, gpu, cpu], &b.weights, 64);
        assert_eq!(c, vec![32, 32, 0]);
        // A CPU a fifth as fast as a GPU takes its whole-tile share.
        let fast_cpu = DeviceRate {
            flops_per_sec: 11e12,
            ..cpu
        };
        let b = balance(&p, &[gpu, gpu, fast_cpu]);
        let c = tile_counts(&p, &[gpu, gpu, fast_cpu], &b.weights, 64);
        assert_eq!(c.iter().sum::<usize>(), 64);
        assert!(c[2] >= 3 && c[2] <= 6, "{c:?}");
    }

    #[test]
    fn shares_follow_speed() {
        let p = problem(4096, [MemorySpace::HOST; 3]);
        let b = balance(&p, &[dev(1e9), dev(2e9), dev(4e9)]);
        for (w, want) in b.weights.iter().zip([1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0]) {
            assert!((w - want).abs() / want < 0.05, "{:?}", b.weights);
        }
        let ideal = p.flops() / 7e9;
        assert!((b.makespan - ideal) / ideal < 0.06);
    }

    #[test]
    fn slow_cpu_left_out_of_small_calls_and_big_gpu_calls() {
        let host = [MemorySpace::HOST; 3];
        let (gpu, cpu) = (h200_gpu(), host_cpu());
        // Tiny: the GPU's fixed costs dominate, the CPU alone wins.
        let (c, _) = choose_subset_split(&problem(256, host), &[gpu, cpu], &[gpu, cpu]);
        assert_eq!(c.devices, vec![1]);
        // Huge, compute-bound: the CPU adds under 2%, below MIN_GAIN: GPU alone.
        let (c, _) = choose_subset_split(&problem(32768, host), &[gpu, cpu], &[gpu, cpu]);
        assert_eq!(c.devices, vec![0]);
    }
}
