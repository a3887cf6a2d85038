//! The comparison harness: hetblas next to its baselines in one process, on the same pinned host
//! data, with every result checked against an f64 reference at sampled entries.
//!
//! Variants per problem:
//! - `hetblas`: host operands, tile and devices chosen by hetblas (GPUs only);
//! - `naive`:   copy A, B, C to GPU0, one cuBLAS GEMM, copy C back (no overlap);
//! - `cublasxt`: cuBLASXt on the same GPUs, best of the block sizes;
//! - `ceiling`: cuBLAS on device-resident operands (GPU0), the single-GPU compute bound,
//!   timed on the same random A, B, C (uploaded first) and checked like the others.
//!
//! Prints a table (TFLOP/s, hetblas/cuBLASXt, hetblas/ceiling) and writes CSV.

use clap::Parser;
use hetblas::{DType, GemmOptions, MatMut, MatRef, Runtime, Scalar, Trans};
use hetblas_bench::cublasxt::CublasXt;
use hetblas_bench::link_contention::{h2d_beside, Beside};
use hetblas_bench::{median, par_copy, random_data};
use hetblas_core::reference::check_sampled;
use hetblas_core::scalar::{c32, c64};
use hetblas_core::{GemmTile, Queue};
use hetblas_cuda::CudaDevice;
use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

#[derive(Parser, Debug)]
struct Args {
    /// Square sizes.
    #[arg(long, value_delimiter = ',')]
    sizes: Vec<usize>,
    /// Extra shapes MxNxK.
    #[arg(long, value_delimiter = ',')]
    shapes: Vec<String>,
    /// f64, f32, c64 (ZGEMM against cublasXtZgemm), c32, both (f64 and f32) or all.
    #[arg(long, default_value = "f64")]
    dtype: String,
    /// Number of GPUs for hetblas and cuBLASXt.
    #[arg(long, default_value_t = 1)]
    gpus: usize,
    #[arg(long, default_value_t = 3)]
    reps: usize,
    #[arg(long, value_delimiter = ',', default_value = "2048,4096,8192")]
    xt_blocks: Vec<i32>,
    #[arg(long, default_value_t = 1.0)]
    beta: f64,
    /// Variants to run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "hetblas,cublasxt,naive,ceiling"
    )]
    variants: Vec<String>,
    /// Force hetblas's tile size.
    #[arg(long)]
    tile: Option<usize>,
    /// Force hetblas's tile sizes and group, e.g. `4096x512x4096/g1`.
    #[arg(long)]
    blocking: Option<hetblas_core::Blocking>,
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Record a hetblas timeline at this size (`--dtype`, f64 unless f32) and write it here
    /// (Chrome JSON).
    #[arg(long)]
    trace_n: Option<usize>,
    /// Record a hetblas timeline of this MxNxK problem instead.
    #[arg(long)]
    trace_shape: Option<String>,
    #[arg(long)]
    trace_out: Option<std::path::PathBuf>,
    /// Show the registration cache: two hetblas calls on fresh buffers of this size.
    #[arg(long)]
    pin_demo: Option<usize>,
    /// Operand placement for A, B, C: h (host) or a GPU number, e.g. "00h" or "1h0". Runs
    /// hetblas and cuBLASXt (which takes device pointers) on the same placement.
    #[arg(long)]
    placement: Option<String>,
    /// Report the host and peer traffic of each GPU, with and without peer forwarding.
    #[arg(long)]
    traffic: bool,
    /// The routine: gemm; trsm / trmm (side L, lower, N, non-unit; --sizes are m = n); or syrk,
    /// herk, syr2k, her2k, symm, hemm (square sizes are n = k for rank updates, m = n for SYMM;
    /// shapes MxNxK give C m x n and inner k). Each against cuBLASXt's routine of the same name
    /// and the device-resident cuBLAS one.
    #[arg(long, default_value = "gemm")]
    routine: String,
    /// Symmetric routines: the referenced triangle (U or L).
    #[arg(long, default_value = "L")]
    uplo: hetblas::Uplo,
    /// Rank updates: N, or T (SYRK/SYR2K) / C (HERK/HER2K).
    #[arg(long, default_value = "N")]
    trans: Trans,
    /// SYMM/HEMM: L or R.
    #[arg(long, default_value = "L")]
    side: hetblas::Side,
    /// Symmetric routines: hetblas diagonal blocks to sweep next to the model's choice.
    #[arg(long, value_delimiter = ',')]
    tiles: Vec<usize>,
}

struct Row {
    shape: (usize, usize, usize),
    dtype: DType,
    variant: String,
    tflops: f64,
    seconds: f64,
    detail: String,
}

/// `T` for square tiles, `TMxTNxTK` otherwise, `-` for none.
fn tile_label(t: Option<(usize, usize, usize)>) -> String {
    match t {
        Some((a, b, c)) if a == b && b == c => a.to_string(),
        Some((a, b, c)) => format!("{a}x{b}x{c}"),
        None => "-".into(),
    }
}

/// Real TFLOP/s: 8 flops per complex multiply-add, 2 per real one.
fn tflops(dtype: DType, m: usize, n: usize, k: usize, s: f64) -> f64 {
    dtype.gemm_flops(m, n, k) / s / 1e12
}

fn main() {
    let args = Args::parse();
    if let Err(e) = run(args) {
        eprintln!("compare: {e}");
        std::process::exit(1);
    }
}

fn run(args: Args) -> Result<(), String> {
    // The CPU is in the runtime as it is by default, and left out of every call (the devices
    // are the GPUs asked for): it only finishes a call whose GPUs all failed, which is also
    // why such calls keep no undo log of C (`GemmOptions::preserve_c`).
    let rt = Runtime::builder()
        .only(&["cuda", "cpu"])
        .build()
        .map_err(|e| e.to_string())?;
    let gpus: Vec<usize> = rt
        .devices()
        .iter()
        .enumerate()
        .filter(|(_, d)| d.info().backend == "cuda")
        .map(|(i, _)| i)
        .take(args.gpus)
        .collect();
    if gpus.len() < args.gpus {
        return Err(format!("{} GPUs asked, {} found", args.gpus, gpus.len()));
    }
    for &g in &gpus {
        let i = rt.devices()[g].info();
        println!(
            "GPU {}: {} ({:.0} GiB) {}",
            g,
            i.name,
            i.memory_bytes as f64 / 1073741824.0,
            i.detail
        );
    }
    let mut shapes: Vec<(usize, usize, usize)> = args.sizes.iter().map(|&s| (s, s, s)).collect();
    for s in &args.shapes {
        shapes.push(parse_shape(s)?);
    }
    // Largest first: hetblas's workspace is sized once, never regrown under cuBLASXt (a
    // regrown workspace has been followed by CUBLAS_STATUS_INTERNAL_ERROR in cuBLASXt).
    shapes.sort_by_key(|&(m, n, k)| std::cmp::Reverse(m * n * k));
    let dtypes = match args.dtype.as_str() {
        "both" => vec![DType::F64, DType::F32],
        "all" => vec![DType::F64, DType::F32, DType::C64, DType::C32],
        d => vec![d.parse::<DType>()?],
    };
    let mut rows = Vec::new();
    // One cuBLASXt handle for the whole run (creating a second one in a process has failed with
    // CUBLAS_STATUS_INTERNAL_ERROR on CUDA 13).
    let xt = if args.variants.iter().any(|v| v == "cublasxt") {
        let ids: Vec<i32> = gpus
            .iter()
            .map(|&g| CudaDevice::of(rt.devices()[g].as_ref()).map_or(0, |d| d.context().ordinal))
            .collect();
        Some(CublasXt::new(&ids)?)
    } else {
        None
    };
    if args.routine == "trsm" || args.routine == "trmm" {
        return triangular(&rt, &gpus, &args, xt.as_ref(), &dtypes);
    }
    if let Some(pl) = &args.placement {
        for &shape in &shapes {
            placement_problem(&rt, &gpus, shape, pl, &args, xt.as_ref(), &mut rows)?;
        }
    }
    if args.routine != "gemm" {
        for &dt in &dtypes {
            for &shape in &shapes {
                sym_rows(&rt, &gpus, dt, shape, &args, xt.as_ref(), &mut rows)?;
            }
        }
    }
    for &dt in &dtypes {
        if args.placement.is_some() || args.routine != "gemm" {
            break;
        }
        for &shape in &shapes {
            match dt {
                DType::F64 => problem::<f64>(&rt, &gpus, shape, &args, xt.as_ref(), &mut rows)?,
                DType::F32 => problem::<f32>(&rt, &gpus, shape, &args, xt.as_ref(), &mut rows)?,
                DType::C64 => problem::<c64>(&rt, &gpus, shape, &args, xt.as_ref(), &mut rows)?,
                DType::C32 => problem::<c32>(&rt, &gpus, shape, &args, xt.as_ref(), &mut rows)?,
            }
            if let Some(d) = gpus
                .first()
                .and_then(|&g| CudaDevice::of(rt.devices()[g].as_ref()))
            {
                println!("  registration cache: {:?}", d.pin_cache().stats());
            }
        }
    }
    drop(xt);
    let trace_shape = match (&args.trace_shape, args.trace_n) {
        (Some(s), _) => Some(parse_shape(s)?),
        (None, Some(n)) => Some((n, n, n)),
        (None, None) => None,
    };
    if let Some(shape) = trace_shape {
        match args.dtype.as_str() {
            "f32" => trace_run::<f32>(&rt, &gpus, shape, &args)?,
            "c64" | "z" => trace_run::<c64>(&rt, &gpus, shape, &args)?,
            "c32" | "c" => trace_run::<c32>(&rt, &gpus, shape, &args)?,
            _ => trace_run::<f64>(&rt, &gpus, shape, &args)?,
        }
    }
    if let Some(n) = args.pin_demo {
        pin_demo(&rt, &gpus, n)?;
    }
    println!();
    println!("| shape | dtype | GPUs | variant | TFLOP/s | vs cuBLASXt | vs ceiling | detail |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for r in &rows {
        let find = |v: &str| {
            rows.iter()
                .find(|x| x.shape == r.shape && x.dtype == r.dtype && x.variant == v)
                .map(|x| x.tflops)
        };
        let ratio = |o: Option<f64>| o.map_or("-".into(), |o| format!("{:.2}x", r.tflops / o));
        println!(
            "| {}x{}x{} | {} | {} | {} | {:.2} | {} | {} | {} |",
            r.shape.0,
            r.shape.1,
            r.shape.2,
            r.dtype,
            gpus.len(),
            r.variant,
            r.tflops,
            ratio(find("cublasxt")),
            ratio(find("ceiling")),
            r.detail
        );
    }
    if let Some(d) = gpus
        .first()
        .and_then(|&g| CudaDevice::of(rt.devices()[g].as_ref()))
    {
        println!("\nregistration cache: {:?}", d.pin_cache().stats());
    }
    if let Some(path) = &args.csv {
        let mut f = std::fs::File::create(path).map_err(|e| e.to_string())?;
        writeln!(f, "m,n,k,dtype,gpus,variant,tflops,seconds,detail").map_err(|e| e.to_string())?;
        for r in &rows {
            writeln!(
                f,
                "{},{},{},{},{},{},{:.4},{:.6},\"{}\"",
                r.shape.0,
                r.shape.1,
                r.shape.2,
                r.dtype,
                gpus.len(),
                r.variant,
                r.tflops,
                r.seconds,
                r.detail
            )
            .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// `--routine trsm|trmm`: every size and dtype, then the table.
fn triangular(
    rt: &Runtime,
    gpus: &[usize],
    args: &Args,
    xt: Option<&CublasXt>,
    dtypes: &[DType],
) -> Result<(), String> {
    use hetblas::TriRoutine;
    use hetblas_bench::tri::{compare_tri, TriBench};
    let routine = if args.routine == "trsm" {
        TriRoutine::Trsm
    } else {
        TriRoutine::Trmm
    };
    let mut table = Vec::new();
    for &dt in dtypes {
        for &n in &args.sizes {
            let b = TriBench {
                routine,
                n,
                reps: args.reps,
                gpus,
                xt,
                xt_blocks: &args.xt_blocks,
                tile: args.tile,
                variants: &args.variants,
            };
            let rows = match dt {
                DType::F64 => compare_tri::<f64>(rt, &b)?,
                DType::F32 => compare_tri::<f32>(rt, &b)?,
                DType::C64 => compare_tri::<c64>(rt, &b)?,
                DType::C32 => compare_tri::<c32>(rt, &b)?,
            };
            table.push((n, dt, rows));
        }
    }
    println!();
    println!(
        "| routine | n | dtype | GPUs | variant | TFLOP/s | vs cuBLASXt | vs ceiling | detail |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for (n, dt, rows) in &table {
        let find = |v: &str| rows.iter().find(|r| r.variant == v).map(|r| r.tflops);
        for r in rows {
            let ratio = |o: Option<f64>| o.map_or("-".into(), |o| format!("{:.2}x", r.tflops / o));
            println!(
                "| {} | {n} | {dt} | {} | {} | {:.2} | {} | {} | {} |",
                args.routine,
                gpus.len(),
                r.variant,
                r.tflops,
                ratio(find("cublasxt")),
                ratio(find("ceiling")),
                r.detail
            );
        }
    }
    if let Some(path) = &args.csv {
        let mut f = std::fs::File::create(path).map_err(|e| e.to_string())?;
        writeln!(f, "routine,n,dtype,gpus,variant,tflops,seconds,detail")
            .map_err(|e| e.to_string())?;
        for (n, dt, rows) in &table {
            for r in rows {
                writeln!(
                    f,
                    "{},{n},{dt},{},{},{:.4},{:.6},\"{}\"",
                    args.routine,
                    gpus.len(),
                    r.variant,
                    r.tflops,
                    r.seconds,
                    r.detail
                )
                .map_err(|e| e.to_string())?;
            }
        }
    }
    Ok(())
}

/// One symmetric problem (`--routine`): every variant's row.
fn sym_rows(
    rt: &Runtime,
    gpus: &[usize],
    dt: DType,
    (m, n, k): (usize, usize, usize),
    args: &Args,
    xt: Option<&CublasXt>,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    use hetblas::SymProblem;
    let herm = args.routine.starts_with("he");
    let rank = |two| SymProblem::rank(args.uplo, args.trans, two, herm, n, k, dt);
    let p = match args.routine.as_str() {
        "syrk" | "herk" => rank(false),
        "syr2k" | "her2k" => rank(true),
        "symm" | "hemm" => SymProblem::multiply(args.side, args.uplo, herm, m, n, dt),
        r => return Err(format!("unknown routine {r:?}")),
    };
    if !p.op.defined_for(dt) {
        return Err(format!("{} needs a complex --dtype", p.op.name()));
    }
    println!(
        "\n== {}{} m={} n={} k={} {:?}, {} GPU(s)",
        dt.blas_prefix(),
        p.op.name().to_ascii_lowercase(),
        p.m,
        p.n,
        p.k,
        p.op,
        gpus.len()
    );
    let cmp = hetblas_bench::sym_compare::SymCompare {
        gpus,
        variants: &args.variants,
        reps: args.reps,
        xt_blocks: &args.xt_blocks,
        tile: args.tile,
        tiles: &args.tiles,
        alpha: 1.0,
        beta: args.beta,
    };
    use hetblas_bench::sym_compare::compare_sym;
    let runs = match dt {
        DType::F64 => compare_sym::<f64>(rt, &p, &cmp, xt)?,
        DType::F32 => compare_sym::<f32>(rt, &p, &cmp, xt)?,
        DType::C64 => compare_sym::<c64>(rt, &p, &cmp, xt)?,
        DType::C32 => compare_sym::<c32>(rt, &p, &cmp, xt)?,
    };
    for r in runs {
        let tf = p.flops() / r.seconds / 1e12;
        println!(
            "  {:<12} {tf:8.2} TFLOP/s  ({:.4} s) {}",
            r.variant, r.seconds, r.detail
        );
        rows.push(Row {
            shape: (p.m, p.n, p.k),
            dtype: dt,
            variant: r.variant,
            tflops: tf,
            seconds: r.seconds,
            detail: format!("{} {}", p.op.name(), r.detail),
        });
    }
    Ok(())
}

fn prepare_host<T>(rt: &Runtime, gpus: &[usize], bufs: &[&[T]]) -> Result<(), String> {
    for &g in gpus {
        for b in bufs {
            rt.devices()[g]
                .prepare_host(
                    b.as_ptr() as u64,
                    std::mem::size_of_val(*b),
                    hetblas_core::HostAccess::Read,
                )
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
fn check<T: Scalar>(
    what: &str,
    (m, n, k): (usize, usize, usize),
    alpha: f64,
    a: &[T],
    b: &[T],
    beta: f64,
    c0: &[T],
    c: &[T],
) -> Result<String, String> {
    let v = |x, r, cc| MatRef::packed(x, r, cc).map_err(|e| e.to_string());
    let (checked, worst) = check_sampled(
        Trans::N,
        Trans::N,
        alpha,
        v(a, m, k)?,
        v(b, k, n)?,
        beta,
        v(c0, m, n)?,
        v(c, m, n)?,
        256,
        7,
    )
    .map_err(|e| format!("{what}: result check FAILED: {e}"))?;
    Ok(format!("checked {checked} (worst {worst:.2} of bound)"))
}

fn problem<T: Scalar>(
    rt: &Runtime,
    gpus: &[usize],
    (m, n, k): (usize, usize, usize),
    args: &Args,
    xt: Option<&CublasXt>,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let t0 = Instant::now();
    let a = random_data::<T>(1, m * k);
    let b = random_data::<T>(2, k * n);
    let c0 = random_data::<T>(3, m * n);
    // The same values as C0, allocated like the operands (a clone would not get the page advice).
    let mut c = random_data::<T>(3, m * n);
    prepare_host(rt, gpus, &[&a, &b, &c])?;
    println!(
        "\n== {}gemm {m}x{n}x{k}, {} GPU(s); data ready in {:.1} s; huge pages asked {}, held {:.2} GB",
        T::DTYPE.blas_prefix(),
        gpus.len(),
        t0.elapsed().as_secs_f64(),
        hetblas_bench::huge_pages_requested(),
        hetblas_bench::anon_huge_bytes().unwrap_or(0) as f64 / 1e9
    );
    let (alpha, beta) = (1.0, args.beta);
    let shape = (m, n, k);
    let want = |v: &str| args.variants.iter().any(|x| x == v);
    let mut push = |variant: &str, secs: f64, detail: String| {
        let tf = tflops(T::DTYPE, m, n, k, secs);
        println!("  {variant:<9} {tf:8.2} TFLOP/s  ({secs:.4} s) {detail}");
        rows.push(Row {
            shape,
            dtype: T::DTYPE,
            variant: variant.into(),
            tflops: tf,
            seconds: secs,
            detail,
        });
    };

    // "hetblas": the model decides whether host C is folded on the host (and how many tiles'
    // C is sent instead); "hetblas-fold" and "hetblas-nofold" force it on and off;
    // "hetblas-foldall" folds every tile.
    for (name, host_fold, fold_tail) in [
        ("hetblas", None, None),
        ("hetblas-fold", Some(true), None),
        ("hetblas-foldall", Some(true), Some(0)),
        ("hetblas-nofold", Some(false), None),
    ] {
        if !want(name) {
            continue;
        }
        let opts = GemmOptions::default()
            .devices(gpus.iter().copied())
            .tile(args.tile)
            .blocking(args.blocking)
            .host_fold(host_fold)
            .fold_tail(fold_tail);
        let run = |c: &mut [T]| -> Result<(f64, hetblas::GemmReport), String> {
            let t = Instant::now();
            let r = rt
                .gemm_with(
                    Trans::N,
                    Trans::N,
                    T::from_f64(alpha),
                    MatRef::packed(&a, m, k).map_err(|e| e.to_string())?,
                    MatRef::packed(&b, k, n).map_err(|e| e.to_string())?,
                    T::from_f64(beta),
                    MatMut::packed(c, m, n).map_err(|e| e.to_string())?,
                    &opts,
                )
                .map_err(|e| e.to_string())?;
            Ok((t.elapsed().as_secs_f64(), r))
        };
        run(&mut c)?;
        let mut times = Vec::new();
        let mut last = None;
        for _ in 0..args.reps {
            let (s, r) = run(&mut c)?;
            times.push(s);
            last = Some(r);
        }
        par_copy(&mut c, &c0);
        run(&mut c)?;
        let ok = match check(name, shape, alpha, &a, &b, beta, &c0, &c) {
            Ok(ok) => ok,
            Err(e) => {
                // Diagnose before failing: is it the registration cache?
                let cache =
                    CudaDevice::of(rt.devices()[gpus[0]].as_ref()).map(|d| d.pin_cache().clone());
                if let Some(cache) = cache {
                    println!("  FAILED: {e}\n  registration cache: {:?}", cache.stats());
                    cache.release_all().map_err(|e| e.to_string())?;
                    par_copy(&mut c, &c0);
                    run(&mut c)?;
                    let again = check(name, shape, alpha, &a, &b, beta, &c0, &c);
                    println!("  after releasing every registration and re-running: {again:?}");
                }
                return Err(e);
            }
        };
        let r = last.unwrap_or_default();
        if args.traffic && gpus.len() > 1 && host_fold.is_none() {
            let mut o2 = opts.clone();
            o2.no_peer_forwarding = true;
            let r2 = rt
                .gemm_with(
                    Trans::N,
                    Trans::N,
                    T::from_f64(alpha),
                    MatRef::packed(&a, m, k).map_err(|e| e.to_string())?,
                    MatRef::packed(&b, k, n).map_err(|e| e.to_string())?,
                    T::from_f64(beta),
                    MatMut::packed(&mut c, m, n).map_err(|e| e.to_string())?,
                    &o2,
                )
                .map_err(|e| e.to_string())?;
            for g in 0..gpus.len() {
                println!(
                    "  traffic GPU{g}: from host {:.2} GB, from peers {:.2} GB (without forwarding: from host {:.2} GB); C tiles {}",
                    r.stats.bytes_in[g] as f64 / 1e9,
                    r.stats.bytes_peer[g] as f64 / 1e9,
                    r2.stats.bytes_in[g] as f64 / 1e9,
                    r.stats.c_tiles[g]
                );
            }
        }
        let bytes_in: u64 = r.stats.bytes_in.iter().sum();
        push(
            name,
            median(&mut times),
            format!(
                "tile {}{}, planning {:.1} us (cached {}), in {:.2} GB, {ok}",
                tile_label(r.tile),
                match (r.host_fold, r.fold_tail) {
                    (false, _) => String::new(),
                    (true, 0) => " host-fold".into(),
                    (true, t) => format!(" host-fold, {t} C sent"),
                },
                r.planning_seconds * 1e6,
                r.plan_cached,
                bytes_in as f64 / 1e9
            ),
        );
    }

    if let Some(xt) = xt {
        // One cuBLASXt call on the packed host matrices (c distinct from a and b).
        let xt_gemm = |c: &mut Vec<T>| -> Result<(), String> {
            // SAFETY: packed host matrices of the given shapes; c distinct from a and b.
            unsafe {
                xt.gemm(
                    false,
                    false,
                    m,
                    n,
                    k,
                    T::from_f64(alpha),
                    a.as_ptr(),
                    m,
                    b.as_ptr(),
                    k,
                    T::from_f64(beta),
                    c.as_mut_ptr(),
                    m,
                )
            }
        };
        let measure_xt = |c: &mut Vec<T>| -> Result<(f64, String), String> {
            let XtSweep {
                seconds: s,
                block: blk,
                per_block,
            } = best_xt_block(xt, &args.xt_blocks, args.reps, &mut || xt_gemm(c))?;
            let per_block: Vec<String> = per_block
                .iter()
                .map(|&(b, s)| format!("{b}: {:.1}", tflops(T::DTYPE, m, n, k, s)))
                .collect();
            par_copy(c, &c0);
            xt_gemm(c)?;
            let ok = check("cublasxt", shape, alpha, &a, &b, beta, &c0, c)?;
            Ok((
                s,
                format!("best block {blk} [{}], {ok}", per_block.join(", ")),
            ))
        };
        // cuBLASXt has failed with CUBLAS_STATUS_INTERNAL_ERROR after large hetblas runs in the
        // same process: release hetblas's page-locked registrations and try once more, and
        // report a second failure instead of aborting the other variants.
        let r = measure_xt(&mut c).or_else(|e| {
            println!("  cublasxt failed: {e}; releasing hetblas's registrations and retrying");
            for &g in gpus {
                if let Some(d) = CudaDevice::of(rt.devices()[g].as_ref()) {
                    d.pin_cache().release_all().map_err(|e| e.to_string())?;
                }
            }
            par_copy(&mut c, &c0);
            measure_xt(&mut c)
        });
        match r {
            Ok((s, detail)) => push("cublasxt", s, detail),
            Err(e) => println!("  cublasxt FAILED twice: {e}"),
        }
    }

    if want("naive") || want("ceiling") {
        let g = gpus[0];
        let dev = rt.devices()[g].clone();
        let da = rt.alloc_matrix::<T>(g, m, k).map_err(|e| e.to_string())?;
        let db = rt.alloc_matrix::<T>(g, k, n).map_err(|e| e.to_string())?;
        let dc = rt.alloc_matrix::<T>(g, m, n).map_err(|e| e.to_string())?;
        let space = dev.space();
        let h2d = rt
            .link(hetblas_core::MemorySpace::HOST, space)
            .ok_or("no h2d link")?
            .clone();
        let d2h = rt
            .link(space, hetblas_core::MemorySpace::HOST)
            .ok_or("no d2h link")?
            .clone();
        let host = |x: &[T], r: usize, cc: usize| hetblas_core::RawTile {
            space: hetblas_core::MemorySpace::HOST,
            addr: x.as_ptr() as u64,
            rows: r,
            cols: cc,
            ld: r,
            dtype: T::DTYPE,
        };
        let q: Arc<dyn Queue> = dev.compute_queues()[0].clone();
        let op = GemmTile {
            transa: Trans::N,
            transb: Trans::N,
            m,
            n,
            k,
            alpha: T::from_f64(alpha).to_value(),
            a: da.raw(),
            b: db.raw(),
            beta: T::from_f64(beta).to_value(),
            c: dc.raw(),
        };
        let naive = |c: &mut [T]| -> Result<f64, String> {
            let t = Instant::now();
            let e = |r: hetblas::Result<()>| r.map_err(|e| e.to_string());
            e(h2d.copy(&host(&a, m, k), &da.raw()))?;
            e(h2d.copy(&host(&b, k, n), &db.raw()))?;
            e(h2d.copy(&host(c, m, n), &dc.raw()))?;
            let ev = h2d.queue().record().map_err(|e| e.to_string())?;
            e(q.wait(&ev))?;
            e(dev.kernel().gemm(&q, &op))?;
            let ev = q.record().map_err(|e| e.to_string())?;
            e(d2h.queue().wait(&ev))?;
            e(d2h.copy(&dc.raw(), &host(c, m, n)))?;
            e(d2h.queue().synchronize())?;
            Ok(t.elapsed().as_secs_f64())
        };
        if want("naive") {
            naive(&mut c)?;
            let mut times = Vec::new();
            for _ in 0..args.reps.min(2) {
                times.push(naive(&mut c)?);
            }
            par_copy(&mut c, &c0);
            naive(&mut c)?;
            let ok = check("naive", shape, alpha, &a, &b, beta, &c0, &c)?;
            push("naive", median(&mut times), ok);
        }
        if want("ceiling") {
            // The same random A, B and C as the other variants, whatever ran before: cuBLAS on
            // uninitialised (or zero) memory runs faster than on data (Hopper's power depends
            // on the values), and a ceiling measured that way inflates every ratio against it.
            let upload = |c: &[T]| -> Result<(), String> {
                let e = |r: hetblas::Result<()>| r.map_err(|e| e.to_string());
                e(h2d.copy(&host(&a, m, k), &da.raw()))?;
                e(h2d.copy(&host(&b, k, n), &db.raw()))?;
                e(h2d.copy(&host(c, m, n), &dc.raw()))?;
                e(h2d.queue().synchronize())
            };
            par_copy(&mut c, &c0);
            upload(&c)?;
            let mut times = Vec::new();
            for rep in 0..=args.reps {
                let start = q.record_timed().map_err(|e| e.to_string())?;
                dev.kernel().gemm(&q, &op).map_err(|e| e.to_string())?;
                let end = q.record_timed().map_err(|e| e.to_string())?;
                end.synchronize().map_err(|e| e.to_string())?;
                if rep > 0 {
                    times.push(end.elapsed_since(start.as_ref()).ok_or("no event timing")?);
                }
            }
            // Checked like every variant: one product on fresh operands, C copied back.
            par_copy(&mut c, &c0);
            upload(&c)?;
            dev.kernel().gemm(&q, &op).map_err(|e| e.to_string())?;
            let ev = q.record().map_err(|e| e.to_string())?;
            d2h.queue().wait(&ev).map_err(|e| e.to_string())?;
            d2h.copy(&dc.raw(), &host(&c, m, n))
                .map_err(|e| e.to_string())?;
            d2h.queue().synchronize().map_err(|e| e.to_string())?;
            let ok = check("ceiling", shape, alpha, &a, &b, beta, &c0, &c)?;
            push(
                "ceiling",
                median(&mut times),
                format!("device-resident cuBLAS on GPU0, {ok}"),
            );
        }
    }
    // The buffers are freed next: their registrations go first (a registration outliving its
    // memory collides with later driver mappings).
    for buf in [&a, &b, &c] {
        rt.release_host(buf).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// hetblas and cuBLASXt with operands placed on GPUs / the host (f64).
#[allow(clippy::too_many_arguments)] // a GEMM-shaped argument list (BLAS order)
fn placement_problem(
    rt: &Runtime,
    gpus: &[usize],
    (m, n, k): (usize, usize, usize),
    placement: &str,
    args: &Args,
    xt: Option<&CublasXt>,
    rows: &mut Vec<Row>,
) -> Result<(), String> {
    let p: Vec<char> = placement.chars().collect();
    if p.len() != 3 {
        return Err(format!("placement {placement:?}: three of h/0/1/..."));
    }
    let home = |ch: char| -> Result<Option<usize>, String> {
        match ch {
            'h' => Ok(None),
            d => {
                let i = d.to_digit(10).ok_or(format!("bad placement {placement}"))? as usize;
                gpus.get(i).copied().map(Some).ok_or(format!("no GPU {i}"))
            }
        }
    };
    let (ha, hb, hc) = (home(p[0])?, home(p[1])?, home(p[2])?);
    let a = random_data::<f64>(1, m * k);
    let b = random_data::<f64>(2, k * n);
    let c0 = random_data::<f64>(3, m * n);
    let mut c = c0.clone();
    let e = |x: hetblas::Error| x.to_string();
    let up = |h: Option<usize>,
              v: &[f64],
              r: usize,
              cc: usize|
     -> Result<Option<hetblas::DeviceMatrix<f64>>, String> {
        match h {
            None => Ok(None),
            Some(g) => rt
                .upload(g, MatRef::packed(v, r, cc).map_err(e)?)
                .map(Some)
                .map_err(e),
        }
    };
    let da = up(ha, &a, m, k)?;
    let db = up(hb, &b, k, n)?;
    let mut dc = up(hc, &c0, m, n)?;
    prepare_host(rt, gpus, &[&a, &b, &c])?;
    println!(
        "\n== dgemm {m}x{n}x{k}, placement {placement}, {} GPU(s)",
        gpus.len()
    );
    let shape = (m, n, k);
    let opts = GemmOptions::default()
        .devices(gpus.iter().copied())
        .tile(args.tile)
        .blocking(args.blocking);
    let mut times = Vec::new();
    for rep in 0..=args.reps {
        // Restore C each time: the result of the last run is checked.
        match dc.as_mut() {
            Some(d) => {
                let fresh = rt
                    .upload(hc.unwrap_or(0), MatRef::packed(&c0, m, n).map_err(e)?)
                    .map_err(e)?;
                *d = fresh;
            }
            None => par_copy(&mut c, &c0),
        }
        let ai = da.as_ref().map_or(
            hetblas::MatIn::Host(MatRef::packed(&a, m, k).map_err(e)?),
            hetblas::MatIn::Device,
        );
        let bi = db.as_ref().map_or(
            hetblas::MatIn::Host(MatRef::packed(&b, k, n).map_err(e)?),
            hetblas::MatIn::Device,
        );
        let co = match dc.as_mut() {
            Some(d) => hetblas::MatOut::Device(d),
            None => hetblas::MatOut::Host(MatMut::packed(&mut c, m, n).map_err(e)?),
        };
        let t = Instant::now();
        rt.gemm_with(Trans::N, Trans::N, 1.0, ai, bi, 1.0, co, &opts)
            .map_err(e)?;
        if rep > 0 {
            times.push(t.elapsed().as_secs_f64());
        }
    }
    if let Some(d) = &dc {
        rt.download(d, MatMut::packed(&mut c, m, n).map_err(e)?)
            .map_err(e)?;
    }
    let ok = check("hetblas", shape, 1.0, &a, &b, 1.0, &c0, &c)?;
    let s = median(&mut times);
    let tf = tflops(DType::F64, m, n, k, s);
    println!("  hetblas   {tf:8.2} TFLOP/s  ({s:.4} s) {ok}");
    rows.push(Row {
        shape,
        dtype: DType::F64,
        variant: "hetblas".into(),
        tflops: tf,
        seconds: s,
        detail: format!("placement {placement}, {ok}"),
    });
    if let Some(xt) = xt {
        let ptr = |d: &Option<hetblas::DeviceMatrix<f64>>, h: &[f64]| {
            d.as_ref().map_or(h.as_ptr() as u64, |x| x.raw().addr)
        };
        let (pa, pb) = (ptr(&da, &a), ptr(&db, &b));
        // One cuBLASXt call on host or device pointers of packed matrices of these shapes.
        let xt_gemm = |pc: u64| -> Result<(), String> {
            // SAFETY: host or device pointers of packed matrices of these shapes.
            unsafe {
                xt.gemm(
                    false,
                    false,
                    m,
                    n,
                    k,
                    1.0f64,
                    pa as *const f64,
                    m,
                    pb as *const f64,
                    k,
                    1.0,
                    pc as *mut f64,
                    m,
                )
            }
        };
        let XtSweep {
            seconds: s,
            block: blk,
            ..
        } = best_xt_block(xt, &args.xt_blocks, args.reps, &mut || {
            xt_gemm(dc.as_ref().map_or(c.as_mut_ptr() as u64, |x| x.raw().addr))
        })?;
        // Check cuBLASXt too, on a fresh C (the sweep left the best block set).
        match dc.as_mut() {
            Some(d) => {
                *d = rt
                    .upload(hc.unwrap_or(0), MatRef::packed(&c0, m, n).map_err(e)?)
                    .map_err(e)?
            }
            None => par_copy(&mut c, &c0),
        }
        xt_gemm(dc.as_ref().map_or(c.as_mut_ptr() as u64, |x| x.raw().addr))?;
        if let Some(d) = &dc {
            rt.download(d, MatMut::packed(&mut c, m, n).map_err(e)?)
                .map_err(e)?;
        }
        let ok = check("cublasxt", shape, 1.0, &a, &b, 1.0, &c0, &c)?;
        let tf = tflops(DType::F64, m, n, k, s);
        println!("  cublasxt  {tf:8.2} TFLOP/s  ({s:.4} s) block {blk}, {ok}");
        rows.push(Row {
            shape,
            dtype: DType::F64,
            variant: "cublasxt".into(),
            tflops: tf,
            seconds: s,
            detail: format!("placement {placement}, block {blk}, {ok}"),
        });
    }
    for buf in [&a, &b, &c] {
        rt.release_host(buf).map_err(e)?;
    }
    Ok(())
}

/// `MxNxK`.
fn parse_shape(s: &str) -> Result<(usize, usize, usize), String> {
    let v: Vec<usize> = s
        .split('x')
        .map(|x| x.parse().map_err(|_| format!("bad shape {s}")))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [m, n, k] => Ok((m, n, k)),
        _ => Err(format!("bad shape {s}")),
    }
}

fn pin_demo(rt: &Runtime, gpus: &[usize], n: usize) -> Result<(), String> {
    let a = random_data::<f64>(11, n * n);
    let b = random_data::<f64>(12, n * n);
    let mut c = random_data::<f64>(13, n * n);
    let cache = CudaDevice::of(rt.devices()[gpus[0]].as_ref())
        .ok_or("GPU0 is not a CUDA device")?
        .pin_cache()
        .clone();
    let opts = GemmOptions::default().devices(gpus.iter().copied());
    println!("\n== registration cache: two identical dgemm {n}^3 calls on fresh host buffers");
    for call in 1..=2 {
        let before = cache.stats();
        let t = Instant::now();
        rt.gemm_with(
            Trans::N,
            Trans::N,
            1.0,
            MatRef::packed(&a, n, n).map_err(|e| e.to_string())?,
            MatRef::packed(&b, n, n).map_err(|e| e.to_string())?,
            1.0,
            MatMut::packed(&mut c, n, n).map_err(|e| e.to_string())?,
            &opts,
        )
        .map_err(|e| e.to_string())?;
        let s = t.elapsed().as_secs_f64();
        let after = cache.stats();
        println!(
            "  call {call}: {s:.4} s ({:.2} TFLOP/s); registrations +{}, hits +{}, registered +{:.2} GB in {:.4} s",
            tflops(DType::F64, n, n, n, s),
            after.registrations - before.registrations,
            after.hits - before.hits,
            (after.bytes_registered - before.bytes_registered) as f64 / 1e9,
            after.seconds_registering - before.seconds_registering
        );
    }
    for buf in [&a, &b, &c] {
        rt.release_host(buf).map_err(|e| e.to_string())?;
    }
    Ok(())
}

fn trace_run<T: Scalar>(
    rt: &Runtime,
    gpus: &[usize],
    (m, n, k): (usize, usize, usize),
    args: &Args,
) -> Result<(), String> {
    let a = random_data::<T>(21, m * k);
    let b = random_data::<T>(22, k * n);
    let mut c = random_data::<T>(23, m * n);
    prepare_host(rt, gpus, &[&a, &b, &c])?;
    let mut opts = GemmOptions::default()
        .devices(gpus.iter().copied())
        .tile(args.tile)
        .blocking(args.blocking);
    let mut call = |opts: &GemmOptions| {
        rt.gemm_with(
            Trans::N,
            Trans::N,
            T::from_f64(1.0),
            MatRef::packed(&a, m, k).map_err(|e| e.to_string())?,
            MatRef::packed(&b, k, n).map_err(|e| e.to_string())?,
            T::from_f64(1.0),
            MatMut::packed(&mut c, m, n).map_err(|e| e.to_string())?,
            opts,
        )
        .map_err(|e| e.to_string())
    };
    call(&opts)?;
    opts.trace = true;
    let t = Instant::now();
    let r = call(&opts)?;
    let wall = t.elapsed().as_secs_f64();
    let tr = r.trace.ok_or("no trace recorded")?;
    let (s, e) = tr.span();
    println!(
        "\n== timeline: {}gemm {m}x{n}x{k} (tile {:?}, fold {}), {} intervals, span {:.4} s (call {:.4} s)",
        T::DTYPE.blas_prefix(),
        r.tile,
        r.host_fold,
        tr.intervals.len(),
        e - s,
        wall
    );
    let compute = tr.busy_fraction(|i| i.queue.contains("compute"));
    let h2d = tr.busy_fraction(|i| i.queue.ends_with("h2d"));
    let d2h = tr.busy_fraction(|i| i.queue.ends_with("d2h"));
    println!(
        "  any compute stream busy: {:.1}% of the span; h2d busy {:.1}%, d2h busy {:.1}%",
        compute * 100.0,
        h2d * 100.0,
        d2h * 100.0
    );
    for u in tr.usage() {
        let (bytes, flops, first, last) = tr
            .intervals
            .iter()
            .filter(|i| i.queue == u.queue)
            .fold((0u64, 0.0, f64::INFINITY, 0.0f64), |(b, f, s, e), i| {
                (b + i.bytes, f + i.flops, s.min(i.start), e.max(i.end))
            });
        println!(
            "  {:<18} busy {:.4} s = {:.1}%; {:.2} GB at {:.2} GB/s busy, {:.2} TFLOP at {:.2} TFLOP/s busy; first start {:.4} s, last end {:.4} s",
            u.queue,
            u.busy,
            u.fraction * 100.0,
            bytes as f64 / 1e9,
            bytes as f64 / u.busy.max(1e-12) / 1e9,
            flops / 1e12,
            flops / u.busy.max(1e-12) / 1e12,
            first - s,
            last - s
        );
    }
    // Overlap: how much of the transfer time ran while a compute stream was busy.
    let gemms: Vec<(f64, f64)> = tr
        .intervals
        .iter()
        .filter(|i| i.queue.contains("compute"))
        .map(|i| (i.start, i.end))
        .collect();
    let mut xfer = 0.0;
    let mut overlapped = 0.0;
    for i in tr.intervals.iter().filter(|i| !i.queue.contains("compute")) {
        xfer += i.end - i.start;
        for &(gs, ge) in &gemms {
            overlapped += (i.end.min(ge) - i.start.max(gs)).max(0.0);
        }
    }
    println!(
        "  transfer time overlapped with compute: {:.1}% (summed over streams)",
        100.0 * overlapped.min(xfer) / xfer.max(1e-12)
    );
    // The host's memory is shared by the copies in, the copies back and the host folds: what
    // each device's copies in reached beside them (see `link_contention`).
    let rate = |b: &Beside| match b.gb_per_s() {
        Some(r) => format!("{r:.1} GB/s over {:.2} ms", b.seconds * 1e3),
        None => "-".to_string(),
    };
    for q in h2d_beside(&tr) {
        println!(
            "  {} alone: {}; beside device->host copies: {}; beside host folds: {}; beside both: {}",
            q.queue,
            rate(&q.alone),
            rate(&q.device_to_host),
            rate(&q.fold),
            rate(&q.both)
        );
    }
    if let Some(p) = &args.trace_out {
        std::fs::write(p, tr.to_chrome_json()).map_err(|e| e.to_string())?;
        println!("  chrome trace written to {}", p.display());
    }
    for buf in [&a, &b, &c] {
        rt.release_host(buf).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The outcome of a cuBLASXt block-size sweep.
struct XtSweep {
    /// Median seconds at the fastest block.
    seconds: f64,
    block: i32,
    /// (block, median seconds) of every block tried.
    per_block: Vec<(i32, f64)>,
}

/// Times cuBLASXt over `blocks` (the median of up to two runs after a warm-up each, `run` being
/// one call) and leaves the fastest block size set.
fn best_xt_block(
    xt: &CublasXt,
    blocks: &[i32],
    reps: usize,
    run: &mut dyn FnMut() -> Result<(), String>,
) -> Result<XtSweep, String> {
    let mut per_block = Vec::new();
    for &blk in blocks {
        xt.set_block_dim(blk)?;
        let mut times = Vec::new();
        for rep in 0..=reps.min(2) {
            let t = Instant::now();
            run()?;
            if rep > 0 {
                times.push(t.elapsed().as_secs_f64());
            }
        }
        per_block.push((blk, median(&mut times)));
    }
    let &(blk, s) = per_block
        .iter()
        .min_by(|a, b| a.1.total_cmp(&b.1))
        .ok_or("no cuBLASXt block size")?;
    xt.set_block_dim(blk)?;
    Ok(XtSweep {
        seconds: s,
        block: blk,
        per_block,
    })
}
