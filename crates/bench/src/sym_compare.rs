//! The symmetric half of the comparison harness: one SYRK/HERK/SYR2K/HER2K/SYMM/HEMM problem
//! run by hetblas (host operands, the model's block, and optionally a sweep of blocks), by
//! cuBLASXt's routine of the same name (best block size), and by the device-resident cuBLAS
//! routine on the first GPU (the ceiling), on the same random data; every result checked
//! against the f64 reference at sampled entries, the untouched triangle bit for bit.

use crate::cublasxt::CublasXt;
use crate::{median, par_copy, random_data};
use hetblas::{GemmOptions, MatIn, MatMut, MatRef, Runtime, Scalar};
use hetblas_core::sym::{SymOp, SymProblem};
use hetblas_core::sym_reference::check_sym_sampled;
use hetblas_core::{HostAccess, Queue, SymTile};
use std::sync::Arc;
use std::time::Instant;

/// One variant's result.
pub struct SymRun {
    pub variant: String,
    pub seconds: f64,
    pub detail: String,
}

/// What to run.
pub struct SymCompare<'a> {
    pub gpus: &'a [usize],
    pub variants: &'a [String],
    pub reps: usize,
    pub xt_blocks: &'a [i32],
    /// hetblas's diagonal block: forced, or the model's.
    pub tile: Option<usize>,
    /// Blocks to sweep (rows `hetblas-T<block>`), next to the model's.
    pub tiles: &'a [usize],
    pub alpha: f64,
    pub beta: f64,
}

fn stored_shapes(p: &SymProblem) -> ((usize, usize), (usize, usize)) {
    match p.op {
        SymOp::Rank { trans, .. } => {
            let s = trans.stored_shape(p.n, p.k);
            (s, s)
        }
        SymOp::Multiply { .. } => ((p.k, p.k), (p.m, p.n)),
    }
}

/// Runs the variants of `cmp` on problem `p` in T's dtype.
pub fn compare_sym<T: Scalar>(
    rt: &Runtime,
    p: &SymProblem,
    cmp: &SymCompare<'_>,
    xt: Option<&CublasXt>,
) -> Result<Vec<SymRun>, String> {
    let ((ar, ac), (br, bc)) = stored_shapes(p);
    let uses_b = !matches!(p.op, SymOp::Rank { two: false, .. });
    let a = random_data::<T>(1, ar * ac);
    let b = random_data::<T>(2, if uses_b { br * bc } else { 0 });
    let c0 = random_data::<T>(3, p.m * p.n);
    let mut c = random_data::<T>(3, p.m * p.n);
    for &g in cmp.gpus {
        for (ptr, bytes) in [
            (a.as_ptr() as u64, std::mem::size_of_val(&a[..])),
            (b.as_ptr() as u64, std::mem::size_of_val(&b[..])),
            (c.as_ptr() as u64, std::mem::size_of_val(&c[..])),
        ] {
            if bytes > 0 {
                rt.devices()[g]
                    .prepare_host(ptr, bytes, HostAccess::Read)
                    .map_err(|e| e.to_string())?;
            }
        }
    }
    let e = |r: hetblas::Result<()>| r.map_err(|e| e.to_string());
    let (alpha, beta) = (T::from_f64(cmp.alpha), T::from_f64(cmp.beta));
    let av = MatRef::new(&a, ar, ac, ar.max(1)).map_err(|e| e.to_string())?;
    let bv = if uses_b {
        Some(MatRef::new(&b, br, bc, br.max(1)).map_err(|e| e.to_string())?)
    } else {
        None
    };
    let check = |what: &str, c: &[T]| -> Result<String, String> {
        let got = MatRef::new(c, p.m, p.n, p.m.max(1)).map_err(|e| e.to_string())?;
        let c0v = MatRef::new(&c0, p.m, p.n, p.m.max(1)).map_err(|e| e.to_string())?;
        let worst = check_sym_sampled(p, alpha.to_c64(), av, bv, beta.to_c64(), c0v, got, 256, 7)
            .map_err(|e| format!("{what}: result check FAILED: {e}"))?;
        Ok(format!("checked (worst {worst:.2} of bound)"))
    };
    let want = |v: &str| cmp.variants.iter().any(|x| x == v);
    let mut out = Vec::new();

    if want("hetblas") {
        let opts = GemmOptions::default().devices(cmp.gpus.iter().copied());
        let model = rt.sym_block(p, &opts.clone().tile(cmp.tile));
        let mut blocks: Vec<(String, usize)> = cmp
            .tiles
            .iter()
            .map(|&t| (format!("hetblas-T{t}"), t))
            .collect();
        blocks.push(("hetblas".into(), model));
        for (variant, block) in blocks {
            let opts = opts.clone().tile(block);
            let mut times = Vec::new();
            for rep in 0..=cmp.reps {
                par_copy(&mut c, &c0);
                let cm = MatMut::new(&mut c, p.m, p.n, p.m.max(1)).map_err(|e| e.to_string())?;
                let t = Instant::now();
                rt.sym_with(p.op, alpha, av, bv.map(MatIn::Host), beta, cm, &opts)
                    .map_err(|e| format!("hetblas: {e}"))?;
                if rep > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            let ok = check(&variant, &c)?;
            out.push(SymRun {
                variant,
                seconds: median(&mut times),
                detail: format!("block {block}; {ok}"),
            });
        }
    }

    if let (true, Some(xt)) = (want("cublasxt"), xt) {
        let mut per_block = Vec::new();
        for &blk in cmp.xt_blocks {
            xt.set_block_dim(blk)?;
            let mut times = Vec::new();
            for rep in 0..=cmp.reps.min(2) {
                par_copy(&mut c, &c0);
                let t = Instant::now();
                // SAFETY: packed host matrices of the problem's shapes, alive for the call.
                unsafe {
                    xt.sym(
                        &p.op,
                        (p.m, p.n, p.k),
                        alpha,
                        a.as_ptr(),
                        ar.max(1),
                        if uses_b { b.as_ptr() } else { a.as_ptr() },
                        br.max(1),
                        beta,
                        c.as_mut_ptr(),
                        p.m.max(1),
                    )
                }?;
                if rep > 0 {
                    times.push(t.elapsed().as_secs_f64());
                }
            }
            let ok = check("cublasxt", &c)?;
            per_block.push((blk, median(&mut times), ok));
        }
        let best = per_block
            .iter()
            .min_by(|x, y| x.1.total_cmp(&y.1))
            .ok_or("no cuBLASXt block size")?;
        let all: Vec<String> = per_block
            .iter()
            .map(|(b, s, _)| format!("{b}:{s:.3}s"))
            .collect();
        out.push(SymRun {
            variant: "cublasxt".into(),
            seconds: best.1,
            detail: format!("block {} of [{}]; {}", best.0, all.join(" "), best.2),
        });
    }

    if want("ceiling") {
        let g = *cmp.gpus.first().ok_or("no GPU")?;
        let dev = rt.devices()[g].clone();
        let da = rt.upload(g, av).map_err(|e| e.to_string())?;
        let db = match bv {
            Some(bv) => Some(rt.upload(g, bv).map_err(|e| e.to_string())?),
            None => None,
        };
        let c0v = MatRef::new(&c0, p.m, p.n, p.m.max(1)).map_err(|e| e.to_string())?;
        let dc = rt.upload(g, c0v).map_err(|e| e.to_string())?;
        let q: Arc<dyn Queue> = dev.compute_queues()[0].clone();
        let tile = SymTile {
            op: p.op,
            m: p.m,
            n: p.n,
            k: p.k,
            alpha: alpha.to_value(),
            a: da.raw(),
            b: db.as_ref().map_or(da.raw(), |d| d.raw()),
            beta: beta.to_value(),
            c: dc.raw(),
        };
        let mut times = Vec::new();
        for rep in 0..=cmp.reps {
            // The same C each time (beta != 0 reads it), uploaded outside the timing.
            e(rt.devices()[g]
                .compute_queues()
                .first()
                .map_or(Ok(()), |q| q.synchronize()))?;
            let h2d = rt
                .link(hetblas_core::MemorySpace::HOST, dev.space())
                .ok_or("no h2d link")?;
            e(h2d.copy(&MatIn::Host(c0v).raw(), &dc.raw()))?;
            e(h2d.queue().synchronize())?;
            let t = Instant::now();
            e(dev.kernel().sym(&q, &tile))?;
            e(q.synchronize())?;
            if rep > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        rt.download(
            &dc,
            MatMut::new(&mut c, p.m, p.n, p.m.max(1)).map_err(|e| e.to_string())?,
        )
        .map_err(|e| e.to_string())?;
        let ok = check("ceiling", &c)?;
        out.push(SymRun {
            variant: "ceiling".into(),
            seconds: median(&mut times),
            detail: format!("device-resident cuBLAS on GPU {g}; {ok}"),
        });
    }
    Ok(out)
}
