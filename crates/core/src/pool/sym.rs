//! The symmetric/Hermitian call path (SYRK/HERK, SYR2K/HER2K, SYMM/HEMM): checks, quick
//! returns, then the tiles of one GEMM plan (`sym_tiles`) when every device the call may use
//! has the routine's kernel. Otherwise (a host BLAS without it) a recursive split of C (of A for
//! SYMM/HEMM) into diagonal blocks, each one tile of the routine on the fastest device with
//! its kernel, and off-diagonal GEMMs run by the whole GEMM pipeline. The unreferenced
//! triangle of C is never computed: a diagonal block that crosses a link comes back with it as
//! it was, bit for bit.

use super::options::{GemmOptions, GemmReport};
use super::{op_sub, DevicePool};
use crate::error::{Error, Result};
use crate::matrix::{DeviceMatrix, MatIn, MatOut};
use crate::memory::{MemorySpace, RawTile};
use crate::operand::{MatMut, Trans};
use crate::problem::blas_flags::ArgCheck;
use crate::problem::GemmProblem;
use crate::scalar::{c64, Scalar};
use crate::sym::{Side, SymOp, SymProblem, Uplo};
use crate::sym_kernel::SymTile;
use std::time::Instant;

/// Diagonal block sizes the model chooses from.
const BLOCKS: [usize; 6] = [256, 512, 1024, 2048, 4096, 8192];

/// One call's fixed state.
struct Call<'o, T> {
    op: SymOp,
    alpha: T,
    /// The options of the off-diagonal GEMMs (and the devices of the diagonal tiles).
    opts: &'o GemmOptions,
    block: usize,
}

impl<T: Scalar> Call<'_, T> {
    /// The kernel's tile of this call for an `m x n` block of C, with inner size `k`.
    fn tile(
        &self,
        (m, n, k): (usize, usize, usize),
        a: RawTile,
        b: RawTile,
        beta: T,
        c: RawTile,
    ) -> SymTile {
        SymTile {
            op: self.op,
            m,
            n,
            k,
            alpha: self.alpha.to_value(),
            a,
            b,
            beta: beta.to_value(),
            c,
        }
    }
}

impl DevicePool {
    /// A symmetric/Hermitian routine (see [`SymOp`]) on host or device operands: `b` is B of
    /// SYR2K/HER2K and SYMM/HEMM (`None` for SYRK/HERK). Shapes come from the operands (a
    /// mismatch is the routine's parameter 3 or 4). HERK's alpha and beta, and HER2K's beta,
    /// are taken as real. As in reference BLAS, alpha = 0 or k = 0 only scales C by beta.
    #[allow(clippy::too_many_arguments)] // the routine's operands and scalars, as BLAS orders them
    pub fn sym_with<'a, T: Scalar>(
        &self,
        op: SymOp,
        alpha: T,
        a: impl Into<MatIn<'a, T>>,
        b: Option<MatIn<'a, T>>,
        beta: T,
        c: impl Into<MatOut<'a, T>>,
        opts: &GemmOptions,
    ) -> Result<GemmReport> {
        let started = Instant::now();
        let _thread = self.keep_thread_contexts();
        let op = checked_trans(op, T::DTYPE)?;
        let (a, mut c) = (a.into(), c.into());
        let problem = sym_shape(&op, &a, b.as_ref(), &c, T::DTYPE)?;
        let real = |x: T| T::from_c64(c64::new(x.to_c64().re, 0.0));
        // HERK's or HER2K's.
        let herm = matches!(op, SymOp::Rank { herm: true, .. });
        let two = matches!(op, SymOp::Rank { two: true, .. });
        let alpha = if herm && !two { real(alpha) } else { alpha };
        let beta = if herm { real(beta) } else { beta };
        let (ar, cr) = (a.raw(), c.raw());
        let br = b.as_ref().map_or(ar, MatIn::raw);
        self.check_locations(&[ar, br, cr])?;
        self.check_options(opts)?;
        let mut report = GemmReport::default();
        if problem.m == 0 || problem.n == 0 {
            report.seconds = started.elapsed().as_secs_f64();
            return Ok(report);
        }
        if problem.k == 0 || alpha == T::default() {
            // With beta = 1 the reference BLAS returns at once: C stays as it was, bit for bit
            // (a Hermitian diagonal keeps its imaginary part, which the scaling would drop).
            if beta != T::from_f64(1.0) {
                self.scale_referenced(&op, cr, beta)?;
            }
        } else {
            // Its tiles' decisions price host folds as GEMM's do.
            self.sync_fold_level();
            if self.sym_tiles_usable(T::DTYPE, opts) {
                self.run_sym_tiles(&problem, alpha, [ar, br, cr], beta, opts, &mut report)?;
            } else {
                let block = self.sym_block(&problem, opts);
                // `tile` is the diagonal block; the off-diagonal GEMMs keep their own tiling (a
                // `blocking` the caller forces still applies to them).
                let gemm_opts = GemmOptions {
                    tile: None,
                    ..opts.clone()
                };
                let call = Call {
                    op,
                    alpha,
                    opts: &gemm_opts,
                    block,
                };
                let r = &mut report;
                match op {
                    SymOp::Rank { .. } => self.rank_block(&call, ar, br, beta, cr, r)?,
                    SymOp::Multiply { .. } => self.multiply_block(&call, ar, br, beta, cr, r)?,
                }
                report.tile = Some((block, block, block));
            }
        }
        report.seconds = started.elapsed().as_secs_f64();
        Ok(report)
    }

    /// The tile for `p`: the caller's, else the tiled plan's square tile (see `sym_tiles`),
    /// else the recursive split's diagonal block: small next to n (each runs on one device),
    /// large enough for efficient off-diagonal GEMMs at the deepest level.
    pub fn sym_block(&self, p: &SymProblem, opts: &GemmOptions) -> usize {
        if let Some(t) = opts.tile {
            return t.max(1);
        }
        let _thread = self.keep_thread_contexts();
        if self.sym_tiles_usable(p.dtype, opts) {
            if let Ok((t, _, _)) = self.sym_tiles_choice(p, opts) {
                return t;
            }
        }
        let order = p.op.order(p.n, p.k);
        let rule = choose_block(order, self.devices.len());
        // With a calibrated profile: the candidate whose predicted time is least (GEMMs as the
        // GEMM model predicts them, diagonal tiles as GEMMs of their shape), the rule's block
        // winning ties.
        let mut best: Option<(f64, usize)> = None;
        for b in BLOCKS.into_iter().filter(|&b| b < order).chain([rule]) {
            let Some(t) = self.predict_sym_blocks(p, b) else {
                return rule;
            };
            if best.is_none_or(|(bt, _)| t < bt * 0.999) {
                best = Some((t, b));
            }
        }
        best.map_or(rule, |(_, b)| b)
    }

    /// The predicted seconds of `p` split with diagonal blocks of `block`: the sum of the
    /// GEMM model's times of every off-diagonal GEMM and every diagonal tile (taken as a GEMM
    /// of its shape). `None` without a profile.
    fn predict_sym_blocks(&self, p: &SymProblem, block: usize) -> Option<f64> {
        let memo = std::cell::RefCell::new(std::collections::HashMap::new());
        let gemm = |m: usize, n: usize, k: usize| -> Option<f64> {
            if let Some(&t) = memo.borrow().get(&(m, n, k)) {
                return Some(t);
            }
            let t = self
                .predict_gemm(&GemmProblem::host(m, n, k, p.dtype, false))?
                .seconds;
            memo.borrow_mut().insert((m, n, k), t);
            Some(t)
        };
        let order = p.op.order(p.n, p.k);
        let two = matches!(p.op, SymOp::Rank { two: true, .. });
        let per = if two { 2.0 } else { 1.0 };
        let mut total = 0.0;
        // The recursion of `rank_block` / `multiply_block`, on sizes only.
        let mut stack = vec![order];
        while let Some(n) = stack.pop() {
            if n <= block.max(1) {
                total += per
                    * match p.op {
                        SymOp::Rank { .. } => gemm(n, n, p.k)?,
                        SymOp::Multiply { side, .. } => match side {
                            Side::Left => gemm(n, p.n, n)?,
                            Side::Right => gemm(p.m, n, n)?,
                        },
                    };
                continue;
            }
            let n1 = split(n, block.max(1));
            let n2 = n - n1;
            total += match p.op {
                SymOp::Rank { .. } => per * gemm(n2, n1, p.k)?,
                SymOp::Multiply { side, .. } => match side {
                    Side::Left => gemm(n1, p.n, n2)? + gemm(n2, p.n, n1)?,
                    Side::Right => gemm(p.m, n1, n2)? + gemm(p.m, n2, n1)?,
                },
            };
            stack.extend([n1, n2]);
        }
        Some(total)
    }

    /// C (its referenced part) = beta * C: the quick return of `alpha == 0` or `k == 0` with
    /// `beta != 1` (a Hermitian rank update's diagonal becoming real).
    fn scale_referenced<T: Scalar>(&self, op: &SymOp, c: RawTile, beta: T) -> Result<()> {
        let apply = |c: RawTile| {
            let (ptr, ld) = (c.addr as *mut T, c.ld);
            for j in 0..c.cols {
                for i in 0..c.rows {
                    if op.triangular_c() && !op.uplo().contains(i, j) {
                        continue;
                    }
                    let p = ptr.wrapping_add(i + j * ld);
                    let v = if beta == T::default() {
                        T::default()
                    } else {
                        // SAFETY: (i, j) lies inside C, a valid writable matrix (a checked view
                        // or its host copy).
                        let mut old = unsafe { p.read() }.to_c64();
                        if op.herm() && op.triangular_c() && i == j {
                            old = c64::new(old.re, 0.0);
                        }
                        T::from_c64(beta.to_c64() * old)
                    };
                    // SAFETY: as above.
                    unsafe { p.write(v) };
                }
            }
        };
        self.on_host::<T>(c, true, apply)
    }

    /// `f` on tile `t` in host memory: on `t` itself when it is there, else on a host copy of
    /// it, copied back after `f` when `write_back`.
    fn on_host<T: Scalar>(
        &self,
        t: RawTile,
        write_back: bool,
        f: impl FnOnce(RawTile),
    ) -> Result<()> {
        if t.space.is_host() {
            f(t);
            return Ok(());
        }
        let mut copy = vec![T::default(); t.rows * t.cols];
        let host = RawTile {
            space: MemorySpace::HOST,
            addr: copy.as_mut_ptr() as u64,
            ld: t.rows.max(1),
            ..t
        };
        self.copy_blocking(t, host)?;
        f(host);
        if write_back {
            self.copy_blocking(host, t)?;
        }
        Ok(())
    }

    /// A rank update of the `n x n` block `c` with the panels `a`, `b` (op(.) `n x k`).
    fn rank_block<T: Scalar>(
        &self,
        call: &Call<'_, T>,
        a: RawTile,
        b: RawTile,
        beta: T,
        c: RawTile,
        report: &mut GemmReport,
    ) -> Result<()> {
        let SymOp::Rank {
            uplo, trans, two, ..
        } = call.op
        else {
            return Err(Error::internal("rank block of a multiply"));
        };
        let (n, k) = (c.rows, trans.stored_shape(a.rows, a.cols).1);
        let part = |t: RawTile, r0: usize, len: usize| op_sub(t, trans, r0, 0, len, k);
        if n <= call.block {
            let tile = call.tile((n, n, k), a, b, beta, c);
            return self.sym_tile::<T>(call, tile, report);
        }
        let n1 = split(n, call.block);
        let n2 = n - n1;
        let (a1, a2, b1, b2) = (
            part(a, 0, n1),
            part(a, n1, n2),
            part(b, 0, n1),
            part(b, n1, n2),
        );
        self.rank_block(call, a1, b1, beta, c.sub(0, 0, n1, n1), report)?;
        self.rank_block(call, a2, b2, beta, c.sub(n1, n1, n2, n2), report)?;
        // The off-diagonal block: rows X, columns Y of C.
        let (cx, ax, bx, ay, by) = match uplo {
            Uplo::Lower => (c.sub(n1, 0, n2, n1), a2, b2, a1, b1),
            Uplo::Upper => (c.sub(0, n1, n1, n2), a1, b1, a2, b2),
        };
        let (ta, tb) = call.op.gemm_trans(T::DTYPE);
        let second = if two { by } else { ay };
        self.gemm_block(call, ta, tb, call.alpha, ax, second, beta, cx, report)?;
        if two {
            let alpha2 = if call.op.herm() {
                call.alpha.conj()
            } else {
                call.alpha
            };
            self.gemm_block(call, ta, tb, alpha2, bx, ay, T::from_f64(1.0), cx, report)?;
        }
        Ok(())
    }

    /// SYMM/HEMM of the diagonal block `a` of the symmetric matrix with `b` into `c`.
    #[allow(clippy::too_many_arguments)] // one block's operands
    fn multiply_block<T: Scalar>(
        &self,
        call: &Call<'_, T>,
        a: RawTile,
        b: RawTile,
        beta: T,
        c: RawTile,
        report: &mut GemmReport,
    ) -> Result<()> {
        let SymOp::Multiply { side, uplo, .. } = call.op else {
            return Err(Error::internal("multiply block of a rank update"));
        };
        let (m, n) = (c.rows, c.cols);
        let ka = a.rows;
        if ka <= call.block {
            let tile = call.tile((m, n, ka), a, b, beta, c);
            return self.sym_tile::<T>(call, tile, report);
        }
        let n1 = split(ka, call.block);
        let n2 = ka - n1;
        let (a11, a22) = (a.sub(0, 0, n1, n1), a.sub(n1, n1, n2, n2));
        // The stored off-diagonal block, and the transpose that makes it the full matrix's
        // block below (lower) or right of (upper) the diagonal.
        let (off, below, right) = match uplo {
            Uplo::Lower => (a.sub(n1, 0, n2, n1), Trans::N, call.op.tconj()),
            Uplo::Upper => (a.sub(0, n1, n1, n2), call.op.tconj(), Trans::N),
        };
        let (below, right) = (below.for_dtype(T::DTYPE), right.for_dtype(T::DTYPE));
        let one = T::from_f64(1.0);
        match side {
            Side::Left => {
                let (b1, b2) = (b.sub(0, 0, n1, n), b.sub(n1, 0, n2, n));
                let (c1, c2) = (c.sub(0, 0, n1, n), c.sub(n1, 0, n2, n));
                self.multiply_block(call, a11, b1, beta, c1, report)?;
                self.gemm_block(call, right, Trans::N, call.alpha, off, b2, one, c1, report)?;
                self.multiply_block(call, a22, b2, beta, c2, report)?;
                self.gemm_block(call, below, Trans::N, call.alpha, off, b1, one, c2, report)?;
            }
            Side::Right => {
                let (b1, b2) = (b.sub(0, 0, m, n1), b.sub(0, n1, m, n2));
                let (c1, c2) = (c.sub(0, 0, m, n1), c.sub(0, n1, m, n2));
                self.multiply_block(call, a11, b1, beta, c1, report)?;
                self.gemm_block(call, Trans::N, below, call.alpha, b2, off, one, c1, report)?;
                self.multiply_block(call, a22, b2, beta, c2, report)?;
                self.gemm_block(call, Trans::N, right, call.alpha, b1, off, one, c2, report)?;
            }
        }
        Ok(())
    }

    /// One off-diagonal GEMM through the whole pipeline. Each puts its own region of C back
    /// when it fails (the earlier GEMMs' regions are final and correct).
    #[allow(clippy::too_many_arguments)] // GEMM's operands and scalars
    fn gemm_block<T: Scalar>(
        &self,
        call: &Call<'_, T>,
        ta: Trans,
        tb: Trans,
        alpha: T,
        a: RawTile,
        b: RawTile,
        beta: T,
        c: RawTile,
        report: &mut GemmReport,
    ) -> Result<()> {
        let sub = self.gemm_raw(ta, tb, alpha, a, b, beta, c, call.opts, false)?;
        merge(report, sub);
        Ok(())
    }

    /// One tile of the routine on the device chosen for it, its operands brought into that
    /// device's memory when they live elsewhere (C comes back whole, its unreferenced entries
    /// as they left).
    fn sym_tile<T: Scalar>(
        &self,
        call: &Call<'_, T>,
        tile: SymTile,
        report: &mut GemmReport,
    ) -> Result<()> {
        let allowed: Vec<usize> = self
            .working_devices(call.opts)
            .into_iter()
            .filter(|&i| self.devices[i].kernel().supports_sym(T::DTYPE))
            .collect();
        // Calibrated, else the device's own figure, else a guess by kind.
        let side = tile.m.max(tile.n).max(1);
        let rate = |i: usize| self.gemm_rate(i, T::DTYPE, side);
        // C's own device first (nothing to move), then the fastest, the host's memory winning
        // ties when C is in host memory.
        let chosen = allowed
            .iter()
            .copied()
            .find(|&i| !tile.c.space.is_host() && self.devices[i].space() == tile.c.space)
            .or_else(|| {
                allowed.iter().copied().max_by(|&x, &y| {
                    let home = |i: usize| self.devices[i].space() == tile.c.space;
                    rate(x)
                        .total_cmp(&rate(y))
                        .then(home(x).cmp(&home(y)))
                        .then(y.cmp(&x))
                })
            });
        let Some(chosen) = chosen else {
            return self.sym_tile_by_gemm::<T>(call, tile, report);
        };
        let dev = &self.devices[chosen];
        let space = dev.space();
        let mut staged: Vec<DeviceMatrix<T>> = Vec::new();
        let bring = |t: RawTile, staged: &mut Vec<DeviceMatrix<T>>| -> Result<RawTile> {
            if t.space == space || t.is_empty() {
                return Ok(t);
            }
            let m = self.alloc_matrix::<T>(chosen, t.rows, t.cols)?;
            self.copy_blocking(t, m.raw())?;
            let r = m.raw();
            staged.push(m);
            Ok(r)
        };
        let a = bring(tile.a, &mut staged)?;
        let b = if tile.uses_b() {
            bring(tile.b, &mut staged)?
        } else {
            a
        };
        let c = bring(tile.c, &mut staged)?;
        let queue = dev
            .compute_queues()
            .first()
            .ok_or_else(|| Error::internal(format!("{} has no compute queue", dev.info().label())))?
            .clone();
        dev.kernel().sym(&queue, &SymTile { a, b, c, ..tile })?;
        queue
            .synchronize()
            .map_err(|e| e.on_device(&dev.info().label()))?;
        if c.space != tile.c.space {
            self.copy_blocking(c, tile.c)?;
        }
        let label = dev.info().label();
        if !report.devices.contains(&label) {
            report.devices.push(label);
        }
        drop(staged);
        Ok(())
    }

    /// A tile no device has a kernel for: its product by the GEMM pipeline into a host
    /// temporary, combined into the referenced part of C on the host (a rank update), or (SYMM)
    /// the diagonal block of A expanded to a full host matrix and multiplied by GEMM.
    fn sym_tile_by_gemm<T: Scalar>(
        &self,
        call: &Call<'_, T>,
        tile: SymTile,
        report: &mut GemmReport,
    ) -> Result<()> {
        let dt = T::DTYPE;
        let beta = T::from_c64(tile.beta.as_c64());
        match tile.op {
            SymOp::Rank {
                uplo, two, herm, ..
            } => {
                let n = tile.n;
                let mut prod = vec![T::default(); n * n];
                let p = MatOut::Host(MatMut::packed(&mut prod, n, n)?).raw();
                let (ta, tb) = call.op.gemm_trans(dt);
                let alpha = call.alpha;
                let second = if two { tile.b } else { tile.a };
                let zero = T::default();
                self.gemm_block(call, ta, tb, alpha, tile.a, second, zero, p, report)?;
                if two {
                    let alpha2 = if herm { alpha.conj() } else { alpha };
                    let one = T::from_f64(1.0);
                    self.gemm_block(call, ta, tb, alpha2, tile.b, tile.a, one, p, report)?;
                }
                self.on_host::<T>(tile.c, true, |c| {
                    for j in 0..n {
                        for i in 0..n {
                            if !uplo.contains(i, j) {
                                continue;
                            }
                            let at = (c.addr as *mut T).wrapping_add(i + j * c.ld);
                            let mut v = prod[i + j * n].to_c64();
                            if beta != T::default() {
                                // SAFETY: (i, j) lies inside C's host copy (or C, a host view).
                                let mut old = unsafe { at.read() }.to_c64();
                                if herm && i == j {
                                    old = c64::new(old.re, 0.0);
                                }
                                v += beta.to_c64() * old;
                            }
                            if herm && i == j {
                                v = c64::new(v.re, 0.0);
                            }
                            // SAFETY: as above, writable.
                            unsafe { at.write(T::from_c64(v)) };
                        }
                    }
                })?;
            }
            SymOp::Multiply { side, uplo, herm } => {
                let k = tile.k;
                let mut full = vec![T::default(); k * k];
                self.on_host::<T>(tile.a, false, |a| {
                    for j in 0..k {
                        for i in 0..k {
                            let (si, sj) = if uplo.contains(i, j) { (i, j) } else { (j, i) };
                            // SAFETY: (si, sj) lies inside A's host copy (or A, a host view).
                            let x = unsafe { (a.addr as *const T).add(si + sj * a.ld).read() };
                            full[i + j * k] = if herm && i == j {
                                T::from_c64(c64::new(x.to_c64().re, 0.0))
                            } else if herm && (si, sj) != (i, j) {
                                x.conj()
                            } else {
                                x
                            };
                        }
                    }
                })?;
                let f = MatOut::Host(MatMut::packed(&mut full, k, k)?).raw();
                let (x, y) = match side {
                    Side::Left => (f, tile.b),
                    Side::Right => (tile.b, f),
                };
                let alpha = call.alpha;
                self.gemm_block(call, Trans::N, Trans::N, alpha, x, y, beta, tile.c, report)?;
            }
        }
        Ok(())
    }

    /// What `predict` says for a symmetric routine: the simulated makespan of the tiled
    /// plans the call would run; for the recursive split, the GEMM of the same flops on the
    /// same devices (the off-diagonal GEMMs are most of the work). `None` without a profile.
    pub fn predict_sym(&self, p: &SymProblem) -> Option<super::GemmPrediction> {
        let _thread = self.keep_thread_contexts();
        let opts = GemmOptions::default();
        if self.sym_tiles_usable(p.dtype, &opts) {
            // The simulated makespan of the plans the call would run.
            if let Ok((_, Some(seconds), devices)) = self.sym_tiles_choice(p, &opts) {
                return Some(super::GemmPrediction { devices, seconds });
            }
        }
        let (m, n, k) = match p.op {
            SymOp::Rank { two, .. } => {
                // n (n + 1) / 2 * k [* 2] multiply-adds as an n x n' x k GEMM.
                let cols = ((p.n as f64 + 1.0) / 2.0 * if two { 2.0 } else { 1.0 }).ceil() as usize;
                (p.n, cols.max(1), p.k)
            }
            SymOp::Multiply { .. } => (p.m, p.n, p.k),
        };
        self.predict_gemm(&GemmProblem::host(m, n, k, p.dtype, false))
    }
}

/// The model's diagonal block for a matrix of order `order` on `devices` devices: about an
/// eighth of the order per device count (the diagonal tiles stay a small share of the work,
/// 2 * block / order), a power of two within [`BLOCKS`], never above the order.
fn choose_block(order: usize, devices: usize) -> usize {
    let target = order / (8 * devices.max(1)).max(1);
    let best = BLOCKS.into_iter().rfind(|&b| b <= target.max(BLOCKS[0]));
    best.unwrap_or(BLOCKS[0]).min(order.max(1))
}

/// Where to split a matrix of order `n > block`: a multiple of `block` near the middle, so
/// every diagonal block but the last is `block` wide.
fn split(n: usize, block: usize) -> usize {
    let blocks = n.div_ceil(block);
    (blocks / 2).max(1) * block
}

/// Adds a sub-call's report to the call's.
pub(super) fn merge(report: &mut GemmReport, sub: GemmReport) {
    report.recovered.extend(sub.recovered);
    report.transfers.extend(sub.transfers);
    for d in sub.devices {
        if !report.devices.contains(&d) {
            report.devices.push(d);
        }
    }
    // What the part chose (a device left idle, folds priced low, a K split) is part of how
    // this call ran; said once, however many parts said it.
    for n in sub.notes {
        if !report.notes.contains(&n) {
            report.notes.push(n);
        }
    }
}

/// [`merge`] for a re-run of the C tiles that a failed device left unfinished: its notes
/// are marked as the re-run's ([`RERUN_NOTE`]).
pub(super) fn merge_rerun(report: &mut GemmReport, mut sub: GemmReport) {
    for n in &mut sub.notes {
        if !n.starts_with(RERUN_NOTE) {
            *n = format!("{RERUN_NOTE}{n}");
        }
    }
    merge(report, sub);
}

/// How a note of a re-run after a device fault begins ([`merge_rerun`]).
pub(super) const RERUN_NOTE: &str = "re-run after a device fault: ";

/// `op` with the transpose its dtype takes: `C` means `T` for the real routines; complex
/// SYRK/SYR2K take `N` or `T`, HERK/HER2K `N` or `C` (parameter 2 otherwise).
fn checked_trans(op: SymOp, dtype: crate::scalar::DType) -> Result<SymOp> {
    let SymOp::Rank {
        uplo,
        trans,
        two,
        herm,
    } = op
    else {
        return Ok(op);
    };
    if dtype.is_complex() && trans != Trans::N && (trans == Trans::C) != herm {
        let reason = format!("{trans:?} is not N or {}", if herm { 'C' } else { 'T' });
        return Err(ArgCheck(op.name()).err(2, "trans", reason));
    }
    Ok(SymOp::Rank {
        uplo,
        trans: trans.for_dtype(dtype),
        two,
        herm,
    })
}

/// The problem the operands describe, checked against each other.
fn sym_shape<T: Scalar>(
    op: &SymOp,
    a: &MatIn<'_, T>,
    b: Option<&MatIn<'_, T>>,
    c: &MatOut<'_, T>,
    dtype: crate::scalar::DType,
) -> Result<SymProblem> {
    let name = op.name();
    let check = ArgCheck(name);
    if !op.defined_for(dtype) {
        return Err(Error::InvalidInput(format!(
            "{name} is not defined for {dtype}"
        )));
    }
    let needs_b = !matches!(op, SymOp::Rank { two: false, .. });
    if needs_b && b.is_none() {
        return Err(Error::InvalidInput(format!("{name} needs B")));
    }
    let (m, n) = (c.rows(), c.cols());
    match *op {
        SymOp::Rank {
            uplo,
            trans,
            two,
            herm,
        } => {
            if m != n {
                return Err(check.err(3, "n", format!("C is {m}x{n}, not square")));
            }
            let (ar, ac) = (a.rows(), a.cols());
            let (nn, k) = trans.stored_shape(ar, ac);
            if nn != n {
                return Err(check.err(3, "n", format!("op(A) has {nn} rows, C has {n}")));
            }
            if let Some(b) = b.filter(|_| needs_b) {
                if (b.rows(), b.cols()) != (ar, ac) {
                    return Err(check.err(
                        4,
                        "k",
                        format!("B is {}x{}, A is {ar}x{ac}", b.rows(), b.cols()),
                    ));
                }
            }
            Ok(SymProblem::rank(uplo, trans, two, herm, n, k, dtype))
        }
        SymOp::Multiply { side, uplo, herm } => {
            let ka = if side == Side::Left { m } else { n };
            if (a.rows(), a.cols()) != (ka, ka) {
                let (p, w) = if side == Side::Left {
                    (3, "m")
                } else {
                    (4, "n")
                };
                return Err(check.err(
                    p,
                    w,
                    format!("A is {}x{}, expected {ka}x{ka}", a.rows(), a.cols()),
                ));
            }
            let b = b.ok_or_else(|| Error::InvalidInput(format!("{name} needs B")))?;
            if (b.rows(), b.cols()) != (m, n) {
                return Err(check.err(
                    3,
                    "m",
                    format!("B is {}x{}, C is {m}x{n}", b.rows(), b.cols()),
                ));
            }
            Ok(SymProblem::multiply(side, uplo, herm, m, n, dtype))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scalar::ScalarValue;

    #[test]
    fn a_parts_notes_are_kept_once_and_a_re_runs_marked() {
        let mut report = GemmReport {
            devices: vec!["emulated:0".into(), "emulated:1".into()],
            notes: vec!["cpu:0: no tiles, predicted to slow the call".into()],
            ..GemmReport::default()
        };
        let sub = || GemmReport {
            devices: vec!["emulated:0".into()],
            notes: vec![
                "cpu:0: no tiles, predicted to slow the call".into(),
                format!("{RERUN_NOTE}host folds priced at 5.4 GB/s"),
            ],
            ..GemmReport::default()
        };
        // Two blocks re-ran, each with the same notes (the second a nested re-run's).
        merge_rerun(&mut report, sub());
        merge_rerun(&mut report, sub());
        assert_eq!(
            report.notes,
            [
                "cpu:0: no tiles, predicted to slow the call".to_string(),
                format!("{RERUN_NOTE}cpu:0: no tiles, predicted to slow the call"),
                format!("{RERUN_NOTE}host folds priced at 5.4 GB/s"),
            ]
        );
        assert_eq!(report.devices, ["emulated:0", "emulated:1"]);
        // The parts of a call that had no fault keep their notes as they are.
        let mut report = GemmReport::default();
        merge(&mut report, sub());
        merge(&mut report, sub());
        assert_eq!(report.notes, sub().notes);
    }

    #[test]
    fn blocks_are_sane() {
        // Small matrices are one diagonal block; large ones split into a few levels.
        assert_eq!(choose_block(100, 1), 100);
        assert_eq!(choose_block(32768, 1), 4096);
        assert_eq!(choose_block(32768, 2), 2048);
        assert_eq!(choose_block(1 << 20, 1), 8192);
        for n in [1, 7, 300, 5000, 20000, 65536] {
            let b = choose_block(n, 3);
            assert!(b >= 1 && b <= n && (b <= 8192), "{n}: {b}");
            assert!(
                n < 2048 || b * 4 <= n,
                "{n}: {b} leaves too much work on the diagonal"
            );
        }
    }

    #[test]
    fn splits_keep_whole_blocks() {
        assert_eq!(split(10, 4), 4);
        assert_eq!(split(17, 4), 8);
        assert_eq!(split(5, 4), 4);
        for n in 2..60 {
            for b in 1..n {
                let s = split(n, b);
                assert!(s > 0 && s < n && s.is_multiple_of(b), "{n} {b} {s}");
            }
        }
    }

    #[test]
    fn scalars_of_hermitian_routines() {
        // ScalarValue of a real-valued complex scalar keeps it real.
        let v = ScalarValue::of_c64(crate::scalar::DType::C64, c64::new(2.0, 0.0));
        assert_eq!(v.as_c64().im, 0.0);
    }
}
