//! Host fold: `C = beta * C + P` for a C tile in host memory and its product `P` returned by a
//! device into a host staging slot.
//!
//! Why: with C in host memory and beta != 0, sending C to the device costs as much link time as
//! bringing the product back. Folding on the host trades that host->device traffic (a third of
//! a square GEMM's) for host memory bandwidth, which a server has far more of. The fold runs on
//! its own host queue with several threads, so the devices never wait for it.

use crate::error::{Error, Result};
use crate::memory::RawTile;
use crate::plan::region::TileMask;
use crate::scalar::{c32, c64, DType, ScalarValue};

/// Fold speed assumed without a calibrated one (bytes of C per second): what a few threads of
/// a server reach with room to spare.
pub const DEFAULT_BYTES_PER_SEC: f64 = 20e9;

/// What one fold costs beyond its bytes (the host queue's wait for the product's copy, the
/// threads' hand-off): on H200, five of six calls folding 512 or 768 tiles priced within 7%.
pub const TASK_S: f64 = 25e-6;

/// Seconds a fold of `bytes` of C takes at `bytes_per_sec`, with its fixed cost ([`TASK_S`];
/// a call's first fold also pays [`FIRST_S`], priced apart): the one price the pipeline model
/// and the simulator both use.
pub fn seconds(bytes: usize, bytes_per_sec: f64) -> f64 {
    bytes as f64 / bytes_per_sec + TASK_S
}

/// What a call's first fold costs beyond [`TASK_S`]: the fold threads sleep between calls and
/// wake one after another (on H200's host the first fold ran 90-260 us longer than the next;
/// spinning the threads through the call did not shorten the calls).
pub const FIRST_S: f64 = 100e-6;

/// How much longer than [`FIRST_S`] the wake may take (up to 260 us on H200): the tile chooser
/// folds only where the fold still wins at the slowest wake (`autotune::choose`); on H200 the
/// calls this unfolds ran 3.7% faster (median of 16).
pub const WAKE_SPREAD_S: f64 = 160e-6;

/// What host folds run on: an in-order queue (a fold waits for its product's copy) and the
/// worker threads that do the arithmetic. Started once per pool, on first use.
pub struct HostFolder {
    pub queue: std::sync::Arc<crate::host_queue::HostQueue>,
    pub workers: std::sync::Arc<rayon::ThreadPool>,
    /// Where each fold's bytes and time go (shared by the pool's folders).
    pub speed: std::sync::Arc<crate::tuning::fold_speed::FoldSpeed>,
}

impl HostFolder {
    /// A folder with a queue of its own over `workers` shared with other folders (calls
    /// running at once each fold on their own queue, over one set of threads), recording its
    /// folds in `speed`.
    pub fn with_workers(
        workers: std::sync::Arc<rayon::ThreadPool>,
        speed: std::sync::Arc<crate::tuning::fold_speed::FoldSpeed>,
    ) -> Result<HostFolder> {
        Ok(HostFolder {
            queue: crate::host_queue::HostQueue::new("host-fold")?,
            workers,
            speed,
        })
    }
}

impl std::fmt::Debug for HostFolder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostFolder")
            .field("threads", &self.workers.current_num_threads())
            .finish()
    }
}

/// The worker threads host folds run on, started once (starting them dominated folds of 2048^2
/// tiles): the cores, at most 12, since the fold is memory-bound (on H200, 8 or 12 ran as fast
/// as 14-24).
pub fn fold_workers() -> Result<rayon::ThreadPool> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.clamp(1, 12))
        .thread_name(|i| format!("hetblas-fold{i}"))
        .build()
        .map_err(|e| Error::internal(format!("cannot start fold threads: {e}")))
}

/// `c = beta * c + p` on the entries of `mask`, both host tiles of the same shape and dtype,
/// on `workers`; the entries outside the mask are neither read nor written.
///
/// # Errors
/// `Internal` when the tiles do not describe host memory of one shape and dtype
/// ([`crate::kernel::check_add`]'s checks, plus host memory).
///
/// # Safety
/// Both tiles must describe valid host memory (`ld >= rows`, `cols` columns), `c` writable, and
/// no other thread may access `c` or write `p` during the call.
pub unsafe fn fold_into(
    c: &RawTile,
    p: &RawTile,
    beta: ScalarValue,
    mask: TileMask,
    workers: &rayon::ThreadPool,
) -> Result<()> {
    use rayon::prelude::*;
    crate::kernel::check_add(beta, p, c)?;
    if !c.space.is_host() {
        return Err(Error::internal(format!(
            "host fold of device memory: {c:?}"
        )));
    }
    if c.rows == 0 || c.cols == 0 {
        return Ok(());
    }
    let threads = workers.current_num_threads();
    let per = task_cols(c.cols, c.rows * c.dtype.size(), threads);
    let chunks = c.cols.div_ceil(per);
    let (c, p) = (*c, *p);
    workers.install(|| {
        (0..chunks).into_par_iter().for_each(|ch| {
            let (j0, j1) = (ch * per, ((ch + 1) * per).min(c.cols));
            // check_add made beta's dtype that of both tiles.
            match beta {
                // SAFETY: the caller guarantees valid, exclusive memory; tasks take disjoint
                // column ranges of c.
                ScalarValue::F32(b) => unsafe { fold_cols::<f32>(&c, &p, b, mask, j0, j1) },
                // SAFETY: as above.
                ScalarValue::F64(b) => unsafe { fold_cols::<f64>(&c, &p, b, mask, j0, j1) },
                // SAFETY: as above.
                ScalarValue::C32(b) => unsafe { fold_cols::<c32>(&c, &p, b, mask, j0, j1) },
                // SAFETY: as above.
                ScalarValue::C64(b) => unsafe { fold_cols::<c64>(&c, &p, b, mask, j0, j1) },
            }
        })
    });
    Ok(())
}

/// Columns of C per fold task, for a tile of `cols` columns of `col_bytes` each folded on
/// `threads` threads: shared out evenly, each task 64 KiB to 1 MiB, one column at the least.
fn task_cols(cols: usize, col_bytes: usize, threads: usize) -> usize {
    let col_bytes = col_bytes.max(1);
    let per = cols.div_ceil(threads.max(1)).clamp(
        (MIN_TASK_BYTES / col_bytes).max(1),
        (MAX_TASK_BYTES / col_bytes).max(1),
    );
    per.clamp(1, cols.max(1))
}

/// Smallest fold task aimed at (an estimate: a task must outweigh handing it to a thread).
const MIN_TASK_BYTES: usize = 64 << 10;

/// Largest fold task aimed at.
const MAX_TASK_BYTES: usize = 1 << 20;

/// Columns `j0..j1` of the fold.
///
/// # Safety
/// As [`fold_into`], for those columns.
unsafe fn fold_cols<T>(c: &RawTile, p: &RawTile, beta: T, mask: TileMask, j0: usize, j1: usize)
where
    T: Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T>,
{
    for j in j0..j1 {
        // Only the mask's rows of the column: the others are outside the plan's region.
        let rows = mask.rows(j, c.rows);
        // SAFETY: column j of each tile lies within the memory the caller vouched for, and
        // `rows` within its rows.
        let (cc, pc) = unsafe {
            (
                std::slice::from_raw_parts_mut(
                    (c.addr as *mut T).add(j * c.ld + rows.start),
                    rows.len(),
                ),
                std::slice::from_raw_parts(
                    (p.addr as *const T).add(j * p.ld + rows.start),
                    rows.len(),
                ),
            )
        };
        // beta == 1 needs no branch of its own: 1 * x is x exactly, and the loop is
        // memory-bound.
        for (x, &y) in cc.iter_mut().zip(pc) {
            *x = beta * *x + y;
        }
    }
}

/// The tile pairs on which calibration measures the host fold speed (bytes of C per second),
/// made once for several measurements. Each fold takes the next of enough pairs (C and the
/// product) to span twice the last-level cache, as a pipeline's folds walk a C larger than the
/// cache (on H200 one tile folded from the cache ran 33.8 GB/s, a real C's 24.5).
pub struct FoldBench {
    side: usize,
    cs: Vec<Vec<f64>>,
    ps: Vec<Vec<f64>>,
    workers: rayon::ThreadPool,
    /// The next pair to fold: each measurement goes on where the last stopped, so that its
    /// folds find their pairs out of the cache as the first one did.
    next: usize,
}

impl FoldBench {
    /// Enough pairs of `side x side` f64 tiles to span twice the last-level cache.
    ///
    /// # Errors
    /// When the fold threads cannot be started.
    pub fn new(side: usize) -> Result<FoldBench> {
        let n = side * side;
        let pair_bytes = 2 * n * 8;
        let pairs = (2 * last_level_cache_bytes())
            .div_ceil(pair_bytes.max(1))
            .clamp(1, MAX_COLD_PAIRS);
        let workers = fold_workers()?;
        // Written one pair after the other, as the first folds will read them, so that the
        // first pairs have left the cache when they are folded; each on every fold thread.
        let fill = |v: &mut Vec<f64>, f: fn(usize) -> f64| {
            let chunk = n
                .div_ceil(workers.current_num_threads().max(1))
                .max(1 << 16);
            workers.scope(|s| {
                for (c, part) in v.chunks_mut(chunk).enumerate() {
                    s.spawn(move |_| {
                        for (j, x) in part.iter_mut().enumerate() {
                            *x = f(c * chunk + j);
                        }
                    });
                }
            });
        };
        let (mut cs, mut ps) = (Vec::with_capacity(pairs), Vec::with_capacity(pairs));
        for _ in 0..pairs {
            let (mut c, mut p) = (vec![0.0; n], vec![0.0; n]);
            fill(&mut c, |i| (i % 1009) as f64 * 0.5);
            fill(&mut p, |i| (i % 997) as f64 * 0.25);
            cs.push(c);
            ps.push(p);
        }
        Ok(FoldBench {
            side,
            cs,
            ps,
            workers,
            next: 0,
        })
    }

    /// Bytes of C folded per second: the median of `reps` folds after one warm-up, each on the
    /// next pair, `start` called before each fold and `finish` after it.
    ///
    /// # Errors
    /// Errors of `start`, `finish` and the fold.
    pub fn rate(
        &mut self,
        reps: usize,
        start: &mut dyn FnMut() -> Result<()>,
        finish: &mut dyn FnMut() -> Result<()>,
    ) -> Result<f64> {
        let side = self.side;
        let n = side * side;
        let pairs = self.cs.len();
        let tile = |v: &mut Vec<f64>| RawTile {
            space: crate::memory::MemorySpace::HOST,
            addr: v.as_mut_ptr() as u64,
            rows: side,
            cols: side,
            ld: side,
            dtype: DType::F64,
        };
        let beta = ScalarValue::F64(0.5);
        let mut times = Vec::with_capacity(reps);
        for r in 0..=reps.max(1) {
            let i = (self.next + r) % pairs;
            let (ct, pt) = (tile(&mut self.cs[i]), tile(&mut self.ps[i]));
            start()?;
            let t = std::time::Instant::now();
            // SAFETY: both vectors live as long as `self`, which nothing else touches while
            // this borrows it mutably.
            let folded = unsafe { fold_into(&ct, &pt, beta, TileMask::Whole, &self.workers) };
            let s = t.elapsed().as_secs_f64();
            finish()?;
            folded?;
            if r > 0 {
                times.push(s);
            }
        }
        self.next = (self.next + reps.max(1) + 1) % pairs;
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2].max(1e-9);
        Ok((n * 8) as f64 / med)
    }
}

/// At most this many tile pairs for a cold fold measurement (1 GiB of 2048^2 f64 pairs).
const MAX_COLD_PAIRS: usize = 16;

/// Bytes of the largest CPU cache (sysfs), 32 MiB where it cannot be read.
fn last_level_cache_bytes() -> usize {
    let read = |level: usize| -> Option<usize> {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{level}");
        let size = std::fs::read_to_string(format!("{dir}/size")).ok()?;
        let size = size.trim();
        let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit())?);
        let v: usize = digits.parse().ok()?;
        Some(match unit {
            "K" => v << 10,
            "M" => v << 20,
            "G" => v << 30,
            _ => v,
        })
    };
    (0..8).filter_map(read).max().unwrap_or(32 << 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::problem::Uplo;

    #[test]
    fn fold_bench_measures_on_pairs_it_did_not_just_fold() {
        let mut b = FoldBench::new(64).unwrap();
        let pairs = b.cs.len();
        let r = b.rate(2, &mut || Ok(()), &mut || Ok(())).unwrap();
        assert!(r.is_finite() && r > 0.0);
        // A warm-up and two folds: the next measurement starts at the fourth pair.
        assert_eq!(b.next, 3 % pairs);
        let mut calls = (0, 0);
        b.rate(
            3,
            &mut || {
                calls.0 += 1;
                Ok(())
            },
            &mut || {
                calls.1 += 1;
                Ok(())
            },
        )
        .unwrap();
        assert_eq!(calls, (4, 4));
        assert_eq!(b.next, (3 + 4) % pairs);
    }

    fn tile<T>(v: &mut [T], rows: usize, cols: usize, ld: usize, dtype: DType) -> RawTile {
        RawTile {
            space: MemorySpace::HOST,
            addr: v.as_mut_ptr() as u64,
            rows,
            cols,
            ld,
            dtype,
        }
    }

    #[test]
    fn small_tiles_are_shared_among_every_thread() {
        let tasks = |cols: usize, per: usize| cols.div_ceil(per);
        // A 768^2 f32 tile on 12 threads: 12 tasks of 64 columns, not 3 of 1 MiB.
        assert_eq!(task_cols(768, 768 * 4, 12), 64);
        // 512^2 f64: 12 tasks (43 columns each and 39 in the last), not a 13th of 8 columns.
        let per = task_cols(512, 512 * 8, 12);
        assert_eq!((per, tasks(512, per)), (43, 12));
        // Large tiles keep 1 MiB tasks (2048^2 f64: 64 columns of 16 KiB, 32 tasks).
        assert_eq!(task_cols(2048, 2048 * 8, 12), 64);
        // Tiny tiles are not cut below 64 KiB; a column over 1 MiB is a task of its own.
        assert_eq!(task_cols(100, 1024, 12), 64);
        assert_eq!(task_cols(8, 2 << 20, 12), 1);
        assert_eq!(task_cols(5, 1024, 12), 5);
        assert_eq!(task_cols(768, 768 * 4, 0), 341);
    }

    /// A triangle fold (a diagonal tile of a triangle region) writes only its triangle, the
    /// diagonal included; the other triangle keeps its bits.
    #[test]
    fn a_triangle_fold_leaves_the_other_triangle() {
        let (n, ld) = (29, 31);
        let c0: Vec<f64> = (0..ld * n).map(|x| (x as f64 * 0.29).sin()).collect();
        let mut p: Vec<f64> = (0..n * n).map(|x| (x as f64 * 0.13).cos()).collect();
        let workers = rayon::ThreadPoolBuilder::new()
            .num_threads(3)
            .build()
            .unwrap();
        for uplo in [Uplo::Lower, Uplo::Upper] {
            let mut c = c0.clone();
            let ct = tile(&mut c, n, n, ld, DType::F64);
            let pt = tile(&mut p, n, n, n, DType::F64);
            // SAFETY: both vectors outlive the call and are not shared.
            unsafe {
                fold_into(
                    &ct,
                    &pt,
                    ScalarValue::F64(-0.5),
                    TileMask::Triangle(uplo),
                    &workers,
                )
            }
            .unwrap();
            for j in 0..n {
                for i in 0..ld {
                    let inside = i < n && uplo.contains(i, j);
                    let want = if inside {
                        -0.5 * c0[j * ld + i] + p[j * n + i]
                    } else {
                        c0[j * ld + i]
                    };
                    assert_eq!(
                        c[j * ld + i].to_bits(),
                        want.to_bits(),
                        "{uplo:?} ({i},{j})"
                    );
                }
            }
        }
    }

    #[test]
    fn folds_with_leading_dimensions_and_threads() {
        let (rows, cols, ldc, ldp) = (37, 23, 41, 40);
        let c0: Vec<f64> = (0..ldc * cols).map(|x| (x as f64 * 0.37).sin()).collect();
        let mut p: Vec<f64> = (0..ldp * cols).map(|x| (x as f64 * 0.11).cos()).collect();
        for (beta, threads) in [(1.0, 1), (1.0, 5), (-0.75, 3), (2.5, 64)] {
            let workers = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let mut c = c0.clone();
            let ct = tile(&mut c, rows, cols, ldc, DType::F64);
            let pt = tile(&mut p, rows, cols, ldp, DType::F64);
            // SAFETY: both vectors outlive the call and are not shared.
            unsafe { fold_into(&ct, &pt, ScalarValue::F64(beta), TileMask::Whole, &workers) }
                .unwrap();
            for j in 0..cols {
                for i in 0..ldc {
                    let want = if i < rows {
                        beta * c0[j * ldc + i] + p[j * ldp + i]
                    } else {
                        c0[j * ldc + i] // padding untouched
                    };
                    assert_eq!(
                        c[j * ldc + i],
                        want,
                        "({i},{j}) beta {beta} threads {threads}"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_and_mismatches() {
        let mut c = vec![1.0f32; 6];
        let mut p = vec![2.0f32; 6];
        let ct = tile(&mut c, 2, 3, 2, DType::F32);
        let pt = tile(&mut p, 2, 3, 2, DType::F32);
        let w = fold_workers().unwrap();
        // SAFETY: valid, unshared vectors.
        unsafe { fold_into(&ct, &pt, ScalarValue::F32(0.5), TileMask::Whole, &w) }.unwrap();
        assert!(c.iter().all(|&x| x == 2.5));
        let bad = tile(&mut p, 3, 2, 3, DType::F32);
        // SAFETY: rejected before any access.
        let shape = unsafe { fold_into(&ct, &bad, ScalarValue::F32(1.0), TileMask::Whole, &w) };
        assert!(shape.is_err());
        // SAFETY: rejected before any access.
        let dtype = unsafe { fold_into(&ct, &pt, ScalarValue::F64(1.0), TileMask::Whole, &w) };
        assert!(dtype.is_err());
    }

    #[test]
    fn complex_fold_multiplies_as_complex_numbers() {
        let (rows, cols, ld) = (5, 4, 7);
        let c0: Vec<c64> = (0..ld * cols)
            .map(|x| c64::new((x as f64 * 0.3).sin(), (x as f64 * 0.7).cos()))
            .collect();
        let mut p: Vec<c64> = (0..ld * cols)
            .map(|x| c64::new((x as f64 * 0.2).cos(), -(x as f64 * 0.9).sin()))
            .collect();
        let beta = c64::new(0.5, -1.5);
        let mut c = c0.clone();
        let ct = tile(&mut c, rows, cols, ld, DType::C64);
        let pt = tile(&mut p, rows, cols, ld, DType::C64);
        let w = fold_workers().unwrap();
        // SAFETY: valid, unshared vectors.
        unsafe { fold_into(&ct, &pt, ScalarValue::C64(beta), TileMask::Whole, &w) }.unwrap();
        for j in 0..cols {
            for i in 0..ld {
                let x = j * ld + i;
                let want = if i < rows { beta * c0[x] + p[x] } else { c0[x] };
                assert_eq!(c[x], want, "({i},{j})");
            }
        }
        let mut c32s = vec![c32::new(1.0, 2.0); 4];
        let mut p32s = vec![c32::new(0.5, 0.0); 4];
        let ct = tile(&mut c32s, 2, 2, 2, DType::C32);
        let pt = tile(&mut p32s, 2, 2, 2, DType::C32);
        // SAFETY: valid, unshared vectors.
        unsafe {
            fold_into(
                &ct,
                &pt,
                ScalarValue::C32(c32::new(0.0, 1.0)),
                TileMask::Whole,
                &w,
            )
        }
        .unwrap();
        // i * (1 + 2i) + 0.5 = -1.5 + i
        assert!(c32s.iter().all(|&x| x == c32::new(-1.5, 1.0)));
        let beta = ScalarValue::C64(c64::new(1.0, 0.0));
        // SAFETY: rejected before any access (beta of another dtype).
        let r = unsafe { fold_into(&ct, &pt, beta, TileMask::Whole, &w) };
        assert!(r.is_err());
    }
}
