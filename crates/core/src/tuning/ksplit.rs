//! K-split: when C has too few tiles to keep every device busy, each device computes a partial
//! product of all of C over its own slice of K; then each device reduces one block of C's
//! columns (the other partials' blocks come to it) and writes it back, all at once.
//!
//! The model: device `d` with `k_d` of K spends `o_d + max(flops_d / rate_d, in_d / bw_d)`
//! (`in_d`: its slices of A and B); then the slowest device's reduction. The shares make every
//! device finish its product at the same time (bisection: each `k_d` is linear in it).

use crate::balance::DeviceRate;
use crate::memory::MemorySpace;
use crate::problem::{GemmProblem, Operand};

/// What the K-split model knows of one device taking part.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KSplitDevice {
    /// Its rate model (it must have a host link: `host_bytes_per_sec` is `Some`).
    pub rate: DeviceRate,
    /// Bandwidth of the slowest peer link bringing the other devices' partial blocks to it
    /// (bytes/s); `None` when some come through host memory (down the sender's host link,
    /// up this device's).
    pub peer_in: Option<f64>,
}

/// The K extent of each device and the predicted time.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct KShares {
    /// K extent per device (same order as given); sums to K. A device whose
    /// share would not pay for its cost gets 0.
    pub k: Vec<usize>,
    /// Predicted seconds of the whole call: products, reduction, write-back.
    pub seconds: f64,
}

/// Predicted time of a K-split with extents `k`.
pub fn predict(p: &GemmProblem, devs: &[KSplitDevice], k: &[usize]) -> f64 {
    let t = Terms::new(p, devs);
    let on: Vec<usize> = (0..devs.len()).filter(|&d| k[d] > 0).collect();
    let products = on
        .iter()
        .map(|&d| t.product_time(d, k[d] as f64))
        .fold(0.0, f64::max);
    let reduce = on
        .iter()
        .map(|&d| t.reduce_time(d, &on))
        .fold(0.0, f64::max);
    products + reduce
}

/// Balanced K extents over `devs` (`granule` rounds the extents), `None` when
/// some device lacks a host link or fewer than two devices get a share.
pub fn shares(p: &GemmProblem, devs: &[KSplitDevice], granule: usize) -> Option<KShares> {
    if devs.len() < 2 || devs.iter().any(|d| d.rate.host_bytes_per_sec.is_none()) {
        return None;
    }
    let t = Terms::new(p, devs);
    let k = p.k as f64;
    // Each device's K extent finishing its product by time `x` (linear in `x`).
    let extent = |d: usize, x: f64| -> f64 {
        let by_compute = (x - t.overhead[d]) / t.per_k_compute[d];
        let by_link = (x - t.overhead[d]) / t.per_k_bytes[d] * t.bw[d];
        by_compute.min(by_link).max(0.0)
    };
    let total = |x: f64| (0..devs.len()).map(|d| extent(d, x)).sum::<f64>();
    let (mut lo, mut hi) = (0.0f64, 1e-6f64);
    while total(hi) < k {
        hi *= 2.0;
        if hi > 1e9 {
            return None;
        }
    }
    for _ in 0..100 {
        let mid = 0.5 * (lo + hi);
        if total(mid) < k {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let g = granule.max(1);
    let mut ext: Vec<usize> = (0..devs.len())
        .map(|d| ((extent(d, hi) / g as f64).round() as usize) * g)
        .collect();
    // The rounding remainder goes to (or comes from) the first device.
    let others: usize = ext[1..].iter().sum::<usize>().min(p.k);
    ext[0] = p.k - others;
    // A device whose part of the reduction costs more than its share saves is left out: try
    // without each of the others while that is predicted faster.
    let mut best = predict(p, devs, &ext);
    loop {
        let mut improved = false;
        for d in 1..devs.len() {
            if ext[d] == 0 {
                continue;
            }
            let mut alt = ext.clone();
            alt[0] += alt[d];
            alt[d] = 0;
            let s = predict(p, devs, &alt);
            if s < best {
                (ext, best, improved) = (alt, s, true);
            }
        }
        if !improved {
            break;
        }
    }
    if ext.iter().filter(|&&x| x > 0).count() < 2 {
        return None;
    }
    Some(KShares {
        k: ext,
        seconds: best,
    })
}

/// The per-device constants of the model.
struct Terms {
    overhead: Vec<f64>,
    /// Seconds of product per unit of K.
    per_k_compute: Vec<f64>,
    /// Host bytes per unit of K (A and B slices in host memory).
    per_k_bytes: Vec<f64>,
    bw: Vec<f64>,
    peer_in: Vec<Option<f64>>,
    c_bytes: f64,
    /// The caller's C is read (beta != 0).
    c_in: bool,
}

impl Terms {
    fn new(p: &GemmProblem, devs: &[KSplitDevice]) -> Terms {
        let e = p.dtype.size() as f64;
        let flops_per_k = p.dtype.gemm_flops(p.m, p.n, 1);
        let mut per_k = 0.0;
        if p.location(Operand::A).is_host() {
            per_k += p.m as f64 * e;
        }
        if p.location(Operand::B).is_host() {
            per_k += p.n as f64 * e;
        }
        Terms {
            overhead: devs.iter().map(|d| d.rate.overhead).collect(),
            per_k_compute: devs
                .iter()
                .map(|d| flops_per_k / d.rate.flops_per_sec.max(1.0))
                .collect(),
            per_k_bytes: vec![per_k.max(1e-30); devs.len()],
            bw: devs
                .iter()
                .map(|d| d.rate.host_bytes_per_sec.unwrap_or(f64::INFINITY))
                .collect(),
            peer_in: devs.iter().map(|d| d.peer_in).collect(),
            c_bytes: (p.m * p.n) as f64 * e,
            c_in: !p.beta_zero,
        }
    }

    fn product_time(&self, d: usize, kd: f64) -> f64 {
        let compute = kd * self.per_k_compute[d];
        let link = kd * self.per_k_bytes[d] / self.bw[d];
        self.overhead[d] + compute.max(link)
    }

    /// Device `d`'s part of the reduction among the devices `on`: the others' partial blocks
    /// in (over its peer links, else down their host links and up its own), its block of the
    /// caller's C when beta != 0, and the block's write-back.
    fn reduce_time(&self, d: usize, on: &[usize]) -> f64 {
        if on.len() < 2 {
            return self.c_bytes / self.bw[d];
        }
        let block = self.c_bytes / on.len() as f64;
        let partials: f64 = on
            .iter()
            .filter(|&&e| e != d)
            .map(|&e| match self.peer_in[d] {
                Some(bw) => block / bw,
                None => block / self.bw[e] + block / self.bw[d],
            })
            .sum();
        let c_in = if self.c_in { block / self.bw[d] } else { 0.0 };
        partials + c_in + block / self.bw[d]
    }
}

/// K extents are multiples of this when K allows (long slices keep the tile products whole).
pub const GRANULE: usize = 256;

/// The balanced K-split of `p` over `devices`, with their rates read at `tile`
/// ([`crate::autotune::device_rates`]) and the peer links between them from `link_bw` (none:
/// through host memory). `None` when a rate is unknown or fewer than two devices would take
/// part.
pub fn choose(
    p: &GemmProblem,
    devices: &[&std::sync::Arc<dyn crate::device::Device>],
    tile: usize,
    profile: Option<&crate::profile::MachineProfile>,
    link_bw: &dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
) -> Option<KShares> {
    let rates = crate::autotune::device_rates(p, devices, tile, profile, link_bw)?;
    let devs: Vec<KSplitDevice> = devices
        .iter()
        .zip(rates)
        .map(|(d, rate)| KSplitDevice {
            rate,
            peer_in: devices
                .iter()
                .filter(|e| e.space() != d.space())
                .map(|e| link_bw(e.space(), d.space()))
                .try_fold(f64::INFINITY, |lo, bw| bw.map(|b| lo.min(b))),
        })
        .collect();
    let granule = if p.k >= 4 * GRANULE * devices.len() {
        GRANULE
    } else {
        1
    };
    shares(p, &devs, granule)
}

/// The extents of `shares` as (first index, extent) slices of K, in device order.
pub fn ranges(k: &[usize]) -> Vec<(usize, usize)> {
    k.iter()
        .scan(0, |at, &kd| {
            *at += kd;
            Some((*at - kd, kd))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::Trans;
    use crate::scalar::DType;

    fn gpu(flops: f64, bw: f64, peer: Option<f64>) -> KSplitDevice {
        KSplitDevice {
            rate: DeviceRate {
                flops_per_sec: flops,
                host_bytes_per_sec: Some(bw),
                overhead: 3e-4,
            },
            peer_in: peer,
        }
    }

    fn problem(m: usize, n: usize, k: usize, beta_zero: bool) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m,
            n,
            k,
            dtype: DType::F64,
            beta_zero,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        }
    }

    #[test]
    fn k_heavy_on_two_h200_like_devices_nearly_halves() {
        let p = problem(4096, 4096, 32768, false);
        let devs = [gpu(53e12, 55e9, Some(389e9)), gpu(53e12, 55e9, Some(389e9))];
        let one = predict(&p, &devs[..1], &[p.k]);
        let s = shares(&p, &devs, 256).unwrap();
        assert_eq!(s.k.iter().sum::<usize>(), p.k);
        assert!(s.k.iter().all(|&x| x % 256 == 0 && x > 0), "{:?}", s.k);
        // Each reduces and writes back half of C: equal devices get equal halves of K.
        assert_eq!(s.k[0], s.k[1], "{:?}", s.k);
        assert!(
            s.seconds < one / 1.8,
            "split {} s against one {one} s",
            s.seconds
        );
        // The reduction: the other half-partial over the peer link, half of C in and out.
        let half = 4096.0 * 4096.0 * 8.0 / 2.0;
        let tail = half / 389e9 + 2.0 * half / 55e9;
        let products = predict(&p, &devs, &s.k) - tail;
        assert!((products - (3e-4 + 4096.0 * 16.0 * 16384.0 / 55e9)).abs() < 1e-9);
        assert!((s.seconds - predict(&p, &devs, &s.k)).abs() < 1e-12);
    }

    #[test]
    fn a_device_that_cannot_pay_for_its_reduction_is_left_out() {
        // A tiny K: the partial's trip through host memory costs more than its product saves.
        let p = problem(4096, 4096, 512, true);
        let devs = [gpu(53e12, 55e9, None), gpu(53e12, 55e9, None)];
        assert!(shares(&p, &devs, 1).is_none());
        // A CPU-like device (no host link) never takes part in a K-split.
        let cpu = KSplitDevice {
            rate: DeviceRate {
                flops_per_sec: 1e12,
                host_bytes_per_sec: None,
                overhead: 0.0,
            },
            peer_in: None,
        };
        let p = problem(4096, 4096, 32768, true);
        assert!(shares(&p, &[gpu(53e12, 55e9, None), cpu], 1).is_none());
    }

    #[test]
    fn shares_follow_speeds_and_ranges_tile_k() {
        let p = problem(256, 256, 100_000, true);
        let devs = [
            gpu(1e9, 1e12, None),
            gpu(2e9, 1e12, Some(1e12)),
            gpu(1e9, 1e12, Some(1e12)),
        ];
        let s = shares(&p, &devs, 1).unwrap();
        let f = |d: usize| s.k[d] as f64 / p.k as f64;
        assert!((f(1) - 0.5).abs() < 0.02, "{:?}", s.k);
        assert!((f(0) - 0.25).abs() < 0.02 && (f(2) - 0.25).abs() < 0.02);
        let r = ranges(&s.k);
        assert_eq!(r[0].0, 0);
        assert_eq!(r[2].0 + r[2].1, p.k);
        assert_eq!(r[1].0, r[0].1);
    }
}
