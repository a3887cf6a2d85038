//! The seeded validation set: random GEMM problems over three decades of sizes (40 to 40000
//! per side), in four classes that stress different parts of the model, f32 and f64, beta 0
//! and 1, host operands. One seed tunes the model, another reports on it: a fixed grid lets
//! a model fit its points and miss the tail.
//!
//! Classes, dealt in turn so that every class is in any set of four or more:
//! - thin: one of M, N small (40..1024), the others large: panels of C cross the link;
//! - fat: M, N large, K small (256..4096): C dominates the traffic, its write-back tail and
//!   host fold show;
//! - K-heavy: M, N moderate (256..8192), K large (8192..65536): A and B dominate, C is few tiles;
//! - transfer-bound: every side moderate (40..6144): the link and per-call costs, not compute.

use hetblas_core::DType;
use rand::rngs::StdRng;
use rand::{RngExt, SeedableRng};

/// One problem of the set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Problem {
    pub m: usize,
    pub n: usize,
    pub k: usize,
    pub dtype: DType,
    pub beta_zero: bool,
    pub class: Class,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Thin,
    Fat,
    KHeavy,
    TransferBound,
}

impl Class {
    const ALL: [Class; 4] = [Class::Thin, Class::Fat, Class::KHeavy, Class::TransferBound];

    pub fn name(self) -> &'static str {
        match self {
            Class::Thin => "thin",
            Class::Fat => "fat",
            Class::KHeavy => "k-heavy",
            Class::TransferBound => "transfer-bound",
        }
    }
}

/// Most bytes of A, B and C together: 4 GiB (page-locking them costs about a second per
/// process).
pub const MAX_BYTES: u64 = 4 << 30;
/// Most flops of one problem: about 0.4 s on one H200 in f64, so that a problem with its sweep
/// takes seconds and a set of 40 a few minutes of GPU time.
pub const MAX_FLOPS: f64 = 2e13;

/// The `count` problems of the set of `seed` (the same seed always gives the same problems,
/// and a set of `count` is a prefix of a larger one with the same seed).
pub fn generate(seed: u64, count: usize) -> Vec<Problem> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| draw(&mut r, Class::ALL[i % Class::ALL.len()]))
        .collect()
}

/// A side drawn log-uniformly in `[lo, hi]`.
fn side(r: &mut StdRng, lo: usize, hi: usize) -> usize {
    let (a, b) = ((lo as f64).ln(), (hi as f64).ln());
    (r.random_range(a..=b).exp().round() as usize).clamp(lo, hi)
}

/// One problem of `class`, redrawn until it fits [`MAX_BYTES`] and [`MAX_FLOPS`].
fn draw(r: &mut StdRng, class: Class) -> Problem {
    loop {
        let p = draw_sides(r, class);
        let bytes = ((p.m * p.k + p.k * p.n + p.m * p.n) * p.dtype.size()) as u64;
        if bytes <= MAX_BYTES && p.dtype.gemm_flops(p.m, p.n, p.k) <= MAX_FLOPS {
            return p;
        }
    }
}

/// One problem of `class`: its sides, dtype and beta, drawn in that order.
fn draw_sides(r: &mut StdRng, class: Class) -> Problem {
    {
        let (m, n, k) = match class {
            Class::Thin => {
                let small = side(r, 40, 1024);
                let (big1, big2) = (side(r, 4096, 40000), side(r, 2048, 40000));
                if r.random_range(0..2) == 0 {
                    (small, big1, big2)
                } else {
                    (big1, small, big2)
                }
            }
            Class::Fat => (
                side(r, 4096, 40000),
                side(r, 4096, 40000),
                side(r, 256, 4096),
            ),
            Class::KHeavy => (side(r, 256, 8192), side(r, 256, 8192), side(r, 8192, 65536)),
            Class::TransferBound => (side(r, 40, 6144), side(r, 40, 6144), side(r, 40, 6144)),
        };
        let dtype = if r.random_range(0..2) == 0 {
            DType::F32
        } else {
            DType::F64
        };
        let beta_zero = r.random_range(0..2) == 0;
        Problem {
            m,
            n,
            k,
            dtype,
            beta_zero,
            class,
        }
    }
}

/// Nominal rates that place a problem in a time window without any model or profile (one
/// H200, DESIGN.md's measured figures): f64 and f32 GEMM (flop/s) and each direction of the
/// host link (bytes/s). They only select problems; nothing is predicted with them.
pub const NOMINAL_F64_FLOPS: f64 = 55e12;
pub const NOMINAL_F32_FLOPS: f64 = 50e12;
pub const NOMINAL_LINK_BYTES_PER_SEC: f64 = 55e9;

/// Seconds a problem takes at least on one nominal H200 with host operands: the longest of
/// its flops at the GEMM rate, A and B (and C when beta != 0) in, and C out, each at the
/// link's rate.
pub fn nominal_seconds(p: &Problem) -> f64 {
    let e = p.dtype.size() as f64;
    let (m, n, k) = (p.m as f64, p.n as f64, p.k as f64);
    let flops = p.dtype.gemm_flops(p.m, p.n, p.k);
    let peak = if p.dtype.real() == DType::F32 {
        NOMINAL_F32_FLOPS
    } else {
        NOMINAL_F64_FLOPS
    };
    let c = m * n * e;
    let input = (m * k + k * n) * e + if p.beta_zero { 0.0 } else { c };
    (flops / peak)
        .max(input / NOMINAL_LINK_BYTES_PER_SEC)
        .max(c / NOMINAL_LINK_BYTES_PER_SEC)
}

/// The set of `seed` whose problems take `lo..=hi` seconds nominally ([`nominal_seconds`]):
/// the four classes in turn, each problem redrawn (up to many times) until it falls in the
/// window and within [`MAX_BYTES`]. For sets judged on a time range (issue 57: 2 ms to 1 s);
/// [`generate`] keeps its sets, so that every seed measured before gives the problems it gave.
pub fn generate_window(seed: u64, count: usize, lo: f64, hi: f64) -> Vec<Problem> {
    let mut r = StdRng::seed_from_u64(seed);
    (0..count)
        .map(|i| {
            let class = Class::ALL[i % Class::ALL.len()];
            let mut last = draw_unbounded(&mut r, class);
            for _ in 0..10_000 {
                let t = nominal_seconds(&last);
                if (lo..=hi).contains(&t) {
                    break;
                }
                last = draw_unbounded(&mut r, class);
            }
            last
        })
        .collect()
}

/// One problem of `class` within [`MAX_BYTES`] (no flop cap: the window bounds the time).
fn draw_unbounded(r: &mut StdRng, class: Class) -> Problem {
    loop {
        let p = draw_sides(r, class);
        let bytes = ((p.m * p.k + p.k * p.n + p.m * p.n) * p.dtype.size()) as u64;
        if bytes <= MAX_BYTES {
            return p;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_sets_stay_in_their_window() {
        let a = generate_window(1_764_000_000, 40, 0.002, 1.0);
        assert_eq!(a, generate_window(1_764_000_000, 40, 0.002, 1.0));
        for p in &a {
            let t = nominal_seconds(p);
            assert!((0.002..=1.0).contains(&t), "{p:?}: {t} s");
        }
        for c in Class::ALL {
            assert_eq!(a.iter().filter(|p| p.class == c).count(), 10);
        }
        assert!(a.iter().any(|p| p.dtype == DType::F32) && a.iter().any(|p| p.dtype == DType::F64));
        assert!(a.iter().any(|p| p.beta_zero) && a.iter().any(|p| !p.beta_zero));
        // A window of a decade around 20 ms: spread over it, not piled at one end.
        let b = generate_window(5, 40, 0.01, 0.1);
        let t: Vec<f64> = b.iter().map(nominal_seconds).collect();
        assert!(
            t.iter().any(|&x| x < 0.02) && t.iter().any(|&x| x > 0.05),
            "{t:?}"
        );
    }

    #[test]
    fn seeded_prefix_stable_within_limits_and_covering() {
        let a = generate(7, 40);
        assert_eq!(a, generate(7, 40));
        assert_eq!(&generate(7, 60)[..40], &a[..]);
        assert_ne!(a, generate(8, 40), "another seed, another set");
        for p in &a {
            assert!(((p.m * p.k + p.k * p.n + p.m * p.n) * p.dtype.size()) as u64 <= MAX_BYTES);
            assert!(p.dtype.gemm_flops(p.m, p.n, p.k) <= MAX_FLOPS);
            assert!([p.m, p.n, p.k].iter().all(|&s| (40..=65536).contains(&s)));
        }
        for c in Class::ALL {
            assert_eq!(a.iter().filter(|p| p.class == c).count(), 10);
        }
        // Both dtypes and both betas, and three decades of sides.
        assert!(a.iter().any(|p| p.dtype == DType::F32) && a.iter().any(|p| p.dtype == DType::F64));
        assert!(a.iter().any(|p| p.beta_zero) && a.iter().any(|p| !p.beta_zero));
        let sides: Vec<usize> = a.iter().flat_map(|p| [p.m, p.n, p.k]).collect();
        let (lo, hi) = (sides.iter().min().unwrap(), sides.iter().max().unwrap());
        assert!(*hi as f64 / *lo as f64 >= 1000.0, "sides {lo}..{hi}");
        // K-heavy: K at least the larger of M and N; fat: K at most the smaller.
        for p in &a {
            match p.class {
                Class::KHeavy => assert!(p.k >= p.m.max(p.n)),
                Class::Fat => assert!(p.k <= p.m.min(p.n)),
                _ => {}
            }
        }
    }
}
