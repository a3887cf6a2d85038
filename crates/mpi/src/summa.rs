//! Distributed GEMM: SUMMA over the process grid, each rank's products on its node runtime.
//!
//! `C = alpha * op(A) * op(B) + beta * C` with C distributed 2D block-cyclic. The k dimension is
//! cut into panels; for each panel the process column owning a k-block of A broadcasts it along
//! every process row, and the process row owning the same k-block of B broadcasts it along every
//! process column. Each rank then multiplies its rows of the A panel by its columns of the B
//! panel into its local C with one call to its [`hetblas::Runtime`], which spreads that product
//! over the rank's GPUs and CPU. The broadcasts of panels p + 1 ..= p + L (the look-ahead,
//! [`SummaOptions::lookahead`]) are in flight while panel p is multiplied: posted when the
//! product starts, packed by their owners chunk by chunk as they are sent, and tested in a
//! loop that yields the processor (never sleeps) while the runtime computes, so that MPI
//! libraries without a progress thread still move the data. How a panel travels is the
//! [`Transport`]: a chain of chunked point-to-point messages (default), `MPI_Ibcast`, or, for
//! groups of one node, a shared-memory window read in place ([`crate::shared`]).
//!
//! Operands whose rows (A) or columns (B) are not distributed like C's, transposed operands among
//! them, are first redistributed by one all-to-all ([`crate::redistribute`]); operands already
//! aligned (the usual ScaLAPACK case: same block sizes and sources) are read in place.
//!
//! Why SUMMA and not COSMA's schedule: COSMA is communication-optimal for every shape by
//! choosing its own processor decomposition (splitting m, n or k, including a 2.5D/3D split
//! with reductions of C) and its own data layout; matrices in a given ScaLAPACK layout must be
//! converted into it and back, and C must be reduced over the k-groups. For square and
//! moderately rectangular problems on grids of a few to tens of ranks (one rank per node, or per
//! GPU), SUMMA's traffic is within a small factor of COSMA's and needs no extra memory for C
//! copies; the products per rank stay large, which is what each node runtime needs to reach its
//! GPUs' speed. For very skinny shapes (k much larger than m and n) a k-split with a reduction
//! of C would move less data: that is the natural next step, not done here. The grid, the
//! panel width and where local C lives are chosen by a model of the rank's node and of the
//! network ([`crate::schedule`]).
//!
//! The order of the products: panels are posted (packed and sent by their owners, received
//! by the others) in k order on every process, at most `lookahead + 1` ahead of the first
//! panel not yet multiplied; among those, a process multiplies first whatever is ready: a
//! panel whose k-blocks are its own (read in place, while it packs them for the others), else
//! one that has arrived. So on a grid where every process owns panels, none waits for the
//! first one (on 2 ranks, each multiplies its own first panel while the other packs its own).
//! Each call records its timeline on this process ([`SummaReport::timeline`], what
//! `hetblas-mpi bench --trace` writes) and counts what should not repeat between calls
//! ([`SummaReport::counters`]).

use crate::broadcast::{block_tag, done_tag, Fill, PanelBroadcast, Transport};
use crate::desc::Axis;
use crate::error::{DistError, Result};
use crate::grid::ProcessGrid;
use crate::matrix::{check_view, DistMut, DistRef};
use crate::network::{NetworkLink, NetworkModel};
use crate::project::NodeModel;
use crate::redistribute::{redistribute, Stored, Target};
use crate::schedule::{self, Choice};
use crate::shared::SharedPanels;
use crate::timeline::{Activity, Counters, Event, Recorder};
use hetblas::{
    DeviceMatrix, GemmOptions, GemmReport, HostAccess, MatIn, MatMut, MatRef, Runtime, Scalar,
    Trans,
};
use hetblas_core::MemorySpace;
use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::request::scope;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Where a rank keeps its local C while the panels are multiplied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CPlacement {
    /// On the runtime's first non-CPU device when there is one and more than one panel
    /// (C then crosses the host link twice, not twice per panel), else in host memory.
    #[default]
    Auto,
    /// In host memory: every panel's product reads and writes it.
    Host,
    /// On this device of the runtime (an index into `Runtime::devices`).
    Device(usize),
}

/// Options of [`gemm`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SummaOptions {
    /// Target panel width along k (whole k-blocks are grouped up to it). Default: see
    /// [`default_panel_width`].
    pub panel_width: Option<usize>,
    /// The k-block size used when both A and B must be redistributed. Default: C's larger
    /// block size.
    pub k_block: Option<usize>,
    /// Where local C lives during the call.
    pub c_placement: CPlacement,
    /// Post the next panel's broadcasts before multiplying the current one (default on; off
    /// only to measure what the overlap is worth).
    pub no_overlap: bool,
    /// How many panels ahead of the one being multiplied are in flight (at least 1 with
    /// overlap; each costs one panel buffer per operand). Default 2: a panel owned by one
    /// process and the next, owned by another, travel in both directions at once.
    pub lookahead: usize,
    /// The transport of the panel broadcasts (default: chunked point-to-point chain).
    pub transport: Transport,
    /// The runtime devices the local products may use (indices into `Runtime::devices`).
    /// Default: the runtime's accelerators when it has any (the CPU's cores pack panels and
    /// drive MPI, the ranks of one node share them, and with C on a device a CPU tile of C
    /// crosses the host link twice per panel); else the runtime chooses.
    pub devices: Option<Vec<usize>>,
    /// Threads packing a panel the process owns. Default: the node's cores shared among the
    /// grid's processes on it, at most 8.
    pub pack_threads: Option<usize>,
}

impl Default for SummaOptions {
    fn default() -> Self {
        SummaOptions {
            panel_width: None,
            k_block: None,
            c_placement: CPlacement::Auto,
            no_overlap: false,
            lookahead: 2,
            transport: Transport::default(),
            devices: None,
            pack_threads: None,
        }
    }
}

impl SummaOptions {
    pub fn panel_width(mut self, w: usize) -> Self {
        self.panel_width = Some(w);
        self
    }
    pub fn k_block(mut self, kb: usize) -> Self {
        self.k_block = Some(kb);
        self
    }
    pub fn c_placement(mut self, p: CPlacement) -> Self {
        self.c_placement = p;
        self
    }
    pub fn no_overlap(mut self, off: bool) -> Self {
        self.no_overlap = off;
        self
    }
    pub fn lookahead(mut self, panels: usize) -> Self {
        self.lookahead = panels;
        self
    }
    pub fn transport(mut self, t: Transport) -> Self {
        self.transport = t;
        self
    }
    pub fn devices(mut self, devices: Option<Vec<usize>>) -> Self {
        self.devices = devices;
        self
    }
    pub fn pack_threads(mut self, threads: Option<usize>) -> Self {
        self.pack_threads = threads;
        self
    }
}

/// What one distributed GEMM did on this rank.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct SummaReport {
    /// Panels along k and their target width.
    pub panels: usize,
    pub panel_width: usize,
    /// Whether A / B were redistributed before the panels.
    pub redistributed_a: bool,
    pub redistributed_b: bool,
    /// Whether local C stayed on a device between panels.
    pub c_on_device: bool,
    /// Wall time of the call on this rank, of its redistributions, of its local products
    /// (runtime calls), and of waiting for broadcasts after a product had finished.
    pub seconds: f64,
    pub redistribute_seconds: f64,
    pub compute_seconds: f64,
    pub wait_seconds: f64,
    /// Seconds making the host arrays the products read in place (local arrays, shared
    /// windows, panel buffers) ready for the accelerators' DMA, before the first product
    /// ([`Runtime::prepare_host`]; a registration found in the runtime's cache costs a check).
    pub prepare_seconds: f64,
    /// Each local product (runtime call), in panel order.
    pub products: Vec<LocalProduct>,
    /// The runtime devices the products were allowed ([`SummaOptions::devices`], or the
    /// default's choice); `None`: the runtime chose among all of its devices.
    pub product_devices: Option<Vec<usize>>,
    /// What the model predicted for this process at the panel width used, and where it would
    /// keep C; `None` without a calibrated profile of the rank's accelerators.
    pub schedule: Option<Choice>,
    /// This process's timeline of the call, from its start.
    pub timeline: Vec<Event>,
    /// What this process registered, allocated, packed and received.
    pub counters: Counters,
}

/// What one local product (one call to the node runtime) did: its wall time and the runtime's
/// choices, from its [`GemmReport`].
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct LocalProduct {
    /// The panel it multiplied (in k order).
    pub panel: usize,
    /// Its shape (m x n x k of the runtime call).
    pub m: usize,
    pub n: usize,
    pub k: usize,
    /// Wall time of the runtime call.
    pub seconds: f64,
    /// Devices that took part (labels) and their shares of C.
    pub devices: Vec<String>,
    pub weights: Vec<f64>,
    /// Tile sizes (tm, tn, tk).
    pub tile: Option<(usize, usize, usize)>,
    /// Products folded into host C on the host.
    pub host_fold: bool,
    /// The plan came from the runtime's cache; the seconds planning took.
    pub plan_cached: bool,
    pub planning_seconds: f64,
    /// Bytes the call moved over each link (link name, bytes), in the order first used: the
    /// least is each A and B tile once per device that needs it, and C's tiles when C is not
    /// on the device computing them.
    pub link_bytes: Vec<(String, u64)>,
    /// The runtime's notes (a device given no tiles, a K-split).
    pub notes: Vec<String>,
    /// Of `seconds`, what the runtime spent before its devices started: waiting to enter
    /// beside other calls (or alone, to page-lock a host operand), checking or making its
    /// host operands' registrations, and taking its tile workspaces.
    pub waited_seconds: f64,
    pub host_check_seconds: f64,
    pub workspace_seconds: f64,
}

impl LocalProduct {
    fn new(panel: usize, m: usize, n: usize, k: usize, seconds: f64, r: &GemmReport) -> Self {
        let mut link_bytes: Vec<(String, u64)> = Vec::new();
        for t in &r.transfers {
            match link_bytes.iter_mut().find(|(l, _)| *l == t.link) {
                Some((_, b)) => *b += t.bytes,
                None => link_bytes.push((t.link.clone(), t.bytes)),
            }
        }
        LocalProduct {
            panel,
            m,
            n,
            k,
            seconds,
            devices: r.devices.clone(),
            weights: r.weights.clone(),
            tile: r.tile,
            host_fold: r.host_fold,
            plan_cached: r.plan_cached,
            planning_seconds: r.planning_seconds,
            link_bytes,
            notes: r.notes.clone(),
            waited_seconds: r.waited_seconds,
            host_check_seconds: r.host_check_seconds,
            workspace_seconds: r.workspace_seconds,
        }
    }

    /// Its rate in TFLOP/s (real flops, 2mnk).
    pub fn tflops(&self) -> f64 {
        2.0 * (self.m * self.n * self.k) as f64 / self.seconds.max(1e-12) / 1e12
    }
}

/// The panel width when none is given: 4096 (large enough that each runtime call keeps a GPU
/// busy), at most k, at least one k-block.
pub fn default_panel_width(k: usize, k_block: usize) -> usize {
    4096.min(k).max(k_block).max(1)
}

/// `c = alpha * op(a) * op(b) + beta * c` over the whole distributed matrices, op(A) `m x k`,
/// op(B) `k x n`, C `m x n`. Collective over the grid.
///
/// # Errors
/// Shape mismatches (ScaLAPACK's INFO for M, N, K); local runtime failures.
#[allow(clippy::too_many_arguments)] // the BLAS argument list
pub fn gemm<T: Scalar + Equivalence + Default>(
    rt: &Runtime,
    grid: &ProcessGrid,
    transa: Trans,
    transb: Trans,
    alpha: T,
    a: &crate::DistMatrix<T>,
    b: &crate::DistMatrix<T>,
    beta: T,
    c: &mut crate::DistMatrix<T>,
    opts: &SummaOptions,
) -> Result<SummaReport> {
    let mut ws = Workspace::new();
    let r = gemm_in(
        rt, grid, transa, transb, alpha, a, b, beta, c, opts, &mut ws,
    );
    ws.release(rt)?;
    r
}

/// [`gemm`] with panel buffers kept in `ws` between calls (see [`gemm_sub_in`]).
///
/// # Errors
/// As [`gemm`].
#[allow(clippy::too_many_arguments)] // the BLAS argument list and the workspace
pub fn gemm_in<T: Scalar + Equivalence + Default>(
    rt: &Runtime,
    grid: &ProcessGrid,
    transa: Trans,
    transb: Trans,
    alpha: T,
    a: &crate::DistMatrix<T>,
    b: &crate::DistMatrix<T>,
    beta: T,
    c: &mut crate::DistMatrix<T>,
    opts: &SummaOptions,
    ws: &mut Workspace<T>,
) -> Result<SummaReport> {
    let (m, n) = (c.rows(), c.cols());
    let k = if transa.is_transposed() {
        a.rows()
    } else {
        a.cols()
    };
    if transa.stored_shape(m, k).0 != a.rows() {
        let (r, c) = if transa.is_transposed() {
            (a.cols(), a.rows())
        } else {
            (a.rows(), a.cols())
        };
        return Err(DistError::arg(
            -3,
            format!("op(A) is {r}x{c}, C is {m}x{n}: the rows differ"),
        ));
    }
    let (br, bc) = transb.stored_shape(k, n);
    if (br, bc) != (b.rows(), b.cols()) {
        return Err(DistError::arg(
            -4,
            format!("B is {}x{}, op(B) must be {k}x{n}", b.rows(), b.cols()),
        ));
    }
    gemm_sub_in(
        rt,
        grid,
        transa,
        transb,
        m,
        n,
        k,
        alpha,
        a.as_dist_ref(),
        b.as_dist_ref(),
        beta,
        c.as_dist_mut(),
        opts,
        ws,
    )
}

/// The panel width and place of local C the model ([`crate::schedule`]) chooses for an
/// `m x n x k` GEMM on `grid` laid out as `hetblas-mpi bench` lays it out: C, A's rows and
/// B's columns in one block per process row and column, A's columns and B's rows in k-blocks
/// as wide as the panels, dealt from process (0, 0); `read_c`: beta != 0. Panel widths of
/// 1024 to 32768 (powers of two, at most k); the width whose slowest process is predicted
/// fastest, with this process's place of C and the slowest process's predicted seconds.
/// Collective over the grid; `None` when a process has no calibrated profile of its
/// accelerators.
pub fn choose_layout(
    rt: &Runtime,
    grid: &ProcessGrid,
    m: usize,
    n: usize,
    k: usize,
    read_c: bool,
    opts: &SummaOptions,
) -> Option<Choice> {
    let (p, q, myrow, mycol) = (grid.nprow(), grid.npcol(), grid.myrow(), grid.mycol());
    let accelerators: Vec<usize> = (0..rt.devices().len())
        .filter(|&i| !rt.devices()[i].space().is_host())
        .collect();
    let on_node = grid.comm().split_shared(0).size().max(1) as usize;
    let model = LocalModel::of(rt, opts, &accelerators, on_node, grid);
    let (m_loc, n_loc) = (
        m.div_ceil(p).min(m.saturating_sub(myrow * m.div_ceil(p))),
        n.div_ceil(q).min(n.saturating_sub(mycol * n.div_ceil(q))),
    );
    let depth = if opts.no_overlap {
        0
    } else {
        opts.lookahead.max(1)
    };
    // Panel i (of width w) is this rank's own when it holds its A and B k-blocks.
    let in_place_at = |w: usize, i: usize| {
        i < k.div_ceil(w.max(1)) && (q == 1 || i % q == mycol) && (p == 1 || i % p == myrow)
    };
    let mut widths: Vec<usize> = (10..=15).map(|e| 1usize << e).filter(|&w| w < k).collect();
    widths.push(k.clamp(1, 32768));
    let delivery = |md| PanelDelivery {
        model: md,
        in_place_at: &in_place_at,
        window: depth + 1,
        a_per_k: if q == 1 { 0.0 } else { (m_loc * 8) as f64 },
        b_per_k: if p == 1 { 0.0 } else { (n_loc * 8) as f64 },
        a_group: q as f64,
        b_group: p as f64,
    };
    let mine = model.as_ref().map(|md| {
        schedule::seconds_per_width(&md.node, m_loc, n_loc, k, read_c, &widths, &delivery(md))
    });
    let width = agree_width(grid, &widths, mine)?;
    // This rank's place of C at the agreed width, and the slowest rank's predicted time.
    let mine = model.as_ref().and_then(|md| {
        schedule::choose(&md.node, m_loc, n_loc, k, read_c, &[width], &delivery(md))
    });
    let mut slowest = 0.0f64;
    let seconds = mine.map_or(f64::INFINITY, |c| c.seconds);
    grid.comm()
        .all_reduce_into(&seconds, &mut slowest, SystemOperation::max());
    mine.map(|c| Choice {
        seconds: slowest,
        ..c
    })
}

/// The panel width among `widths` whose slowest process is fastest, from every process's
/// predicted seconds per width (`None` from a process without a model: then none is chosen,
/// by any). Collective over the grid.
fn agree_width(grid: &ProcessGrid, widths: &[usize], mine: Option<Vec<f64>>) -> Option<usize> {
    let mine = mine.unwrap_or_else(|| vec![f64::INFINITY; widths.len()]);
    let mut slowest = vec![0.0f64; widths.len()];
    grid.comm()
        .all_reduce_into(&mine[..], &mut slowest[..], SystemOperation::max());
    (0..widths.len())
        .filter(|&i| slowest[i].is_finite())
        .min_by(|&a, &b| slowest[a].total_cmp(&slowest[b]))
        .map(|i| widths[i])
}

/// Makes every process of the grid return the same outcome of checks that depend on local
/// data (before any collective, so that none waits for a process that gave up): `Ok` only
/// when every process's `local` is `Ok`, else the process's own error or the worst INFO seen.
pub(crate) fn agree(grid: &ProcessGrid, local: Result<()>) -> Result<()> {
    let mine = match &local {
        Ok(()) => 0,
        Err(e) => e.info().unwrap_or(-1),
    };
    let mut worst = 0i32;
    grid.comm()
        .all_reduce_into(&mine, &mut worst, SystemOperation::min());
    local?;
    if worst != 0 {
        return Err(DistError::arg(
            worst,
            "another process of the grid refused its part of the arguments",
        ));
    }
    Ok(())
}

/// Host buffers for the panels in flight (one per operand and panel of the look-ahead, plus
/// the one being multiplied) and for joining a B panel, kept between calls by [`gemm_sub_in`].
#[derive(Debug)]
pub struct Workspace<T> {
    a: Vec<Vec<T>>,
    b: Vec<Vec<T>>,
    join: Vec<T>,
    /// The shared windows of [`Transport::Shared`] (A's row group, B's column group).
    shared_a: Option<SharedPanels<T>>,
    shared_b: Option<SharedPanels<T>>,
    /// Local C's place on a device (device index, allocation), for calls that keep C there.
    c_dev: Option<(usize, DeviceMatrix<T>)>,
}

impl<T: Scalar> Default for Workspace<T> {
    fn default() -> Self {
        Workspace {
            a: Vec::new(),
            b: Vec::new(),
            join: Vec::new(),
            shared_a: None,
            shared_b: None,
            c_dev: None,
        }
    }
}

impl<T: Scalar> Workspace<T> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Gives back what the runtime keeps for the buffers (page-locked registrations) and frees
    /// them. Call it before dropping a workspace that was used; collective over the grid when
    /// the calls used [`Transport::Shared`] (its windows are freed by every process).
    ///
    /// # Errors
    /// The backend's error when a registration cannot be undone.
    pub fn release(&mut self, rt: &Runtime) -> Result<()> {
        self.c_dev = None;
        for w in [self.shared_a.take(), self.shared_b.take()]
            .into_iter()
            .flatten()
        {
            w.free(rt)?;
        }
        for v in self
            .a
            .iter_mut()
            .chain(self.b.iter_mut())
            .chain([&mut self.join])
        {
            if !v.is_empty() {
                rt.release_host(v)?;
            }
            *v = Vec::new();
        }
        Ok(())
    }

    /// A buffer of at least `len` elements; a buffer that must grow is released first (it
    /// moves, and a registration of the old range would go stale). A new buffer is made ready
    /// for the accelerators' DMA whole, once (the products read views of it).
    fn grow(
        rt: &Runtime,
        v: &mut Vec<T>,
        len: usize,
        counters: &mut Counters,
        rec: &Recorder,
    ) -> Result<()> {
        if v.len() < len {
            if !v.is_empty() {
                rt.release_host(v)?;
            }
            let t = Instant::now();
            *v = vec![T::from_f64(0.0); len];
            let bytes = size_of_val(v.as_slice()) as u64;
            rec.record(Activity::Allocate, t, None, 0, bytes);
            counters.allocations += 1;
            counters.allocated_bytes += bytes;
            let t = Instant::now();
            rt.prepare_host(v, HostAccess::Read)?;
            rec.record(Activity::Prepare, t, None, 0, bytes);
            counters.registrations += 1;
            counters.registered_bytes += bytes;
        }
        Ok(())
    }

    fn reserve(
        &mut self,
        rt: &Runtime,
        slots: usize,
        a_len: usize,
        b_len: usize,
        counters: &mut Counters,
        rec: &Recorder,
    ) -> Result<()> {
        for (bufs, len) in [(&mut self.a, a_len), (&mut self.b, b_len)] {
            if bufs.len() < slots {
                bufs.resize_with(slots, Vec::new);
            }
            for v in bufs.iter_mut().take(slots) {
                Self::grow(rt, v, len, counters, rec)?;
            }
        }
        Ok(())
    }
}

/// Where one k-block of the A and B panels comes from.
#[derive(Debug, Clone, Copy)]
struct KBlock {
    /// Its place among the call's k-blocks (the tag of its messages).
    seq: usize,
    /// Offset along k and length.
    k: usize,
    len: usize,
    /// Process column holding it in A, process row holding it in B.
    a_owner: usize,
    b_owner: usize,
}

/// An operand as SUMMA reads it: this process's rows (A) or columns (B) of the panel,
/// starting at local index `mn_start`, and the k axis along which its k-blocks are dealt.
#[derive(Debug, Clone, Copy)]
struct PanelSource<'a, T> {
    local: &'a [T],
    ld: usize,
    mn_start: usize,
    k_axis: Axis,
    k0: usize,
    /// The local k index stored first (a redistributed operand holds only the view's part).
    k_base: usize,
}

/// GEMM on submatrices (what `pdgemm_` calls): `sub(C) = alpha*op(sub(A))*op(sub(B)) +
/// beta*sub(C)` where each view's submatrix starts at its (`i0`, `j0`). Collective over the
/// grid; every process passes the same shapes and scalars.
///
/// # Errors
/// Bad views (ScaLAPACK INFO codes with descriptor arguments 10, 14, 19); local runtime errors.
#[allow(clippy::too_many_arguments)] // the PBLAS argument list
pub fn gemm_sub<T: Scalar + Equivalence + Default>(
    rt: &Runtime,
    grid: &ProcessGrid,
    transa: Trans,
    transb: Trans,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: DistRef<'_, T>,
    b: DistRef<'_, T>,
    beta: T,
    c: DistMut<'_, T>,
    opts: &SummaOptions,
) -> Result<SummaReport> {
    let mut ws = Workspace::new();
    let r = gemm_sub_in(
        rt, grid, transa, transb, m, n, k, alpha, a, b, beta, c, opts, &mut ws,
    );
    ws.release(rt)?;
    r
}

/// [`gemm_sub`] with panel buffers kept in `ws` between calls: the node runtime page-locks the
/// host buffers it is given once, and a workspace reused across calls pays that only once.
///
/// # Errors
/// As [`gemm_sub`].
#[allow(clippy::too_many_arguments)] // the PBLAS argument list and the workspace
pub fn gemm_sub_in<T: Scalar + Equivalence + Default>(
    rt: &Runtime,
    grid: &ProcessGrid,
    transa: Trans,
    transb: Trans,
    m: usize,
    n: usize,
    k: usize,
    alpha: T,
    a: DistRef<'_, T>,
    b: DistRef<'_, T>,
    beta: T,
    c: DistMut<'_, T>,
    opts: &SummaOptions,
    ws: &mut Workspace<T>,
) -> Result<SummaReport> {
    let t0 = Instant::now();
    let recorder = Recorder::new(t0);
    let rec = &recorder;
    let mut counters = Counters::default();
    let (nprow, npcol, myrow, mycol) = (grid.nprow(), grid.npcol(), grid.myrow(), grid.mycol());
    let (ta, tb) = (transa.is_transposed(), transb.is_transposed());
    let (am, an) = if ta { (k, m) } else { (m, k) };
    let (bm, bn) = if tb { (n, k) } else { (k, n) };
    // Some checks depend on this process's part (its local array's length), so every process
    // learns the worst INFO before any collective: all refuse together or none does.
    let local = check_view(&a.desc, a.local.len(), a.i0, a.j0, am, an, grid, 10)
        .and_then(|_| check_view(&b.desc, b.local.len(), b.i0, b.j0, bm, bn, grid, 14))
        .and_then(|_| check_view(&c.desc, c.local.len(), c.i0, c.j0, m, n, grid, 19));
    agree(grid, local)?;
    let mut report = SummaReport::default();

    let (cra, cca) = (c.desc.row_axis(nprow, myrow), c.desc.col_axis(npcol, mycol));
    let c_rows = cra.local_range(c.i0, c.i0 + m);
    let c_cols = cca.local_range(c.j0, c.j0 + n);
    let (m_loc, n_loc) = (c_rows.len(), c_cols.len());
    // Local C of the submatrix: its local rows and columns, ld = LLD.
    let c_off = c_rows.start + c_cols.start * c.desc.lld;
    let c_view_len = if n_loc == 0 {
        0
    } else {
        (n_loc - 1) * c.desc.lld + m_loc
    };
    let c_len = c.local.len();
    let c_local = &mut c.local[c_off.min(c_len)..(c_off + c_view_len).min(c_len)];
    let c_ld = c.desc.lld;

    if m == 0 || n == 0 {
        report.seconds = t0.elapsed().as_secs_f64();
        return Ok(report);
    }
    if k == 0 || alpha == T::from_f64(0.0) {
        // C = beta * C: the runtime's quick return, with empty panels (beta = 0 writes zeros
        // without reading C).
        let cv = MatMut::new(c_local, m_loc, n_loc, c_ld.max(1))?;
        let ea = MatRef::new(&[], m_loc, 0, m_loc.max(1))?;
        let eb = MatRef::new(&[], n_loc, 0, n_loc.max(1))?;
        rt.gemm(Trans::N, Trans::T, alpha, ea, eb, beta, cv)?;
        report.seconds = t0.elapsed().as_secs_f64();
        return Ok(report);
    }

    // A is read in place when its rows are dealt like C's (same block size, same owner and
    // offset within a block for the first row); B likewise for columns.
    let (ara, aca) = (a.desc.row_axis(nprow, myrow), a.desc.col_axis(npcol, mycol));
    let (bra, bca) = (b.desc.row_axis(nprow, myrow), b.desc.col_axis(npcol, mycol));
    let a_aligned = !ta
        && a.desc.mb == c.desc.mb
        && a.i0 % a.desc.mb == c.i0 % c.desc.mb
        && ara.owner(a.i0) == cra.owner(c.i0);
    let b_aligned = !tb
        && b.desc.nb == c.desc.nb
        && b.j0 % b.desc.nb == c.j0 % c.desc.nb
        && bca.owner(b.j0) == cca.owner(c.j0);
    // The k blocking both panels share: A's columns when A stays, else B's rows when B stays.
    let k_compatible = a.desc.nb == b.desc.mb && a.j0 % a.desc.nb == b.i0 % b.desc.mb;
    let keep_a = a_aligned;
    let keep_b = b_aligned && (!keep_a || k_compatible);
    let (kb, k0) = if keep_a {
        (a.desc.nb, a.j0)
    } else if keep_b {
        (b.desc.mb, b.i0)
    } else {
        (opts.k_block.unwrap_or(c.desc.mb.max(c.desc.nb)).max(1), 0)
    };

    let t_redist = Instant::now();
    let a_buf;
    let a_src = if keep_a {
        PanelSource {
            local: a.local,
            ld: a.desc.lld,
            mn_start: ara.local_range(a.i0, a.i0 + m).start,
            k_axis: aca,
            k0: a.j0,
            k_base: 0,
        }
    } else {
        let k_axis = Axis {
            nb: kb,
            src: 0,
            nprocs: npcol,
            me: mycol,
        };
        let stored = Stored {
            local: a.local,
            ld: a.desc.lld,
            rows: ara,
            cols: aca,
            i0: a.i0,
            j0: a.j0,
        };
        let target = Target {
            rows: cra,
            cols: k_axis,
            i0: c.i0,
            j0: k0,
        };
        a_buf = redistribute(grid, &stored, ta, m, k, &target)?;
        report.redistributed_a = true;
        PanelSource {
            local: &a_buf,
            ld: m_loc.max(1),
            mn_start: 0,
            k_axis,
            k0,
            k_base: k_axis.local_range(k0, k0 + k).start,
        }
    };
    let b_buf;
    let b_src = if keep_b {
        PanelSource {
            local: b.local,
            ld: b.desc.lld,
            mn_start: bca.local_range(b.j0, b.j0 + n).start,
            k_axis: bra,
            k0: b.i0,
            k_base: 0,
        }
    } else {
        let k_axis = Axis {
            nb: kb,
            src: 0,
            nprocs: nprow,
            me: myrow,
        };
        let stored = Stored {
            local: b.local,
            ld: b.desc.lld,
            rows: bra,
            cols: bca,
            i0: b.i0,
            j0: b.j0,
        };
        let target = Target {
            rows: k_axis,
            cols: cca,
            i0: k0,
            j0: c.j0,
        };
        b_buf = redistribute(grid, &stored, tb, k, n, &target)?;
        report.redistributed_b = true;
        PanelSource {
            local: &b_buf,
            ld: kb_local_ld(&k_axis, k0, k),
            mn_start: 0,
            k_axis,
            k0,
            k_base: k_axis.local_range(k0, k0 + k).start,
        }
    };
    report.redistribute_seconds = t_redist.elapsed().as_secs_f64();
    if report.redistributed_a || report.redistributed_b {
        rec.record(Activity::Redistribute, t_redist, None, 0, 0);
        for (done, len) in [
            (report.redistributed_a, a_src.local.len()),
            (report.redistributed_b, b_src.local.len()),
        ] {
            if done {
                counters.allocations += 1;
                counters.allocated_bytes += (len * size_of::<T>()) as u64;
            }
        }
    }

    // The k-blocks, and the panels grouping them.
    let mut blocks = Vec::new();
    let mut kk = 0;
    while kk < k {
        let len = (kb - (k0 + kk) % kb).min(k - kk);
        blocks.push(KBlock {
            seq: blocks.len(),
            k: kk,
            len,
            a_owner: a_src.k_axis.owner(a_src.k0 + kk),
            b_owner: b_src.k_axis.owner(b_src.k0 + kk),
        });
        kk += len;
    }
    // An operand whose broadcast group is this process alone (A on a grid of one column, B
    // on a grid of one row) is read in place, with no copy; so is a k-block of the caller's
    // own arrays that this process owns, when a panel is that one k-block: the owner packs
    // it for the others and multiplies it from where it lies.
    let a_local = npcol == 1;
    let b_local = nprow == 1;
    let depth = if opts.no_overlap {
        0
    } else {
        opts.lookahead.max(1)
    };
    let a_mine = |p: &[KBlock]| a_local || (keep_a && p.len() == 1 && p[0].a_owner == mycol);
    let b_mine = |p: &[KBlock]| b_local || (keep_b && p.len() == 1 && p[0].b_owner == myrow);
    let read_c = beta != T::from_f64(0.0);
    let accelerators: Vec<usize> = (0..rt.devices().len())
        .filter(|&i| !rt.devices()[i].space().is_host())
        .collect();
    // The panel width and C's place: given, else the model's (one width for every process:
    // the one whose slowest process is predicted fastest; C's place per process), else the
    // rules of thumb.
    let on_node = grid.comm().split_shared(0).size().max(1) as usize;
    let model = LocalModel::of(rt, opts, &accelerators, on_node, grid);
    let in_place_at = |w: usize, i: usize| {
        group_panels(&blocks, w)
            .get(i)
            .is_some_and(|p| a_mine(p) && b_mine(p))
    };
    let delivery = |md| PanelDelivery {
        model: md,
        in_place_at: &in_place_at,
        window: depth + 1,
        a_per_k: if a_local {
            0.0
        } else {
            (m_loc * size_of::<T>()) as f64
        },
        b_per_k: if b_local {
            0.0
        } else {
            (n_loc * size_of::<T>()) as f64
        },
        a_group: npcol as f64,
        b_group: nprow as f64,
    };
    let width = match opts.panel_width {
        Some(w) => w.max(1),
        None => {
            let shared = opts.transport == Transport::Shared;
            let widths = if shared {
                vec![kb.min(k)]
            } else {
                schedule::candidate_widths(kb, k)
            };
            let mine = model.as_ref().map(|md| {
                schedule::seconds_per_width(
                    &md.node,
                    m_loc,
                    n_loc,
                    k,
                    read_c,
                    &widths,
                    &delivery(md),
                )
            });
            agree_width(grid, &widths, mine).unwrap_or_else(|| default_panel_width(k, kb))
        }
    };
    let panels = group_panels(&blocks, width);
    report.panels = panels.len();
    report.panel_width = width;
    let max_w = panels.iter().map(|p| panel_len(p)).max().unwrap_or(0);
    let slots = (depth + 1).min(panels.len());
    if let Some(md) = &model {
        report.schedule =
            schedule::choose(&md.node, m_loc, n_loc, k, read_c, &[width], &delivery(md));
    }

    // Local C: on a device between panels, or in place.
    let first_accelerator = accelerators.first().copied();
    let c_device = match opts.c_placement {
        CPlacement::Host => None,
        CPlacement::Device(d) => Some(d),
        CPlacement::Auto => match report.schedule {
            Some(s) => first_accelerator.filter(|_| s.c_on_device),
            None if panels.len() > 1 => first_accelerator,
            None => None,
        },
    };
    // The devices of the products: those asked for, else the accelerators when there are
    // any (the CPU's cores pack panels and drive MPI, and with C on a device a CPU tile of
    // it would cross the host link twice per panel), else the runtime's choice.
    let product_devices = opts
        .devices
        .clone()
        .or_else(|| (!accelerators.is_empty()).then(|| accelerators.clone()));
    report.product_devices = product_devices.clone();
    let gemm_opts = GemmOptions::default().device_list(product_devices.clone());
    let to_accelerators = product_devices
        .as_ref()
        .map_or(!accelerators.is_empty(), |d| {
            d.iter().any(|i| accelerators.contains(i))
        });

    // Shared windows for the groups on one node, when every panel is one k-block (so that
    // a panel is read where its owner packed it). Collective over each group.
    let shared_ok = opts.transport == Transport::Shared && panels.iter().all(|p| p.len() == 1);
    let a_shared = !a_local && shared_ok && SharedPanels::<T>::one_node(grid.row_comm());
    let b_shared = !b_local && shared_ok && SharedPanels::<T>::one_node(grid.col_comm());
    let t_prepare = Instant::now();
    for (on, cached, comm, len) in [
        (a_shared, &mut ws.shared_a, grid.row_comm(), m_loc * max_w),
        (b_shared, &mut ws.shared_b, grid.col_comm(), n_loc * max_w),
    ] {
        if on {
            let t = Instant::now();
            let (w, fresh) = SharedPanels::obtain(cached.take(), rt, comm, slots, len)?;
            if fresh {
                counters.allocations += 1;
                counters.allocated_bytes +=
                    (comm.size() as usize * slots * len * size_of::<T>()) as u64;
                rec.record(Activity::Allocate, t, None, 0, 0);
            }
            *cached = Some(w);
        }
    }
    let a_len = if a_local || a_shared {
        0
    } else {
        m_loc * max_w
    };
    let b_len = if b_local || b_shared {
        0
    } else {
        n_loc * max_w
    };
    ws.reserve(rt, slots, a_len, b_len, &mut counters, rec)?;
    // A panel of several k-blocks of B is joined into one w x n_loc matrix before its product.
    let several = panels.iter().any(|p| p.len() > 1);
    let join_len = if b_local || !several {
        0
    } else {
        n_loc * max_w
    };
    Workspace::grow(rt, &mut ws.join, join_len, &mut counters, rec)?;
    // The arrays the products read in place, page-locked whole before the first product:
    // the caller's local A / B where any panel reads them in place, local C, and the shared
    // windows once per window. Left to the products, each view would be registered on the
    // first call that meets it, inside the timed products. A registration the runtime holds
    // costs it a check. Redistributed operands read in place live for this call: they are
    // page-locked here and released at its end.
    let mut call_prepared: Vec<&[T]> = Vec::new();
    if to_accelerators {
        let a_in_place = panels.iter().any(|p| a_mine(p));
        let b_in_place = panels.iter().any(|p| b_mine(p));
        for (on, keep, local) in [
            (a_in_place, keep_a, a_src.local),
            (b_in_place, keep_b, b_src.local),
        ] {
            if on && !local.is_empty() {
                let t = Instant::now();
                rt.prepare_host(local, HostAccess::Read)?;
                rec.record(Activity::Prepare, t, None, 0, size_of_val(local) as u64);
                if keep {
                    counters.registration_checks += 1;
                } else {
                    counters.registrations += 1;
                    counters.registered_bytes += size_of_val(local) as u64;
                    call_prepared.push(local);
                }
            }
        }
        if !c_local.is_empty() {
            let t = Instant::now();
            rt.prepare_host(&*c_local, HostAccess::ReadWrite)?;
            rec.record(Activity::Prepare, t, None, 0, size_of_val(&*c_local) as u64);
            counters.registration_checks += 1;
        }
        for w in [&mut ws.shared_a, &mut ws.shared_b].into_iter().flatten() {
            if !w.is_prepared() {
                let t = Instant::now();
                w.prepare(rt)?;
                counters.registrations += w.segments_count();
                counters.registered_bytes += w.bytes() as u64;
                rec.record(Activity::Prepare, t, None, 0, w.bytes() as u64);
            }
        }
    }
    report.prepare_seconds = t_prepare.elapsed().as_secs_f64();

    // Local C on a device: the workspace's buffer (allocated when it is missing or too small),
    // C copied into it unless beta = 0 (C is then not read).
    let mut c_dev = match c_device {
        Some(d) => {
            let need = (m_loc * n_loc).max(1);
            let fits = ws
                .c_dev
                .as_ref()
                .is_some_and(|(dd, mm)| *dd == d && mm.rows() >= need);
            if !fits {
                ws.c_dev = None;
                let t = Instant::now();
                ws.c_dev = Some((d, rt.alloc_matrix::<T>(d, need, 1)?));
                counters.allocations += 1;
                counters.allocated_bytes += (need * size_of::<T>()) as u64;
                rec.record(
                    Activity::Allocate,
                    t,
                    None,
                    0,
                    (need * size_of::<T>()) as u64,
                );
            }
            let addr = ws.c_dev.as_ref().map_or(0, |(_, mm)| mm.raw().addr);
            // SAFETY: `addr` is the start of the workspace's allocation on device `d` of at
            // least m_loc * n_loc elements, which stays allocated until this call returns
            // (the view is dropped before), and nothing else uses it meanwhile.
            let view = unsafe { rt.borrow_matrix::<T>(d, addr, m_loc, n_loc, m_loc.max(1))? };
            if read_c {
                let t = Instant::now();
                copy_to_device(rt, MatRef::new(c_local, m_loc, n_loc, c_ld.max(1))?, &view)?;
                let bytes = (m_loc * n_loc * size_of::<T>()) as u64;
                counters.c_uploaded_bytes += bytes;
                rec.record(Activity::Upload, t, None, 0, bytes);
            }
            Some(view)
        }
        None => None,
    };
    report.c_on_device = c_dev.is_some();

    let b_join = &mut ws.join;
    // The ring as raw parts: a slot is lent to the broadcasts of one panel (mutably) and then
    // to that panel's product (shared) while other slots are lent to later panels, which the
    // borrow checker cannot see through one scope of requests. `Ring` keeps the rule.
    let ring = Ring::new(&mut ws.a[..slots], &mut ws.b[..slots], a_len, b_len);
    let (a_win, b_win) = (
        ws.shared_a.as_ref().filter(|_| a_shared),
        ws.shared_b.as_ref().filter(|_| b_shared),
    );
    let pack_threads = opts
        .pack_threads
        .unwrap_or_else(|| default_pack_threads(on_node));
    let ctx = PostContext {
        grid,
        a_src: &a_src,
        b_src: &b_src,
        m_loc,
        n_loc,
        a_local,
        b_local,
        transport: match opts.transport {
            Transport::Shared => Transport::default(),
            t => t,
        },
        a_win,
        b_win,
        pack_threads,
    };
    // Bytes a panel brings to this process, and those it packs for the others.
    let moved = |p: &[KBlock]| -> (u64, u64) {
        let (mut received, mut packed) = (0u64, 0u64);
        for blk in p {
            let sz = size_of::<T>() as u64;
            if !a_local {
                let b = (m_loc * blk.len) as u64 * sz;
                if blk.a_owner == mycol {
                    packed += b
                } else {
                    received += b
                }
            }
            if !b_local {
                let b = (n_loc * blk.len) as u64 * sz;
                if blk.b_owner == myrow {
                    packed += b
                } else {
                    received += b
                }
            }
        }
        (received, packed)
    };
    let mut beta_now = beta;
    let mut c_host = Some(c_local);
    let n_panels = panels.len();
    let mut products: Vec<LocalProduct> = Vec::new();
    let outcome = scope(|sc| -> Result<()> {
        let mut flights: VecDeque<Flight<'_, '_, T, _>> = VecDeque::new();
        let mut signals = Signals::new(slots);
        let mut done = vec![false; n_panels];
        // The first panel whose product has not finished: panels lowest .. lowest + slots
        // are the window, the only ones posted or multiplied (a panel's buffer slot is its
        // index modulo `slots`).
        let mut lowest = 0;
        let mut posted = 0;
        let mut outcome = Ok(());
        // Posts the next panel in k order, `posted`: its slot's previous panel's broadcasts
        // complete first (that panel was multiplied: posted - slots < lowest).
        macro_rules! post_next {
            () => {{
                let q = posted;
                if q >= slots {
                    let t = Instant::now();
                    if finish(&mut flights, q - slots, rec) {
                        rec.record(Activity::Wait, t, Some(q - slots), (q - slots) % slots, 0);
                    }
                }
                flights.retain(|f| f.panel + slots > q || !f.bcs.is_empty());
                let t = Instant::now();
                // SAFETY: slot q % slots was last used by panel q - slots, whose product has
                // finished and whose broadcasts have completed; a product running now is of
                // a panel p != q of the window (q is posted once), which reads slot
                // p % slots != q % slots, or reads in place.
                let (a_buf, b_buf) = unsafe { ring.lend_mut(q % slots) };
                let new = post_panel(
                    &ctx,
                    sc,
                    a_buf,
                    b_buf,
                    &panels[q],
                    q % slots,
                    &mut signals,
                    &mut || {
                        progress_all(&mut flights, rec);
                    },
                );
                let (received, packed) = moved(&panels[q]);
                counters.received_bytes += received;
                counters.packed_bytes += packed;
                rec.record(Activity::Post, t, Some(q), q % slots, packed);
                flights.push_back(Flight {
                    panel: q,
                    slot: q % slots,
                    since: t,
                    bytes: received + packed,
                    bcs: new,
                });
                posted += 1;
            }};
        }
        while lowest < n_panels {
            let window = lowest..(lowest + slots).min(n_panels);
            progress_all(&mut flights, rec);
            let in_place = |p: usize| a_mine(&panels[p]) && b_mine(&panels[p]);
            // The first panel of the window ready to multiply: its operands are mine, or
            // have arrived. None: post the next panel, or wait for the first one posted.
            let ready = window.clone().find(|&p| {
                let arrived =
                    p < posted && flights.iter().all(|f| f.panel != p || f.bcs.is_empty());
                !done[p] && (in_place(p) || arrived)
            });
            let p = match ready {
                Some(p) => p,
                None if posted < window.end => {
                    post_next!();
                    continue;
                }
                None => {
                    let p = window.clone().find(|&p| !done[p]).unwrap_or(lowest);
                    let t = Instant::now();
                    finish(&mut flights, p, rec);
                    rec.record(Activity::Wait, t, Some(p), p % slots, 0);
                    report.wait_seconds += t.elapsed().as_secs_f64();
                    p
                }
            };
            let panel = &panels[p];
            let w = panel_len(panel);
            let first = panel[0];
            let (a_here, b_here) = (a_mine(panel), b_mine(panel));
            // A panel read wholly in place does not touch its slot, which its own post may
            // be packing meanwhile.
            let (mut a_slot, mut b_slot): (&[T], &[T]) = if a_here && b_here {
                counters.in_place_products += 1;
                (&[], &[])
            } else {
                // SAFETY: panel p is not read wholly in place, so it was ready because its
                // broadcasts had completed (it was posted, its slot filled); the slot is lent
                // to no other panel until this product has finished (the window's other
                // panels take other slots).
                unsafe { ring.lend(p % slots) }
            };
            // Shared panels are read in their owner's segment, after its stores (the "ready"
            // signal has arrived).
            if let Some(win) = a_win.filter(|_| !a_here) {
                win.sync();
                let (ptr, len) = win.slot(first.a_owner, p % slots, m_loc * w);
                // SAFETY: the owner packed this slot before signalling and rewrites it only
                // after this process's "done" for this panel, sent after the product below.
                a_slot = unsafe { std::slice::from_raw_parts(ptr, len) };
            }
            if let Some(win) = b_win.filter(|_| !b_here) {
                win.sync();
                let (ptr, len) = win.slot(first.b_owner, p % slots, n_loc * w);
                // SAFETY: as for A.
                b_slot = unsafe { std::slice::from_raw_parts(ptr, len) };
            }
            // This panel's operands: views of the local arrays, of the received buffers, or of
            // the joined B panel.
            let (a_data, a_ld) = if a_here {
                let l0 = a_src.k_axis.local_index(a_src.k0 + first.k) - a_src.k_base;
                // (Empty when this process has no rows of C: a redistributed A is empty then.)
                let at = a_src.mn_start + l0 * a_src.ld;
                (a_src.local.get(at..).unwrap_or(&[]), a_src.ld)
            } else {
                (&a_slot[..m_loc * w], m_loc.max(1))
            };
            let (b_data, b_ld): (&[T], usize) = if b_here {
                let l0 = b_src.k_axis.local_index(b_src.k0 + first.k) - b_src.k_base;
                let at = l0 + b_src.mn_start * b_src.ld;
                (b_src.local.get(at..).unwrap_or(&[]), b_src.ld)
            } else if panel.len() == 1 {
                (&b_slot[..n_loc * w], w.max(1))
            } else {
                let t = Instant::now();
                join_b(&b_slot[..n_loc * w], panel, n_loc, w, b_join);
                rec.record(Activity::Join, t, Some(p), p % slots, 0);
                (&b_join[..n_loc * w], w.max(1))
            };
            let c_host_now = c_host.as_deref_mut();
            let c_dev_now = c_dev.as_mut();
            let gemm_opts = &gemm_opts;
            let t_c = Instant::now();
            let res = std::thread::scope(|ts| {
                let job = ts.spawn(move || -> Result<LocalProduct> {
                    let av = MatRef::new(a_data, m_loc, w, a_ld)?;
                    let bv = MatRef::new(b_data, w, n_loc, b_ld)?;
                    let (n, t) = (Trans::N, Instant::now());
                    let r = match (c_dev_now, c_host_now) {
                        (Some(d), _) => {
                            rt.gemm_with(n, n, alpha, av, bv, beta_now, d, gemm_opts)?
                        }
                        (None, Some(c_host)) => {
                            let cv = MatMut::new(c_host, m_loc, n_loc, c_ld.max(1))?;
                            rt.gemm_with(n, n, alpha, av, bv, beta_now, cv, gemm_opts)?
                        }
                        (None, None) => return Err(DistError::Grid("local C lent twice".into())),
                    };
                    // The product step from its start on this process's side (the thread
                    // spawned), so that what the MPI thread does meanwhile lies inside it.
                    rec.record(Activity::Product, t_c, Some(p), p % slots, 0);
                    let secs = t.elapsed().as_secs_f64();
                    Ok(LocalProduct::new(p, m_loc, n_loc, w, secs, &r))
                });
                // While the runtime computes: pack and post the panels of the window (this
                // one too, when it was multiplied in place before anyone had it), and move
                // the broadcasts along (MPI moves data only inside its calls unless it has a
                // progress thread).
                while posted < window.end {
                    post_next!();
                }
                while !job.is_finished() {
                    if !progress_all(&mut flights, rec) {
                        std::thread::yield_now();
                    } else {
                        std::thread::sleep(Duration::from_micros(200));
                    }
                }
                job.join()
                    .unwrap_or_else(|_| Err(DistError::Grid("local GEMM thread panicked".into())))
            });
            report.compute_seconds += t_c.elapsed().as_secs_f64();
            match res {
                Ok(product) => products.push(product),
                Err(e) => {
                    outcome = Err(e);
                    break;
                }
            }
            beta_now = T::from_f64(1.0);
            done[p] = true;
            while lowest < n_panels && done[lowest] {
                lowest += 1;
            }
            // The owners of shared panels may pack into this slot again.
            if a_win.is_some() && !a_here {
                signals.done(grid.row_comm(), first.a_owner, first.seq, sc);
            }
            if b_win.is_some() && !b_here {
                signals.done(grid.col_comm(), first.b_owner, first.seq, sc);
            }
        }
        // Broadcasts still in flight (the owner's last sends, or after an error) complete
        // before their buffers go, and the readers of this process's shared panels say they
        // are done with them: the others' products this process waits for.
        let t = Instant::now();
        let mut waited = false;
        for f in flights.iter_mut() {
            for bc in f.bcs.drain(..) {
                bc.wait();
                waited = true;
            }
        }
        waited |= signals.wait();
        if waited {
            rec.record(Activity::Wait, t, None, 0, 0);
            report.wait_seconds += t.elapsed().as_secs_f64();
        }
        outcome
    });
    report.products = products;
    let mut result = outcome;
    if result.is_ok() {
        if let (Some(d), Some(c_host)) = (&c_dev, c_host) {
            let t = Instant::now();
            result = rt
                .download(d, MatMut::new(c_host, m_loc, n_loc, c_ld.max(1))?)
                .map_err(DistError::from);
            let bytes = (m_loc * n_loc * size_of::<T>()) as u64;
            counters.c_downloaded_bytes += bytes;
            rec.record(Activity::Download, t, None, 0, bytes);
        }
    }
    drop(c_dev);
    for local in call_prepared {
        if let Err(e) = rt.release_host(local) {
            result = result.and(Err(e.into()));
        }
    }
    result?;
    report.seconds = t0.elapsed().as_secs_f64();
    report.counters = counters;
    report.timeline = recorder.into_events();
    Ok(report)
}

/// A panel's broadcasts in flight on this process (empty once they have completed here).
struct Flight<'a, 'g, T, S: mpi::request::Scope<'a>> {
    panel: usize,
    slot: usize,
    since: Instant,
    bytes: u64,
    bcs: Vec<PanelBroadcast<'a, 'g, T, S>>,
}

/// Moves every broadcast in flight along, recording those that complete; whether all are
/// done.
fn progress_all<'a, T: Equivalence, S: mpi::request::Scope<'a> + Copy>(
    flights: &mut VecDeque<Flight<'a, '_, T, S>>,
    rec: &Recorder,
) -> bool {
    let mut done = true;
    for f in flights.iter_mut().filter(|f| !f.bcs.is_empty()) {
        let mut all = true;
        for bc in f.bcs.iter_mut() {
            all &= bc.progress();
        }
        if all {
            f.bcs.clear();
            rec.record(Activity::Broadcast, f.since, Some(f.panel), f.slot, f.bytes);
        }
        done &= all;
    }
    done
}

/// Blocks until panel `p`'s broadcasts have completed on this process; whether it had to.
fn finish<'a, T: Equivalence, S: mpi::request::Scope<'a> + Copy>(
    flights: &mut VecDeque<Flight<'a, '_, T, S>>,
    p: usize,
    rec: &Recorder,
) -> bool {
    let Some(f) = flights
        .iter_mut()
        .find(|f| f.panel == p && !f.bcs.is_empty())
    else {
        return false;
    };
    for bc in f.bcs.drain(..) {
        bc.wait();
    }
    rec.record(Activity::Broadcast, f.since, Some(f.panel), f.slot, f.bytes);
    true
}

/// The k-blocks grouped into panels of at most `width` (whole k-blocks; a k-block wider
/// than `width` is a panel alone).
fn group_panels(blocks: &[KBlock], width: usize) -> Vec<Vec<KBlock>> {
    let mut panels: Vec<Vec<KBlock>> = Vec::new();
    for &blk in blocks {
        match panels.last_mut() {
            Some(p) if panel_len(p) + blk.len <= width => p.push(blk),
            _ => panels.push(vec![blk]),
        }
    }
    panels
}

/// The width of a panel.
fn panel_len(p: &[KBlock]) -> usize {
    p.iter().map(|b| b.len).sum()
}

/// Threads packing a panel when none is asked for: the cores of the node shared among the
/// grid's `on_node` processes on it, at most 8 (a strided copy from memory stops gaining
/// beyond a few).
fn default_pack_threads(on_node: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    (cores / on_node.max(1)).clamp(1, 8)
}

/// Copies host matrix `host` into device matrix `dst` (same shape) over the runtime's link.
/// The runtime's [`Runtime::upload`] copies into a new allocation; local C is copied into the
/// workspace's, kept between calls.
fn copy_to_device<T: Scalar>(
    rt: &Runtime,
    host: MatRef<'_, T>,
    dst: &DeviceMatrix<T>,
) -> Result<()> {
    if (host.rows(), host.cols()) != (dst.rows(), dst.cols()) {
        return Err(DistError::Grid(format!(
            "local C is {}x{}, its device copy {}x{}",
            host.rows(),
            host.cols(),
            dst.rows(),
            dst.cols()
        )));
    }
    let link = rt
        .link(MemorySpace::HOST, dst.space())
        .ok_or_else(|| DistError::Grid(format!("no link from the host to {:?}", dst.space())))?;
    link.copy(&MatIn::Host(host).raw(), &dst.raw())?;
    link.queue().synchronize()?;
    Ok(())
}

/// The panel buffers of one call as raw parts, lent out slot by slot.
struct Ring<T> {
    a: Vec<*mut T>,
    b: Vec<*mut T>,
    a_len: usize,
    b_len: usize,
}

impl<T> Ring<T> {
    /// Takes the first `a_len` / `b_len` elements of each buffer (each at least that long).
    fn new(a: &mut [Vec<T>], b: &mut [Vec<T>], a_len: usize, b_len: usize) -> Self {
        debug_assert!(a.iter().all(|v| v.len() >= a_len) && b.iter().all(|v| v.len() >= b_len));
        Ring {
            a: a.iter_mut().map(|v| v.as_mut_ptr()).collect(),
            b: b.iter_mut().map(|v| v.as_mut_ptr()).collect(),
            a_len,
            b_len,
        }
    }

    /// Slot `s` of both operands, to be written (received into, packed).
    ///
    /// # Safety
    /// - No other reference into slot `s` is alive while the returned ones are.
    /// - The buffers given to [`Ring::new`] outlive `'r` and are not touched otherwise.
    unsafe fn lend_mut<'r>(&self, s: usize) -> (&'r mut [T], &'r mut [T]) {
        // SAFETY: each pointer is the start of a live buffer of at least that many elements
        // (Ring::new), and the caller guarantees exclusive use of the slot.
        unsafe {
            (
                std::slice::from_raw_parts_mut(self.a[s], self.a_len),
                std::slice::from_raw_parts_mut(self.b[s], self.b_len),
            )
        }
    }

    /// Slot `s` of both operands, to be read.
    ///
    /// # Safety
    /// - No mutable reference into slot `s` is alive while the returned ones are (its
    ///   broadcasts have completed).
    /// - The buffers given to [`Ring::new`] outlive `'r` and are not touched otherwise.
    unsafe fn lend<'r>(&self, s: usize) -> (&'r [T], &'r [T]) {
        // SAFETY: as in `lend_mut`, shared this time.
        unsafe {
            (
                std::slice::from_raw_parts(self.a[s], self.a_len),
                std::slice::from_raw_parts(self.b[s], self.b_len),
            )
        }
    }
}

/// The leading dimension of a redistributed B (k rows dealt over process rows): its local rows.
fn kb_local_ld(k_axis: &Axis, k0: usize, k: usize) -> usize {
    k_axis.local_range(k0, k0 + k).len().max(1)
}

/// What posting a panel needs to know.
struct PostContext<'g, 's, T> {
    grid: &'g ProcessGrid,
    a_src: &'s PanelSource<'s, T>,
    b_src: &'s PanelSource<'s, T>,
    m_loc: usize,
    n_loc: usize,
    /// The operand is read in place (its broadcast group is this process alone).
    a_local: bool,
    b_local: bool,
    /// The transport of groups without a shared window.
    transport: Transport,
    /// The shared windows of my row (A) and column (B) groups, when they are used.
    a_win: Option<&'s SharedPanels<T>>,
    b_win: Option<&'s SharedPanels<T>>,
    /// Threads packing a k-block this process owns.
    pack_threads: usize,
}

/// Cuts the panel buffers into one chunk per k-block and posts their broadcasts: A along my
/// process row from its owning column, B along my process column from its owning row. The
/// owner packs its k-block chunk by chunk as the broadcast sends it; `tick` moves the
/// broadcasts already in flight along meanwhile.
#[allow(clippy::too_many_arguments)] // the panel, its buffers and slot, and the callbacks
fn post_panel<'a, 'g, T: Copy + Send + Sync + Equivalence, S: mpi::request::Scope<'a> + Copy>(
    ctx: &PostContext<'g, '_, T>,
    sc: S,
    a_panel: &'a mut [T],
    b_panel: &'a mut [T],
    panel: &[KBlock],
    slot: usize,
    signals: &mut Signals<'a, S>,
    tick: &mut dyn FnMut(),
) -> Vec<PanelBroadcast<'a, 'g, T, S>> {
    let (grid, me) = (ctx.grid, (ctx.grid.myrow(), ctx.grid.mycol()));
    let (mut ra, mut rb) = (a_panel, b_panel);
    let mut out = Vec::with_capacity(2 * panel.len());
    for blk in panel {
        let tag = block_tag(blk.seq);
        if !ctx.a_local {
            // (A shared panel has no buffer of its own here: it is in the window.)
            let here = if ctx.a_win.is_some() {
                0
            } else {
                ctx.m_loc * blk.len
            };
            let (ca, rest) = std::mem::take(&mut ra).split_at_mut(here);
            ra = rest;
            // The panel is m_loc x len: column c is my rows of local column l0 + c.
            let (src, h) = (ctx.a_src, ctx.m_loc);
            let l0 = src.k_axis.local_index(src.k0 + blk.k) - src.k_base;
            let fill = |start: usize, out: &mut [T]| {
                pack_range(ctx.pack_threads, start, out, h, &|c| {
                    let from = src.mn_start + (l0 + c) * src.ld;
                    &src.local[from..from + h]
                })
            };
            let mine = blk.a_owner == me.1;
            out.push(match ctx.a_win {
                Some(win) => post_shared(
                    win,
                    grid.row_comm(),
                    blk,
                    blk.a_owner,
                    0,
                    ctx.m_loc * blk.len,
                    slot,
                    signals,
                    sc,
                    &fill,
                    tick,
                ),
                None => PanelBroadcast::post(
                    grid.row_comm(),
                    blk.a_owner,
                    ca,
                    ctx.transport,
                    tag,
                    sc,
                    mine.then_some(&fill as Fill<'_, T>),
                    tick,
                ),
            });
        }
        if !ctx.b_local {
            let here = if ctx.b_win.is_some() {
                0
            } else {
                ctx.n_loc * blk.len
            };
            let (cb, rest) = std::mem::take(&mut rb).split_at_mut(here);
            rb = rest;
            // The chunk is len x n_loc: column j is rows l0.. of my local column j.
            let (src, h) = (ctx.b_src, blk.len);
            let l0 = src.k_axis.local_index(src.k0 + blk.k) - src.k_base;
            let fill = |start: usize, out: &mut [T]| {
                pack_range(ctx.pack_threads, start, out, h, &|j| {
                    let from = l0 + (src.mn_start + j) * src.ld;
                    &src.local[from..from + h]
                })
            };
            let mine = blk.b_owner == me.0;
            out.push(match ctx.b_win {
                Some(win) => post_shared(
                    win,
                    grid.col_comm(),
                    blk,
                    blk.b_owner,
                    1,
                    ctx.n_loc * blk.len,
                    slot,
                    signals,
                    sc,
                    &fill,
                    tick,
                ),
                None => PanelBroadcast::post(
                    grid.col_comm(),
                    blk.b_owner,
                    cb,
                    ctx.transport,
                    tag,
                    sc,
                    mine.then_some(&fill as Fill<'_, T>),
                    tick,
                ),
            });
        }
    }
    out
}

/// The empty messages of shared panels that outlive one panel: the "done" each reader sends
/// an owner after its product, and the owner's receives of them, per operand (A, B) and slot
/// of its segment (an owner of both k-blocks of a panel waits for each separately).
struct Signals<'a, S: mpi::request::Scope<'a>> {
    owner_waits: [Vec<Vec<Signal<'a, S>>>; 2],
    reader_sends: Vec<Signal<'a, S>>,
}

/// An empty message in flight.
type Signal<'a, S> = mpi::request::Request<'a, [u8], S>;

impl<'a, S: mpi::request::Scope<'a> + Copy> Signals<'a, S> {
    fn new(slots: usize) -> Self {
        Signals {
            owner_waits: [
                (0..slots).map(|_| Vec::new()).collect(),
                (0..slots).map(|_| Vec::new()).collect(),
            ],
            reader_sends: Vec::new(),
        }
    }

    /// Tells `owner` that this process no longer reads k-block `seq` in its segment.
    fn done(&mut self, comm: &SimpleCommunicator, owner: usize, seq: usize, sc: S) {
        let to = comm.process_at_rank(owner as i32);
        self.reader_sends
            .push(to.immediate_send_with_tag(sc, &[] as &[u8], done_tag(seq)));
    }

    /// Waits until every reader of the k-block of `operand` (0 A, 1 B) last packed into
    /// `slot` is done with it.
    fn wait_slot(&mut self, operand: usize, slot: usize) {
        for r in self.owner_waits[operand][slot].drain(..) {
            r.wait_without_status();
        }
    }

    /// Waits for every signal in flight; whether there was any.
    fn wait(&mut self) -> bool {
        let mut any = false;
        for r in self
            .owner_waits
            .iter_mut()
            .flat_map(|o| o.iter_mut())
            .flat_map(|v| v.drain(..))
        {
            r.wait_without_status();
            any = true;
        }
        for r in self.reader_sends.drain(..) {
            r.wait_without_status();
            any = true;
        }
        any
    }
}

/// A k-block through a shared window: the owner waits until its slot is free, packs into it,
/// makes the stores visible and signals the others (and posts the receives of their "done");
/// the others wait for the signal.
#[allow(clippy::too_many_arguments)] // the k-block, its place and the two callbacks
fn post_shared<'a, 'g, T: Copy + Equivalence, S: mpi::request::Scope<'a> + Copy>(
    win: &SharedPanels<T>,
    comm: &'g SimpleCommunicator,
    blk: &KBlock,
    owner: usize,
    operand: usize,
    len: usize,
    slot: usize,
    signals: &mut Signals<'a, S>,
    sc: S,
    fill: Fill<'_, T>,
    tick: &mut dyn FnMut(),
) -> PanelBroadcast<'a, 'g, T, S> {
    let tag = block_tag(blk.seq);
    if comm.rank() as usize == owner {
        signals.wait_slot(operand, slot);
        let (ptr, n) = win.slot(owner, slot, len);
        // SAFETY: my slot `slot` is read by nobody now: my own product of its previous panel
        // has finished (the ring's rule) and every reader has said it is done with it.
        let out = unsafe { std::slice::from_raw_parts_mut(ptr, n) };
        let chunk = (crate::broadcast::DEFAULT_CHUNK_BYTES / std::mem::size_of::<T>()).max(1);
        for (i, c) in out.chunks_mut(chunk).enumerate() {
            fill(i * chunk, c);
            tick();
        }
        win.sync();
        let p = comm.size() as usize;
        for r in (0..p).filter(|&r| r != owner) {
            let from = comm.process_at_rank(r as i32);
            signals.owner_waits[operand][slot].push(from.immediate_receive_into_with_tag(
                sc,
                &mut [] as &mut [u8],
                done_tag(blk.seq),
            ));
        }
    }
    PanelBroadcast::post(comm, owner, &mut [], Transport::Shared, tag, sc, None, tick)
}

/// Copies elements `start..start + out.len()` of a column-major panel whose columns have
/// height `h`, column `c` being `col(c)`, on `threads` threads (pieces of at least 1 MiB).
fn pack_range<'s, T: Copy + Send + Sync + 's>(
    threads: usize,
    start: usize,
    out: &mut [T],
    h: usize,
    col: &(dyn Fn(usize) -> &'s [T] + Sync),
) {
    let piece = out
        .len()
        .div_ceil(threads.max(1))
        .max((1 << 20) / size_of::<T>().max(1));
    if piece >= out.len() {
        return pack_serial(start, out, h, col);
    }
    std::thread::scope(|ts| {
        for (i, o) in out.chunks_mut(piece).enumerate() {
            ts.spawn(move || pack_serial(start + i * piece, o, h, col));
        }
    });
}

fn pack_serial<'s, T: Copy + 's>(
    start: usize,
    out: &mut [T],
    h: usize,
    col: &dyn Fn(usize) -> &'s [T],
) {
    let mut done = 0;
    while done < out.len() {
        let at = start + done;
        let (c, r) = (at / h, at % h);
        let n = (h - r).min(out.len() - done);
        out[done..done + n].copy_from_slice(&col(c)[r..r + n]);
        done += n;
    }
}

/// Joins a B panel's k-blocks (each len x n_loc) into one w x n_loc matrix.
fn join_b<T: Copy>(chunks: &[T], panel: &[KBlock], n_loc: usize, w: usize, out: &mut [T]) {
    let mut row = 0;
    let mut at = 0;
    for blk in panel {
        for j in 0..n_loc {
            out[row + j * w..row + j * w + blk.len]
                .copy_from_slice(&chunks[at + j * blk.len..at + (j + 1) * blk.len]);
        }
        row += blk.len;
        at += blk.len * n_loc;
    }
}

/// Bytes per second one thread packs (column segments copied from memory), as the model
/// takes it.
const PACK_BYTES_PER_SEC: f64 = 4e9;

/// The model of one process's call ([`crate::schedule`]): its node, from the runtime's
/// calibrated profile, and the link panels take to it.
struct LocalModel {
    node: NodeModel,
    link: NetworkLink,
    /// Panels are read in their owners' window segments (nothing crosses a link).
    shared: bool,
    pack_rate: f64,
}

impl LocalModel {
    /// `None` without a calibrated profile of the accelerators the products use.
    /// `on_node`: the grid's processes on this node.
    fn of(
        rt: &Runtime,
        opts: &SummaOptions,
        accelerators: &[usize],
        on_node: usize,
        grid: &ProcessGrid,
    ) -> Option<Self> {
        let gpus = match &opts.devices {
            Some(d) => d.iter().filter(|i| accelerators.contains(i)).count(),
            None => accelerators.len(),
        };
        if gpus == 0 {
            return None;
        }
        let node = NodeModel::from_profile(&*rt.profile()?, gpus).ok()?;
        let one_node = on_node >= grid.comm().size() as usize;
        let net = NetworkModel::infiniband_ndr(on_node);
        let threads = opts
            .pack_threads
            .unwrap_or_else(|| default_pack_threads(on_node));
        Some(LocalModel {
            node,
            link: if one_node {
                net.intra_node
            } else {
                net.inter_node
            },
            shared: one_node && opts.transport == Transport::Shared,
            pack_rate: PACK_BYTES_PER_SEC * threads as f64,
        })
    }
}

/// How panels reach one process, for [`schedule::choose`]: the first after its owner packed
/// and sent it, unless this process owns one of the first panels of the window (it then
/// multiplies that one while the others arrive); later ones as fast as their owners pack
/// them (each packs its share) and the link carries them.
struct PanelDelivery<'a> {
    model: &'a LocalModel,
    /// Whether panel `i` of width `w` is this process's own, read in place: `(w, i)`.
    in_place_at: &'a dyn Fn(usize, usize) -> bool,
    /// Panels posted ahead: the look-ahead and the one multiplied.
    window: usize,
    /// Bytes per column of k this process receives of A and of B, and the sizes of their
    /// broadcast groups (each packs its share).
    a_per_k: f64,
    b_per_k: f64,
    a_group: f64,
    b_group: f64,
}

impl PanelDelivery<'_> {
    fn transfer(&self, bytes: f64) -> f64 {
        if self.model.shared || bytes == 0.0 {
            0.0
        } else {
            self.model.link.time(bytes)
        }
    }
}

impl schedule::Delivery for PanelDelivery<'_> {
    fn first(&self, w: usize) -> f64 {
        if (0..self.window).any(|i| (self.in_place_at)(w, i)) {
            return 0.0;
        }
        let bytes = (self.a_per_k + self.b_per_k) * w as f64;
        bytes / self.model.pack_rate + self.transfer(bytes)
    }

    fn each(&self, w: usize) -> f64 {
        let bytes = (self.a_per_k + self.b_per_k) * w as f64;
        let packing = (self.a_per_k / self.a_group + self.b_per_k / self.b_group) * w as f64
            / self.model.pack_rate;
        packing.max(self.transfer(bytes))
    }
}
