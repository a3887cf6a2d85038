//! `hetblas-mpi bench`: a distributed GEMM on random data, timed; each rank's local products,
//! its timeline and what it spent outside its products.

use crate::{gather_texts, parse_grid, print_ranks, rnd, Res};
use clap::{Args, ValueEnum};
use hetblas::{Runtime, Scalar, Trans};
use hetblas_cuda::PinStats;
use hetblas_mpi::timeline::{self, Breakdown, Counters, Event};
use hetblas_mpi::{
    choose_layout, gemm_in, schedule, CPlacement, DistMatrix, ProcessGrid, SummaOptions,
    SummaReport, Transport, Workspace,
};
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::*;
use std::path::PathBuf;
use std::time::Instant;

/// The element types the benchmark runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Dtype {
    F64,
    F32,
}

/// Shape and element type of `C = alpha * A * B + beta * C`, as the `hetblas` command takes
/// them.
#[derive(Args, Debug, Clone)]
pub struct Shape {
    /// m = n = k = SIZE (each overridden by -m/-n/-k).
    #[arg(
        long,
        short = 's',
        default_value_t = 4096,
        allow_negative_numbers = true
    )]
    pub size: usize,
    /// Rows of C and A (default: SIZE).
    #[arg(short = 'm', allow_negative_numbers = true)]
    pub m: Option<usize>,
    /// Columns of C and B (default: SIZE).
    #[arg(short = 'n', allow_negative_numbers = true)]
    pub n: Option<usize>,
    /// Inner dimension: columns of A, rows of B (default: SIZE).
    #[arg(short = 'k', allow_negative_numbers = true)]
    pub k: Option<usize>,
    /// Element type: f64 (PDGEMM) or f32 (PSGEMM).
    #[arg(long, value_enum, default_value = "f64")]
    pub dtype: Dtype,
}

impl Shape {
    pub fn mnk(&self) -> (usize, usize, usize) {
        (
            self.m.unwrap_or(self.size),
            self.n.unwrap_or(self.size),
            self.k.unwrap_or(self.size),
        )
    }
}

/// A process grid, or the model's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridArg {
    Auto,
    Fixed(usize, usize),
}

fn parse_grid_arg(s: &str) -> Result<GridArg, String> {
    if s == "auto" {
        return Ok(GridArg::Auto);
    }
    parse_grid(s).map(|(p, q)| GridArg::Fixed(p, q))
}

/// Where local C lives.
fn parse_c(s: &str) -> Result<CPlacement, String> {
    match s {
        "auto" => Ok(CPlacement::Auto),
        "host" => Ok(CPlacement::Host),
        "device" => Ok(CPlacement::Device(usize::MAX)),
        d => d
            .parse()
            .map(CPlacement::Device)
            .map_err(|_| format!("{d:?}: auto, host, device or a device index")),
    }
}

/// What `hetblas-mpi bench --help` says.
pub const LONG_ABOUT: &str =
    "Time a distributed GEMM C = A B + beta C on random data (run under mpirun: \
        `mpirun -np 2 hetblas-mpi bench -s 32768`).\n\nThe layout is what an application \
        built for the grid would choose: each rank holds one block of C's rows and columns \
        (and A's rows, B's columns); A's columns and B's rows are dealt in k-blocks as wide \
        as the panels. The grid, the panel width and where each rank keeps local C are the \
        model's (calibrated profile) unless given.\n\nPrinted: each repetition's time and \
        rate; for the first timed one, every rank's local products (seconds, rate, the \
        runtime's devices, tile, bytes per link) and its registrations; every rank's time \
        outside its products by cause (waits for panels, packing, preparing, allocating, \
        moving C) and its counters; a closing `result,mpi,...` line (the median \
        repetition). --trace writes every rank's timeline as a Chrome trace.";

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub shape: Shape,
    /// Timed repetitions after one warm-up call; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    pub reps: u64,
    /// Check sampled entries of every rank's C against an f64-accumulated reference after the
    /// repetitions.
    #[arg(long)]
    pub check: bool,
    /// Write every rank's timeline of the timed repetitions (products, waits, packing,
    /// broadcasts in flight, C's moves) to this file as a Chrome trace, one process per rank.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Process grid PxQ, or auto: the grid that moves the fewest panel bytes per rank.
    #[arg(long, default_value = "auto", value_parser = parse_grid_arg)]
    pub grid: GridArg,
    /// Panel width along k (default: the model's, else 4096).
    #[arg(long)]
    pub panel: Option<usize>,
    /// Block size of C's rows and columns (default: one block per process row and column).
    #[arg(long)]
    pub block: Option<usize>,
    /// Block size of A's columns and B's rows (default: the panel width).
    #[arg(long)]
    pub kblock: Option<usize>,
    /// Where each rank keeps local C: auto (the model's choice), host, device (its first
    /// accelerator) or a device index.
    #[arg(long = "c", default_value = "auto", value_parser = parse_c)]
    pub c_placement: CPlacement,
    /// The devices of the local products: auto (the accelerators when there are any), gpu,
    /// all, or device indices 0,1.
    #[arg(long, default_value = "auto")]
    pub devices: String,
    /// How panels travel: chain (point-to-point, 64 MiB chunks), chain:MIB, ibcast, or shared
    /// (an MPI-3 shared-memory window read in place by the ranks of one node).
    #[arg(long, default_value = "chain")]
    pub transport: Transport,
    /// Panels in flight ahead of the one being multiplied.
    #[arg(long, default_value_t = 2)]
    pub lookahead: usize,
    /// Post a panel only when it is needed (to measure what the look-ahead is worth).
    #[arg(long)]
    pub no_overlap: bool,
    /// Threads packing a panel a rank owns (default: the node's cores shared among its ranks,
    /// at most 8).
    #[arg(long)]
    pub pack_threads: Option<usize>,
    /// The scalar beta (alpha is 1); 0 never reads C.
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    pub beta: f64,
}

pub fn run(world: &SimpleCommunicator, rt: &Runtime, a: &BenchArgs) -> Res {
    match a.shape.dtype {
        Dtype::F64 => run_typed::<f64>(world, rt, a),
        Dtype::F32 => run_typed::<f32>(world, rt, a),
    }
}

/// One timed repetition as rank 0 reports it.
struct Rep {
    seconds: f64,
    worst_wait: f64,
    /// The smallest share of any rank's call spent in its products, and the longest time
    /// any rank spent outside them.
    least_share: f64,
    most_outside: f64,
}

fn run_typed<T: Scalar + Equivalence + Default>(
    world: &SimpleCommunicator,
    rt: &Runtime,
    a: &BenchArgs,
) -> Res {
    let (m, n, k) = a.shape.mnk();
    let (p, q) = match a.grid {
        GridArg::Fixed(p, q) => (p, q),
        GridArg::Auto => schedule::choose_grid(world.size() as usize, m, n),
    };
    let Some(grid) = ProcessGrid::new(world, p, q).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let mut opts = SummaOptions::default()
        .no_overlap(a.no_overlap)
        .lookahead(a.lookahead)
        .transport(a.transport)
        .pack_threads(a.pack_threads);
    opts.devices = parse_devices(rt, &a.devices)?;
    opts.c_placement = match a.c_placement {
        CPlacement::Device(usize::MAX) => CPlacement::Device(
            (0..rt.devices().len())
                .find(|&i| !rt.devices()[i].space().is_host())
                .ok_or("--c device: this runtime has no accelerator")?,
        ),
        c => c,
    };
    let beta = T::from_f64(a.beta);
    let choice = choose_layout(rt, &grid, m, n, k, a.beta != 0.0, &opts);
    let width = a
        .panel
        .or(choice.map(|c| c.panel))
        .unwrap_or(4096)
        .clamp(1, k.max(1));
    opts.panel_width = Some(width);
    // Each rank's share in one block per dimension (the layout a distributed application
    // built for this grid would choose; SUMMA then reads A and B in place); k-blocks as wide
    // as the panels: one broadcast per operand and panel, no joining.
    let mb = a.block.unwrap_or(m.div_ceil(p)).max(1);
    let nb = a.block.unwrap_or(n.div_ceil(q)).max(1);
    let kb = a.kblock.unwrap_or(width).max(1);
    let e = |e: hetblas_mpi::DistError| e.to_string();
    let t = Instant::now();
    let gen = |s: u64| move |i: usize, j: usize| T::from_f64(rnd(s, i, j));
    let am = DistMatrix::from_fn(&grid, m, k, mb, kb, gen(1)).map_err(e)?;
    let bm = DistMatrix::from_fn(&grid, k, n, kb, nb, gen(2)).map_err(e)?;
    let mut cm = DistMatrix::from_fn(&grid, m, n, mb, nb, gen(3)).map_err(e)?;
    let me = grid.comm().rank();
    if me == 0 {
        let devs: Vec<String> = rt.devices().iter().map(|d| d.info().name.clone()).collect();
        println!(
            "bench {m}x{n}x{k} {:?}, grid {p}x{q}, blocks {mb}x{nb} (k {kb}), panel {width}{}, \
             {:?}, look-ahead {}, rank 0 devices {devs:?}, product devices {}, setup {:.1} s",
            a.shape.dtype,
            match (a.panel, choice) {
                (Some(_), _) => " (given)".to_string(),
                (None, Some(c)) => format!(
                    " (model: {:.3} s predicted per rank, C on the {})",
                    c.seconds,
                    if c.c_on_device { "device" } else { "host" }
                ),
                (None, None) => " (no calibrated profile: the default)".to_string(),
            },
            opts.transport,
            opts.lookahead,
            a.devices,
            t.elapsed().as_secs_f64()
        );
    }
    // Each rank's runtime as it sees itself: its devices (what HETBLAS_CUDA_DEVICES left it),
    // whether the calibrated profile matched them, and where the rank may run and its memory
    // lies (NUMA).
    let labels: Vec<String> = rt.devices().iter().map(|d| d.info().label()).collect();
    print_ranks(
        grid.comm(),
        &format!(
            "rank {me}: devices {labels:?}, product devices {}; {}; {}",
            opts.devices
                .as_ref()
                .map_or("auto (its accelerators)".into(), |d| format!("{d:?}")),
            rt.profile_status(),
            placement()
        ),
    );
    let mut reps: Vec<Rep> = Vec::new();
    let mut trace: Vec<Event> = Vec::new();
    let mut after_warmup = Counters::default();
    // Panel buffers kept across repetitions, as an application calling repeatedly would.
    let mut ws = Workspace::<T>::new();
    grid.comm().barrier();
    let origin = Instant::now();
    for r in 0..=a.reps {
        grid.comm().barrier();
        let pins_before = pin_stats(rt);
        let t = Instant::now();
        let offset = t.duration_since(origin).as_secs_f64();
        let rep = gemm_in(
            rt,
            &grid,
            Trans::N,
            Trans::N,
            T::from_f64(1.0),
            &am,
            &bm,
            beta,
            &mut cm,
            &opts,
            &mut ws,
        )
        .map_err(e)?;
        grid.comm().barrier();
        let s = t.elapsed().as_secs_f64();
        let comm = grid.comm();
        let max = |x: f64| {
            let mut out = 0.0f64;
            comm.all_reduce_into(&x, &mut out, SystemOperation::max());
            out
        };
        let b = Breakdown::of(&rep.timeline, rep.seconds);
        // The longest wait of any rank: the one that holds the others at the next barrier.
        let worst_wait = max(rep.wait_seconds);
        let least_share = -max(-b.product_share());
        let most_outside = max(b.span - b.products);
        if me == 0 {
            println!(
                "{} {:.3} s, {:.2} TFLOP/s; rank 0: {} panels of {}, C on device {}, compute \
                 {:.3} s, waiting {:.3} s (most of any rank {worst_wait:.3} s), products' share \
                 of the call at least {:.1}% on every rank (most outside them {most_outside:.3} \
                 s), redistribution {:.3} s",
                if r == 0 { "warm-up" } else { "rep" },
                s,
                2.0 * (m * n * k) as f64 / s / 1e12,
                rep.panels,
                rep.panel_width,
                rep.c_on_device,
                rep.compute_seconds,
                rep.wait_seconds,
                100.0 * least_share,
                rep.redistribute_seconds
            );
        }
        if r == 1 {
            let pins = pin_stats(rt).map(|now| (pins_before.unwrap_or_default(), now));
            print_ranks(grid.comm(), &diagnosis(me, &rep, pins.as_ref()));
        }
        if r > 0 {
            after_warmup.add(&rep.counters);
            trace.extend(rep.timeline.iter().map(|ev| Event {
                start: ev.start + offset,
                end: ev.end + offset,
                ..ev.clone()
            }));
            print_ranks(
                grid.comm(),
                &format!("rank {me} timeline rep {r}: {}", b.line()),
            );
            reps.push(Rep {
                seconds: s,
                worst_wait,
                least_share,
                most_outside,
            });
        }
    }
    print_ranks(
        grid.comm(),
        &format!(
            "rank {me} counters, timed repetitions: {} registrations ({} bytes), {} \
             registration checks, {} allocations ({} bytes), {} packed, {} received, C {} up \
             {} down, {} of {} products in place",
            after_warmup.registrations,
            after_warmup.registered_bytes,
            after_warmup.registration_checks,
            after_warmup.allocations,
            after_warmup.allocated_bytes,
            human_bytes(after_warmup.packed_bytes),
            human_bytes(after_warmup.received_bytes),
            human_bytes(after_warmup.c_uploaded_bytes),
            human_bytes(after_warmup.c_downloaded_bytes),
            after_warmup.in_place_products,
            trace
                .iter()
                .filter(|e| e.activity == timeline::Activity::Product)
                .count()
        ),
    );
    if let Some(path) = &a.trace {
        write_trace(
            grid.comm(),
            path,
            &trace,
            &format!(", grid {p}x{q}, panel {width}"),
        )?;
    }
    let checked = if a.check {
        Some(check_sampled(
            &grid,
            &cm,
            (m, n, k),
            a.beta,
            a.reps as i32 + 1,
        )?)
    } else {
        None
    };
    ws.release(rt).map_err(e)?;
    // The local arrays the products read in place were page-locked by the calls.
    for local in [am.local(), bm.local(), cm.local()] {
        rt.release_host(local).map_err(|e| e.to_string())?;
    }
    reps.sort_by(|x, y| x.seconds.total_cmp(&y.seconds));
    if me == 0 {
        if let Some(bad) = checked.as_ref().and_then(|c| c.1.as_ref()) {
            return Err(bad.clone());
        }
        if let Some((count, _)) = checked {
            println!("check: {count} sampled entries of C within their bounds on every rank");
        }
        let med = &reps[reps.len() / 2];
        let transport = match opts.transport {
            Transport::Ibcast => "ibcast".to_string(),
            Transport::Chain { chunk_bytes } => format!("chain:{}", chunk_bytes >> 20),
            Transport::Shared => "shared".to_string(),
        };
        let lookahead = if opts.no_overlap { 0 } else { opts.lookahead };
        // Fields after the TFLOP/s: transport, look-ahead, panel width, longest wait, the
        // products' devices (--devices), then the placement asked for (--c), the least
        // share of any rank's call in its products, the most seconds any rank spent outside
        // them.
        println!(
            "result,mpi,{m},{n},{k},{p}x{q},{:.4},{:.2},{transport},{lookahead},{width},{:.3},\
             {},{},{:.3},{:.3}",
            med.seconds,
            2.0 * (m * n * k) as f64 / med.seconds / 1e12,
            med.worst_wait,
            a.devices,
            match opts.c_placement {
                CPlacement::Auto => "auto".to_string(),
                CPlacement::Host => "host".to_string(),
                CPlacement::Device(d) => format!("device{d}"),
            },
            med.least_share,
            med.most_outside
        );
    }
    Ok(())
}

/// Every rank's events (gathered on rank 0) as a Chrome trace in `path`. Collective.
fn write_trace(comm: &SimpleCommunicator, path: &PathBuf, events: &[Event], label: &str) -> Res {
    let json = timeline::to_json(events).to_string();
    let Some(all) = gather_texts(comm, &json) else {
        return Ok(());
    };
    let mut ranks = Vec::new();
    for (rank, text) in all.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let ev = timeline::from_json(&v).ok_or("a rank's timeline did not parse")?;
        ranks.push((rank, label.to_string(), ev));
    }
    let out = timeline::chrome_trace(&ranks);
    std::fs::write(path, out.to_string()).map_err(|e| format!("{}: {e}", path.display()))?;
    println!("trace: {} ({} ranks)", path.display(), ranks.len());
    Ok(())
}

/// Checks up to 64 entries of every rank's C, spread over its local part, against an f64
/// reference after `calls` calls of `C = A B + beta C`: `C = A B (1 + beta + ...) + beta^calls
/// C0`. Returns (entries checked on all ranks, the first failure) on rank 0. Collective.
fn check_sampled<T: Scalar + Equivalence>(
    grid: &ProcessGrid,
    c: &DistMatrix<T>,
    (m, n, k): (usize, usize, usize),
    beta: f64,
    calls: i32,
) -> Result<(usize, Option<String>), String> {
    let local = c.local().len();
    let stride = (local / 64).max(1);
    let u = T::DTYPE.unit_roundoff();
    let at = |s: u64, i: usize, j: usize| T::from_f64(rnd(s, i, j)).to_f64();
    let geo: f64 = (0..calls).map(|i| beta.powi(i)).sum();
    let mut idx = 0usize;
    let (mut count, mut bad) = (0usize, None);
    c.for_each_local(|i, j, got| {
        idx += 1;
        if (idx - 1) % stride != 0 || i >= m || j >= n {
            return;
        }
        let (mut s, mut abs) = (0.0, 0.0);
        for l in 0..k {
            let x = at(1, i, l) * at(2, l, j);
            s += x;
            abs += x.abs();
        }
        let c0 = at(3, i, j);
        let want = s * geo + beta.powi(calls) * c0;
        // Each call rounds its product and its sum with C once more.
        let bound =
            4.0 * (k as f64 + 2.0 + calls as f64) * u * (abs * geo + c0.abs()) + f64::MIN_POSITIVE;
        count += 1;
        let got = got.to_f64();
        // (NaN fails too.)
        let ok = (got - want).abs() <= bound;
        if !ok && bad.is_none() {
            bad = Some(format!(
                "C({i},{j}) = {got:e}, expected {want:e} (bound {bound:e})"
            ));
        }
    });
    let mut total = 0usize;
    grid.comm()
        .all_reduce_into(&count, &mut total, SystemOperation::sum());
    let text = bad
        .map(|b| format!("rank {}: {b}", grid.comm().rank()))
        .unwrap_or_default();
    let all = gather_texts(grid.comm(), &text);
    Ok((
        total,
        all.and_then(|v| v.into_iter().find(|t| !t.is_empty())),
    ))
}

/// Where this process may run and where its new memory goes: the CPUs and NUMA nodes Linux
/// allows it (`/proc/self/status`), so that a run can show a rank far from its GPU.
fn placement() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .map_or("?".to_string(), |v| v.trim().to_string())
    };
    format!(
        "cpus allowed {}, NUMA nodes allowed {}",
        field("Cpus_allowed_list:"),
        field("Mems_allowed_list:")
    )
}

/// The devices of the local products from `--devices`: `auto` (the summa default: the
/// accelerators when there are any), `gpu` (the accelerators), `all`, or device indices.
fn parse_devices(rt: &Runtime, spec: &str) -> Result<Option<Vec<usize>>, String> {
    let all = 0..rt.devices().len();
    match spec {
        "auto" => Ok(None),
        "all" => Ok(Some(all.collect())),
        "gpu" => {
            let gpus: Vec<usize> = all
                .filter(|&i| !rt.devices()[i].space().is_host())
                .collect();
            if gpus.is_empty() {
                return Err("--devices gpu: this runtime has no accelerator".into());
            }
            Ok(Some(gpus))
        }
        list => list
            .split(',')
            .map(|v| match v.trim().parse::<usize>() {
                Ok(i) if i < rt.devices().len() => Ok(i),
                _ => Err(format!("--devices {spec:?}: {v:?} is not a device index")),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
    }
}

/// The registration statistics of the runtime's GPUs (one cache per GPU runtime, shared by
/// its devices); `None` without a GPU.
fn pin_stats(rt: &Runtime) -> Option<PinStats> {
    rt.devices().iter().find_map(|d| {
        hetblas_cuda::CudaDevice::of(d.as_ref())
            .map(|g| g.pin_cache().stats())
            .or_else(|| hetblas_hip::HipDevice::of(d.as_ref()).map(|g| g.pin_cache().stats()))
    })
}

/// One rank's lines on a repetition: each local product (seconds, rate, the runtime's
/// devices, shares, tile and fold), and the registrations it made (`pins`: the statistics
/// before and after).
fn diagnosis(rank: i32, rep: &SummaReport, pins: Option<&(PinStats, PinStats)>) -> String {
    let mut out = format!(
        "rank {rank}: {} products, compute {:.3} s, waiting {:.3} s, preparing host arrays {:.3} s",
        rep.products.len(),
        rep.compute_seconds,
        rep.wait_seconds,
        rep.prepare_seconds
    );
    for (i, p) in rep.products.iter().enumerate() {
        let shares: Vec<String> = p.weights.iter().map(|w| format!("{w:.3}")).collect();
        let moved: Vec<String> = p
            .link_bytes
            .iter()
            .map(|(l, b)| format!("{l} {}", human_bytes(*b)))
            .collect();
        out += &format!(
            "\nrank {rank} product {i} (panel {}): {}x{}x{} {:.3} s, {:.2} TFLOP/s, devices {:?} \
             shares [{}], tile {:?}, host fold {}, plan cached {} ({:.3} s planning), entering \
             {:.3} s (waiting {:.3} s), workspaces {:.3} s, moved [{}]{}",
            p.panel,
            p.m,
            p.n,
            p.k,
            p.seconds,
            p.tflops(),
            p.devices,
            shares.join(", "),
            p.tile,
            p.host_fold,
            p.plan_cached,
            p.planning_seconds,
            p.host_check_seconds + p.waited_seconds,
            p.waited_seconds,
            p.workspace_seconds,
            moved.join(", "),
            if p.notes.is_empty() {
                String::new()
            } else {
                format!("; {}", p.notes.join("; "))
            }
        );
    }
    out += &match pins {
        None => format!("\nrank {rank} registrations: no GPU registration cache"),
        Some((before, now)) => format!(
            "\nrank {rank} registrations in this repetition: {} new ({:.2} GiB, {:.3} s), {} hits, \
             {} refused, {} evicted, {} stale, {} merged; since the start: {} registrations \
             ({:.2} GiB, {:.3} s registering, {:.2} GiB pre-faulted), {} hits, {} refused \
             (refused memory is copied through staging buffers)",
            now.registrations - before.registrations,
            (now.bytes_registered - before.bytes_registered) as f64 / GIB,
            now.seconds_registering - before.seconds_registering,
            now.hits - before.hits,
            now.failures - before.failures,
            now.evictions - before.evictions,
            now.stale - before.stale,
            now.merges - before.merges,
            now.registrations,
            now.bytes_registered as f64 / GIB,
            now.seconds_registering,
            now.bytes_prefaulted as f64 / GIB,
            now.hits,
            now.failures
        ),
    };
    out
}

const GIB: f64 = (1u64 << 30) as f64;

/// `b` bytes as GiB, or MiB below one GiB (0 as "0 B").
fn human_bytes(b: u64) -> String {
    if b == 0 {
        "0 B".to_string()
    } else if b as f64 >= GIB {
        format!("{:.2} GiB", b as f64 / GIB)
    } else {
        format!("{:.2} MiB", b as f64 / (1u64 << 20) as f64)
    }
}
