//! The autotuner: for one problem, which devices take part and with which shares, the tile,
//! the memory budgets and whether C is folded on the host ([`decide`]). With a calibrated
//! machine profile the models choose (the balancer for the shares, the pipeline model for the
//! tile); without one, fixed, documented rules do.

use crate::balance::{choose_subset_split, DeviceRate, SubsetChoice};
use crate::device::{Device, DeviceKind};
use crate::distribute;
use crate::error::{Error, Result};
use crate::memory::MemorySpace;
use crate::model::cocopelia::Offload;
use crate::model::exec::{ExecTable, ExecTime};
use crate::model::pipeline::{PipelineModel, PipelinePrediction};
use crate::problem::{GemmProblem, Operand};
use crate::profile::{MachineProfile, HOST_LABEL};
use crate::scalar::DType;
use crate::tiling::{Blocking, TileGrid};
use std::sync::Arc;

/// What the autotuner decides for one problem.
#[derive(Debug, Clone)]
pub struct Decision {
    /// The devices that take part (indices into the pool's devices).
    pub devices: Vec<usize>,
    /// Each device's share of C, in whole tiles (or a strip).
    pub weights: Vec<f64>,
    pub grid: TileGrid,
    /// C tiles accumulated together.
    pub group: usize,
    /// Bytes of each device's memory the plan may use.
    pub budgets: Vec<u64>,
    /// Fold products into host C on the host (the model found it faster, or the caller asked).
    pub host_fold: bool,
    /// With `host_fold`: the C tiles (the last to finish on each device) whose C is sent
    /// instead ([`crate::plan::DeviceSpec::fold_tail`]).
    pub fold_tail: usize,
    /// The device (index into `devices`) that takes a strip of C's last rows.
    pub strip: Option<usize>,
    /// The balancer's continuous shares, before rounding to whole tiles or a strip.
    pub balancer_weights: Vec<f64>,
    /// Devices the caller asked for that get no work: the model predicts that any share
    /// would slow the call (pool indices).
    pub left_out: Vec<usize>,
    /// The pipeline model's prices, where it chose the blocking (one device, a profile).
    pub prices: Option<TilePrices>,
}

/// What the pipeline model predicted for a call: its choice's seconds and each square tile's
/// (in the chosen fold mode), so that a caller who measures the call can tell a mispriced tile.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TilePrices {
    pub chosen_seconds: f64,
    /// (square tile side, predicted seconds), by side.
    pub square: Vec<(usize, f64)>,
}

impl TilePrices {
    fn of(choice: &ModelChoice) -> TilePrices {
        let mut square: Vec<(usize, f64)> = choice
            .candidates
            .iter()
            .filter(|(b, _)| b.is_square())
            .map(|(b, pred)| (b.tm, pred.seconds))
            .collect();
        square.sort_by_key(|&(t, _)| t);
        TilePrices {
            chosen_seconds: choice.predicted.seconds,
            square,
        }
    }
}

/// The inputs of [`decide`]: the problem, the pool's devices and what the caller fixed.
pub struct DecisionRequest<'a> {
    pub problem: &'a GemmProblem,
    /// Every device of the pool.
    pub devices: &'a [Arc<dyn Device>],
    /// Bytes of device memory the pool already holds per device (its workspace, ours to reuse).
    pub held: &'a [u64],
    pub profile: Option<&'a MachineProfile>,
    /// Bandwidth of the link `src -> dst` (calibrated, else nominal).
    pub link_bandwidth: &'a dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
    /// Use exactly these devices.
    pub only: Option<&'a [usize]>,
    /// Devices that failed and are not to be used (until the pool re-probes them).
    pub excluded: &'a [usize],
    /// The blocking the caller fixed.
    pub forced: Option<Blocking>,
    /// The per-device memory cap the caller set.
    pub memory_limit: Option<u64>,
    /// Host fold forced on or off, and its unfolded tail; `None`s let the model decide.
    pub host_fold: FoldRequest,
    /// What the device subset is chosen for ([`crate::energy`]).
    pub objective: crate::energy::Objective,
}

/// Decides the devices and shares, the tile, the memory budgets and the host fold; then rounds
/// the shares to whole tiles (or gives a host device a strip of rows).
///
/// # Errors
/// `Unsupported` when no device (or a device asked for) has a GEMM kernel for the dtype.
pub fn decide(req: &DecisionRequest<'_>) -> Result<Decision> {
    let problem = req.problem;
    problem.check_modelled()?;
    let dtype = problem.dtype;
    let pool = req.devices;
    let t0 = provisional_tile(problem, req.forced);
    let (devices, weights) = devices_and_shares(req, t0);
    let left_out: Vec<usize> = req
        .only
        .unwrap_or_default()
        .iter()
        .copied()
        .filter(|i| !devices.contains(i))
        .collect();
    if devices.is_empty() {
        return Err(Error::Unsupported {
            device: "pool".into(),
            detail: format!("no device supports {dtype}"),
        });
    }
    for &i in &devices {
        let d = &pool[i];
        if !d.kernel().supports(dtype) {
            return Err(Error::Unsupported {
                device: d.info().label(),
                detail: format!("no {dtype} gemm kernel"),
            });
        }
    }
    let budgets: Vec<u64> = devices
        .iter()
        .map(|&i| {
            let b = pool[i].memory_budget().saturating_add(req.held[i]);
            req.memory_limit.map_or(b, |l| b.min(l))
        })
        .collect();
    let devs: Vec<&Arc<dyn Device>> = devices.iter().map(|&i| &pool[i]).collect();
    let (blocking, host_fold, fold_tail, prices) = choose_tile(req, &devs, &budgets);
    let balancer_weights = weights.clone();
    let (grid, weights, strip) = whole_tiles(req, &devs, blocking, weights);
    Ok(Decision {
        devices,
        weights,
        grid,
        group: blocking.group,
        budgets,
        host_fold,
        fold_tail,
        strip,
        balancer_weights,
        left_out,
        prices,
    })
}

/// The devices asked for, or the subset the balancer chooses, or the default devices; with
/// the balancer's shares when rates are known, else equal ones.
fn devices_and_shares(req: &DecisionRequest<'_>, t0: usize) -> (Vec<usize>, Vec<f64>) {
    let (problem, pool, profile, link_bw) =
        (req.problem, req.devices, req.profile, req.link_bandwidth);
    let hints = PlanHints::of(req);
    match req.only {
        Some(list) => {
            // A forced set is the devices the call may use, not a duty for each
            // ([`Decision::left_out`]).
            let devs: Vec<&Arc<dyn Device>> = list.iter().map(|&i| &pool[i]).collect();
            match device_rates(problem, &devs, t0, profile, link_bw) {
                Some(r) => {
                    let (alone, shared) = subset_rates(problem, &devs, r.clone(), profile, &hints)
                        .unwrap_or_else(|| {
                            let free = PlanHints::default();
                            let r =
                                pipeline_calibrated_alone(problem, &devs, r, profile, &free, false);
                            (r.clone(), r)
                        });
                    let (chosen, _) = choose_subset_split(problem, &alone, &shared);
                    let ids = chosen.devices.iter().map(|&i| list[i]).collect();
                    (ids, chosen.balance.weights)
                }
                None => (list.to_vec(), vec![1.0 / list.len() as f64; list.len()]),
            }
        }
        None => match choose_pool_devices(
            problem,
            pool,
            req.excluded,
            t0,
            profile,
            link_bw,
            req.objective,
            &hints,
        ) {
            Some(c) => (c.devices, c.weights),
            None => {
                let d = default_devices_excluding(pool, problem.dtype, req.excluded);
                let n = d.len().max(1);
                (d, vec![1.0 / n as f64; n])
            }
        },
    }
}

/// The continuous shares rounded to whole tiles so that no device finishes late, or a strip of
/// rows for a device computing in host memory; the grid, shares and strip's device.
fn whole_tiles(
    req: &DecisionRequest<'_>,
    devs: &[&Arc<dyn Device>],
    blocking: Blocking,
    mut weights: Vec<f64>,
) -> (TileGrid, Vec<f64>, Option<usize>) {
    let problem = req.problem;
    let mut grid = blocking.grid(problem.m, problem.n, problem.k);
    let tile = blocking.tm;
    let mut strip = None;
    if devs.len() > 1 && blocking.is_square() {
        if let Some(rates) = device_rates(problem, devs, tile, req.profile, req.link_bandwidth) {
            // The rates the subset was chosen with.
            let rates = if prices_split(devs, req.profile) {
                pipeline_calibrated_shared(problem, devs, rates, req.profile, &PlanHints::of(req))
            } else {
                rates
            };
            let host_dev = devs.iter().position(|d| d.space().is_host());
            // A symmetric routine's tiles stay square and aligned with the diagonal: no strip.
            let host_dev = host_dev.filter(|_| problem.sym.is_none());
            match host_dev.and_then(|c| {
                distribute::host_strip(problem.m, problem.n, problem.k, tile, &weights, c)
            }) {
                Some(s) => {
                    grid = s.grid;
                    weights = s.weights;
                    strip = Some(s.device);
                }
                None => {
                    let n = grid.mt() * grid.nt();
                    let counts = crate::balance::tile_counts(problem, &rates, &weights, n);
                    weights = counts.iter().map(|&c| c as f64 / n as f64).collect();
                }
            }
        }
    }
    (grid, weights, strip)
}

/// The blocking (`forced` when the caller fixed it), the host fold and its unfolded tail: the
/// pipeline model's choice when a profile describes the single device, else
/// `fixed_rule_plan`'s.
fn choose_tile(
    req: &DecisionRequest<'_>,
    devices: &[&Arc<dyn Device>],
    budgets: &[u64],
) -> (Blocking, bool, usize, Option<TilePrices>) {
    let (p, forced, fold) = (req.problem, req.forced, req.host_fold);
    if let (Some(prof), [d], [budget]) = (req.profile, devices, budgets) {
        let sel = match forced {
            Some(b) => evaluate(p, d, prof, &[b], fold),
            None => model_tile(p, d, *budget, prof, fold),
        };
        if let Some(sel) = sel {
            let prices = TilePrices::of(&sel);
            return (
                sel.tile,
                fold.on.unwrap_or(sel.host_fold),
                sel.fold_tail,
                Some(prices),
            );
        }
    }
    let (tile, host_fold, tail) = fixed_rule_plan(p, devices, budgets, forced, fold);
    (tile, host_fold, tail, None)
}

/// The plan the pipeline model does not choose (several devices, or no profile): `forced` or
/// square tiles of [`default_tile`], and a host fold only when the caller asked for one.
fn fixed_rule_plan(
    p: &GemmProblem,
    devices: &[&Arc<dyn Device>],
    budgets: &[u64],
    forced: Option<Blocking>,
    fold: FoldRequest,
) -> (Blocking, bool, usize) {
    let on = fold.on.unwrap_or(false);
    (
        forced.unwrap_or_else(|| Blocking::square(default_tile(p, devices, budgets))),
        on,
        if on { fold.tail.unwrap_or(0) } else { 0 },
    )
}

/// What the caller fixed about host folds; `None`s let the model decide.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FoldRequest {
    /// Fold products into host C on the host, or send C.
    pub on: Option<bool>,
    /// With folds: the C tiles, the last to finish, whose C is sent instead
    /// ([`crate::plan::DeviceSpec::fold_tail`]).
    pub tail: Option<usize>,
    /// C is a fresh host output the devices stage ([`crate::profile::StagedOut`]); set by the
    /// pool, not the caller.
    pub staged: bool,
}

/// Unfolded tails the model weighs for a folding blocking of `tiles` C tiles (see
/// [`crate::plan::DeviceSpec::fold_tail`]).
fn fold_tails(tiles: usize) -> impl Iterator<Item = usize> {
    [0, 1, 2, 3, 4, 6, 8, 12, 16]
        .into_iter()
        .filter(move |&t| t == 0 || t < tiles)
}

/// A model-based blocking choice and every candidate's prediction.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ModelChoice {
    pub tile: Blocking,
    /// Products folded into host C on the host (see [`crate::fold`]).
    pub host_fold: bool,
    /// With `host_fold`: the last C tiles whose C is sent instead.
    pub fold_tail: usize,
    pub predicted: PipelinePrediction,
    /// Every candidate's prediction, in the chosen fold mode.
    pub candidates: Vec<(Blocking, PipelinePrediction)>,
    /// The best of the other fold mode, when both apply: (blocking, prediction).
    pub other_mode: Option<(Blocking, PipelinePrediction)>,
    /// Where the best fold beat sending C by the margin: its seconds at the fold threads'
    /// slowest wake ([`crate::fold::WAKE_SPREAD_S`]), which it must also beat sending C at.
    pub fold_slow_wake_s: Option<f64>,
}

/// Streaming blockings for thin-by-fat problems (K at least twice M and N): `tm` covering M up
/// to 8192 (contiguous A columns), narrow `tn`, deep `tk`, one C tile at a time.
pub fn streaming_candidates(m: usize, n: usize, k: usize) -> Vec<Blocking> {
    if k < 2 * m.max(n) {
        return Vec::new();
    }
    let mut out = Vec::new();
    for tm in [m.min(4096), m.min(8192)] {
        for tk in [4096, 8192] {
            for tn in [512, 1024, 2048] {
                let b = Blocking {
                    tm,
                    tn: tn.min(n),
                    tk: tk.min(k),
                    group: 1,
                };
                if tn < n && tk <= k && !out.contains(&b) {
                    out.push(b);
                }
            }
        }
    }
    out
}

/// Blockings whose copies have long columns: A tiles of `tm` rows and B tiles of `tk` rows make
/// 32 KiB columns (4096 f64, 8192 f32), narrow C tiles (`tn` 512..2048) in groups of four. On
/// H200, 8192^3 DGEMM took 30.5 ms in 4096x1024x4096/g4 against 33.7 in 3072 tiles.
pub fn deep_candidates(m: usize, n: usize, k: usize, elem_bytes: usize) -> Vec<Blocking> {
    let rows = DEEP_COLUMN_BYTES / elem_bytes.max(1);
    // Only with two k steps or more (with one, every C tile crosses both ways per product and
    // the model priced them too fast) and several C tiles.
    if m < rows || k < 2 * rows || n < 4 * 512 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for tn in [512, 1024, 2048] {
        if tn < n {
            out.push(Blocking {
                tm: rows,
                tn,
                tk: rows,
                group: crate::tiling::DEFAULT_GROUP,
            });
        }
    }
    out
}

/// Column bytes of [`deep_candidates`]' copies: the shortest that runs at full link speed
/// while products run (calibration's `strided_busy`: 46-52 GB/s from 32 KiB, 40 at 24 KiB).
pub const DEEP_COLUMN_BYTES: usize = 32 << 10;

/// The pipeline model's fastest of [`model_tile_candidates`] ([`choose`]). `None` when nothing
/// needs tiling (every operand in the device) or the profile lacks the device, links or dtype.
pub fn model_tile(
    p: &GemmProblem,
    device: &Arc<dyn Device>,
    budget: u64,
    profile: &MachineProfile,
    fold: FoldRequest,
) -> Option<ModelChoice> {
    evaluate(p, device, profile, &model_tile_candidates(p, budget), fold)
}

/// Smallest regular square candidate tile.
pub const MIN_TILE: usize = 256;
/// Largest square candidate tile.
pub const MAX_TILE: usize = 16384;

/// The square candidates `256 * 2^i` and `384 * 2^i` up to `min(max_dim, MAX_TILE)`, ascending;
/// `[max_dim]` when `max_dim < MIN_TILE` (`[1]` for an empty problem).
pub fn candidate_tiles(max_dim: usize) -> Vec<usize> {
    if max_dim < MIN_TILE {
        return vec![max_dim.max(1)];
    }
    std::iter::successors(Some(MIN_TILE), |p| Some(p * 2))
        .take_while(|&p| p <= MAX_TILE)
        .flat_map(|p| [p, p + p / 2])
        .filter(|&t| t <= MAX_TILE && t <= max_dim)
        .collect()
}

/// The blockings [`model_tile`] considers (square ones at least [`MIN_GPU_TILE`] for problems
/// of 4096 and more) whose six largest tiles fit `budget` bytes.
pub fn model_tile_candidates(p: &GemmProblem, budget: u64) -> Vec<Blocking> {
    let maxdim = p.m.max(p.n).max(p.k);
    candidate_tiles(maxdim)
        .into_iter()
        .filter(|&t| maxdim < 4 * MIN_GPU_TILE || t >= MIN_GPU_TILE)
        .map(Blocking::square)
        .chain(streaming_candidates(p.m, p.n, p.k))
        .chain(deep_candidates(p.m, p.n, p.k, p.dtype.size()))
        .filter(|b| 6 * b.grid(p.m, p.n, p.k).slot_bytes(p.dtype.size()) as u64 <= budget)
        .collect()
}

/// [`model_tile`] over the given blockings.
pub fn evaluate(
    p: &GemmProblem,
    device: &Arc<dyn Device>,
    profile: &MachineProfile,
    tiles: &[Blocking],
    fold: FoldRequest,
) -> Option<ModelChoice> {
    if p.locations.iter().all(|&l| l == device.space()) {
        return None;
    }
    let label = device.info().label();
    let (mut model, exec) = pipeline_model(
        profile,
        &label,
        p.dtype,
        device.kernel().supports_add(),
        device.info().kind == DeviceKind::Gpu,
    )?;
    if fold.staged && p.location(Operand::C).is_host() {
        model.staged_out = profile.link(&label, HOST_LABEL).and_then(|l| l.staged_out);
    }
    let offload = Offload::from_problem(p, device.space());
    let fold_applies =
        !p.beta_zero && p.location(Operand::C).is_host() && !device.space().is_host();
    choose(
        &model,
        &exec,
        &offload,
        tiles,
        fold_applies,
        fold,
        fold_rate(Some(profile)),
    )
}

/// The pipeline model of device `label` and its GEMM table for `dtype`; `late_c`: the device
/// adds tiles (C may arrive late); `gpu`: calls pay [`GPU_CALL_SETUP_S`].
pub fn pipeline_model(
    profile: &MachineProfile,
    label: &str,
    dtype: DType,
    late_c: bool,
    gpu: bool,
) -> Option<(PipelineModel, ExecTable)> {
    let calibrated = profile.device(label)?;
    let exec = calibrated.exec_table(dtype)?;
    let model = PipelineModel {
        h2d: profile.link(HOST_LABEL, label)?.tile_link(),
        d2h: profile.link(label, HOST_LABEL)?.tile_link(),
        late_c,
        host_fold: None,
        fold_tail: 0,
        dma_slowdown: calibrated.gemm_slowdown_under_dma(dtype),
        copy_slowdown: calibrated.copy_slowdown_under_gemm(dtype),
        setup_s: if gpu { GPU_CALL_SETUP_S } else { 0.0 },
        task_issue_s: if gpu { GPU_TASK_ISSUE_S } else { 0.0 },
        fold_wake_s: crate::fold::FIRST_S,
        staged_out: None,
    };
    Some((model, exec))
}

/// Predicts every blocking with and without host fold (`fold_applies`: C in host memory and
/// beta != 0; `fold.on` = `Some`: only that mode) and picks the fastest, ties to the larger
/// tile. A fold (and a tail of it left unfolded) must win by [`FOLD_MARGIN`], the best fold
/// also at the fold threads' slowest wake.
pub fn choose(
    model: &PipelineModel,
    exec: &dyn ExecTime,
    offload: &Offload,
    tiles: &[Blocking],
    fold_applies: bool,
    fold: FoldRequest,
    fold_bytes_per_sec: f64,
) -> Option<ModelChoice> {
    let best = |c: &[Cand]| {
        c.iter().copied().min_by(|a, b| {
            a.1.seconds
                .total_cmp(&b.1.seconds)
                .then((b.0.tm * b.0.tn).cmp(&(a.0.tm * a.0.tn)))
        })
    };
    // The choice `win` (blocking, prediction, tail) among `all`, beside the other mode's best.
    type Cand = (Blocking, PipelinePrediction, usize);
    let choice = |win: Cand, host_fold, all: Vec<Cand>, other: Option<Cand>, slow| ModelChoice {
        tile: win.0,
        host_fold,
        fold_tail: win.2,
        predicted: win.1,
        candidates: all.into_iter().map(|(b, p, _)| (b, p)).collect(),
        other_mode: other.map(|(b, p, _)| (b, p)),
        fold_slow_wake_s: slow,
    };
    let fold_applies = fold_applies && fold.on != Some(false);
    let mut model = model.clone();
    let plain: Vec<_> = tiles
        .iter()
        .map(|&t| (t, model.predict(offload, t, exec), 0))
        .collect();
    let plain_best = best(&plain)?;
    if !fold_applies {
        return Some(choice(plain_best, false, plain, None, None));
    }
    model.host_fold = Some(fold_bytes_per_sec);
    // A tail the model picks must beat folding every tile by more than noise; one the caller
    // fixed is taken as it is.
    let tail_margin = if fold.tail.is_none() {
        FOLD_MARGIN
    } else {
        1.0
    };
    let folded: Vec<_> = tiles
        .iter()
        .map(|&t| {
            let n = t.grid(offload.m, offload.n, offload.k);
            let n = n.mt() * n.nt();
            let tails: Vec<usize> = match fold.tail {
                Some(u) => vec![u.min(n)],
                None => fold_tails(n).collect(),
            };
            let mut pick: Option<(PipelinePrediction, usize)> = None;
            for u in tails {
                model.fold_tail = u;
                let p = model.predict(offload, t, exec);
                if pick.is_none_or(|(q, _)| p.seconds < tail_margin * q.seconds) {
                    pick = Some((p, u));
                }
            }
            let (p, u) = pick.expect("at least one tail");
            (t, p, u)
        })
        .collect();
    let fold_best = best(&folded)?;
    // Folding must also win with the slowest wake of the fold threads seen: where the first
    // fold is on a short call's critical path, a slow wake turns its gain into a loss.
    let fold_slow_wake_s = (fold.on != Some(true)
        && fold_best.1.seconds < FOLD_MARGIN * plain_best.1.seconds)
        .then(|| {
            model.fold_tail = fold_best.2;
            model.fold_wake_s = crate::fold::FIRST_S + crate::fold::WAKE_SPREAD_S;
            model.predict(offload, fold_best.0, exec).seconds
        });
    let fold_wins = fold_slow_wake_s.is_some_and(|s| s < plain_best.1.seconds);
    Some(if fold.on == Some(true) || fold_wins {
        choice(fold_best, true, folded, Some(plain_best), fold_slow_wake_s)
    } else {
        choice(plain_best, false, plain, Some(fold_best), fold_slow_wake_s)
    })
}

/// What every call costs a GPU whatever its size (registration checks, events, the final
/// synchronisation): 25-30 us on H200 (`callcost`), fitted with [`GPU_TASK_ISSUE_S`].
pub const GPU_CALL_SETUP_S: f64 = 0.037e-3;

/// Smallest square tile weighed for problems of 4096 and more: smaller tiles never won a
/// measured sweep on H200 (512 tiles took 2x the best on 4096^3), though the model rated them.
pub const MIN_GPU_TILE: usize = 1024;

/// Host time to issue one task of a GPU plan (events, stream waits, the library call): traced
/// sub-millisecond calls on H200 spent 8-10 us a task, and 4-6 us fitted the seeded sets alike.
pub const GPU_TASK_ISSUE_S: f64 = 5e-6;

/// A host fold is chosen when the model predicts it at most this fraction of the time without
/// (measurement noise). Folds win a little more than predicted: at 0.99, 16384^3 DGEMM on H200
/// sent C whole where the fold was predicted 0.7% faster and ran 3.2% faster.
pub const FOLD_MARGIN: f64 = 0.995;

/// Bytes of C per second a host fold achieves: calibrated, else a conservative estimate.
pub fn fold_rate(profile: Option<&MachineProfile>) -> f64 {
    profile
        .and_then(|p| p.host_fold_bytes_per_sec)
        .unwrap_or(crate::fold::DEFAULT_BYTES_PER_SEC)
}

/// The default devices not in `excluded`: the accelerators that support the dtype, else the
/// CPU alone (it joins accelerators only when the balancer says so).
pub fn default_devices_excluding(
    devices: &[Arc<dyn Device>],
    dtype: DType,
    excluded: &[usize],
) -> Vec<usize> {
    let usable: Vec<usize> = (0..devices.len())
        .filter(|&i| devices[i].kernel().supports(dtype) && !excluded.contains(&i))
        .collect();
    let accel: Vec<usize> = usable
        .iter()
        .copied()
        .filter(|&i| devices[i].info().kind != DeviceKind::Cpu)
        .collect();
    if accel.is_empty() {
        usable.into_iter().take(1).collect()
    } else {
        accel
    }
}

/// Default tile size: the largest dimension for one device holding every operand (no
/// tiling); else a quarter of it, rounded down to a power of two, clamped to [256, 4096] and
/// shrunk until every budget (`budgets[i]`, device `i`'s) holds 6 tiles (double-buffered A,
/// B and C).
pub fn default_tile(p: &GemmProblem, devices: &[&Arc<dyn Device>], budgets: &[u64]) -> usize {
    let maxdim = p.m.max(p.n).max(p.k).max(1);
    if let [d] = devices {
        if p.locations.iter().all(|&l| l == d.space()) {
            return maxdim;
        }
    }
    let mut t = (1usize << (maxdim / 4).max(1).ilog2())
        .clamp(256, 4096)
        .min(maxdim);
    let min_budget = devices
        .iter()
        .zip(budgets)
        .filter(|(d, _)| p.locations.iter().any(|&l| l != d.space()))
        .map(|(_, &b)| b)
        .min()
        .unwrap_or(u64::MAX);
    while t > 16 && 6 * (t * t * p.dtype.size()) as u64 > min_budget {
        t /= 2;
    }
    t
}

/// Each device's rate model for the balancer, from the profile (GEMM rate at `tile`) or what
/// devices and links know of themselves. `None` when some device's rate is unknown.
pub fn device_rates(
    p: &GemmProblem,
    devices: &[&Arc<dyn Device>],
    tile: usize,
    profile: Option<&MachineProfile>,
    link_bw: &dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
) -> Option<Vec<DeviceRate>> {
    devices
        .iter()
        .map(|d| {
            let label = d.info().label();
            let t = tile.min(p.m.max(p.n).max(p.k)).max(1);
            let flops = profile
                .and_then(|pr| pr.device(&label))
                .and_then(|dp| dp.exec_table(p.dtype))
                .map(|e| e.rate(t))
                .or_else(|| d.nominal_flops(p.dtype))?;
            let (host, overhead) = if d.space().is_host() {
                (None, 50e-6)
            } else {
                let bw = link_bw(MemorySpace::HOST, d.space()).unwrap_or(f64::INFINITY);
                // Before its first product a device waits for one A and one B tile, and a GPU
                // pays its call setup.
                let setup = if d.info().kind == DeviceKind::Gpu {
                    GPU_CALL_SETUP_S
                } else {
                    50e-6
                };
                let first = 2.0 * (t * t * p.dtype.size()) as f64 / bw;
                (Some(bw), setup + first)
            };
            Some(DeviceRate {
                flops_per_sec: flops,
                host_bytes_per_sec: host,
                overhead,
            })
        })
        .collect()
}

/// What the caller fixed that changes a device's plan, by which the balancer prices subsets.
#[derive(Debug, Clone, Copy, Default)]
pub struct PlanHints {
    pub forced: Option<Blocking>,
    pub fold: FoldRequest,
}

impl PlanHints {
    fn of(req: &DecisionRequest<'_>) -> PlanHints {
        PlanHints {
            forced: req.forced,
            fold: req.host_fold,
        }
    }
}

/// `rates` with each accelerator's scaled to the pipeline model's time for the plan it runs
/// beside other devices (`fixed_rule_plan`).
pub fn pipeline_calibrated_shared(
    p: &GemmProblem,
    devices: &[&Arc<dyn Device>],
    rates: Vec<DeviceRate>,
    profile: Option<&MachineProfile>,
    hints: &PlanHints,
) -> Vec<DeviceRate> {
    let budgets: Vec<u64> = devices.iter().map(|d| d.memory_budget()).collect();
    let (tile, on, tail) = fixed_rule_plan(p, devices, &budgets, hints.forced, hints.fold);
    let fold = FoldRequest {
        on: Some(on),
        tail: on.then_some(tail),
        staged: hints.fold.staged,
    };
    calibrated_to(p, devices, rates, profile, true, |d, profile| {
        evaluate(p, d, profile, &[tile], fold)
    })
}

/// `rates` with each accelerator's scaled to the pipeline model's time for the plan it runs
/// alone under `hints` (the balancer's rough traffic count gave the CPU too much work), the
/// fixed cost capped with `cap`.
fn pipeline_calibrated_alone(
    p: &GemmProblem,
    devices: &[&Arc<dyn Device>],
    rates: Vec<DeviceRate>,
    profile: Option<&MachineProfile>,
    hints: &PlanHints,
    cap: bool,
) -> Vec<DeviceRate> {
    calibrated_to(p, devices, rates, profile, cap, |d, profile| {
        match hints.forced {
            Some(b) => evaluate(p, d, profile, &[b], hints.fold),
            None => model_tile(p, d, d.memory_budget(), profile, hints.fold),
        }
    })
}

/// `rates` with each accelerator's scaled so that the balancer's time for the whole problem on
/// it alone is `predict`'s; host devices and accelerators without a prediction unchanged.
/// With `cap_overhead`, the balancer's fixed cost is at most half the predicted time.
fn calibrated_to(
    p: &GemmProblem,
    devices: &[&Arc<dyn Device>],
    rates: Vec<DeviceRate>,
    profile: Option<&MachineProfile>,
    cap_overhead: bool,
    predict: impl Fn(&Arc<dyn Device>, &MachineProfile) -> Option<ModelChoice>,
) -> Vec<DeviceRate> {
    let Some(profile) = profile else {
        return rates;
    };
    devices
        .iter()
        .zip(rates)
        .map(|(d, r)| {
            if d.space().is_host() {
                return r;
            }
            let Some(choice) = predict(d, profile) else {
                return r;
            };
            let total = choice.predicted.seconds;
            if !(total.is_finite() && total > 0.0) {
                return r;
            }
            // The rough overhead can exceed the whole pipeline's time on small problems.
            let overhead = if cap_overhead {
                r.overhead.min(0.5 * total)
            } else {
                r.overhead
            };
            let r = DeviceRate { overhead, ..r };
            let alone = crate::balance::makespan(p, &[r], &[1.0]) - overhead;
            let pipeline = total - overhead;
            if alone <= 0.0 || pipeline <= 0.0 {
                return r;
            }
            let f = alone / pipeline;
            DeviceRate {
                flops_per_sec: r.flops_per_sec * f,
                host_bytes_per_sec: r.host_bytes_per_sec.map(|b| b * f),
                overhead,
            }
        })
        .collect()
}

/// The balancer's rates for subsets of one device and of several, when `prices_split`: the
/// accelerator priced by its plan alone, and by the plan of several devices. `None` otherwise
/// (subsets of several accelerators are all planned alike).
pub fn subset_rates(
    p: &GemmProblem,
    devices: &[&Arc<dyn Device>],
    rates: Vec<DeviceRate>,
    profile: Option<&MachineProfile>,
    hints: &PlanHints,
) -> Option<(Vec<DeviceRate>, Vec<DeviceRate>)> {
    if !prices_split(devices, profile) {
        return None;
    }
    let alone = pipeline_calibrated_alone(p, devices, rates.clone(), profile, hints, true);
    let shared = pipeline_calibrated_shared(p, devices, rates, profile, hints);
    Some((alone, shared))
}

/// One accelerator beside devices computing in host memory, with a profile.
fn prices_split(devices: &[&Arc<dyn Device>], profile: Option<&MachineProfile>) -> bool {
    let accelerators = devices.iter().filter(|d| !d.space().is_host()).count();
    profile.is_some() && accelerators == 1 && accelerators < devices.len()
}

/// The tile the balancer's rates are read at before the tile is chosen: the forced one, else
/// 4096, never above the problem's largest dimension.
pub fn provisional_tile(problem: &GemmProblem, forced: Option<Blocking>) -> usize {
    let maxdim = problem.m.max(problem.n).max(problem.k);
    forced.map_or(4096, |b| b.tm).min(maxdim).max(1)
}

/// [`choose_devices`] among the devices of `pool` with a kernel for the dtype and not in
/// `excluded`; the indices of the result are the pool's.
#[allow(clippy::too_many_arguments)] // reason: the pool's decision inputs, each a plain value
pub fn choose_pool_devices(
    problem: &GemmProblem,
    pool: &[Arc<dyn Device>],
    excluded: &[usize],
    tile: usize,
    profile: Option<&MachineProfile>,
    link_bw: &dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
    objective: crate::energy::Objective,
    hints: &PlanHints,
) -> Option<DeviceChoice> {
    let cands: Vec<usize> = (0..pool.len())
        .filter(|&i| pool[i].kernel().supports(problem.dtype) && !excluded.contains(&i))
        .collect();
    let devs: Vec<&Arc<dyn Device>> = cands.iter().map(|&i| &pool[i]).collect();
    let mut c = choose_devices(problem, &devs, tile, profile, link_bw, objective, hints)?;
    c.devices = c.devices.iter().map(|&i| cands[i]).collect();
    Some(c)
}

/// Devices and shares chosen by the balancer.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DeviceChoice {
    /// Indices into the candidate list given.
    pub devices: Vec<usize>,
    pub weights: Vec<f64>,
    pub predicted: f64,
    /// Every subset evaluated, fastest first.
    pub evaluated: Vec<SubsetChoice>,
}

/// Chooses the subset of `candidates` and their shares for `objective` (the fastest, or with
/// every candidate's power in the profile the fewest joules or joule-seconds), each subset
/// priced by its plan under `hints`. `None` when a rate is unknown.
pub fn choose_devices(
    p: &GemmProblem,
    candidates: &[&Arc<dyn Device>],
    tile: usize,
    profile: Option<&MachineProfile>,
    link_bw: &dyn Fn(MemorySpace, MemorySpace) -> Option<f64>,
    objective: crate::energy::Objective,
    hints: &PlanHints,
) -> Option<DeviceChoice> {
    let rates = device_rates(p, candidates, tile, profile, link_bw)?;
    let (alone, shared) = subset_rates(p, candidates, rates.clone(), profile, hints)
        .unwrap_or((rates.clone(), rates));
    let (chosen, evaluated) = if objective == crate::energy::Objective::Time {
        choose_subset_split(p, &alone, &shared)
    } else {
        let power: Option<Vec<(f64, f64)>> = candidates
            .iter()
            .map(|d| profile.and_then(|pr| pr.power_of(&d.info().label())))
            .collect();
        let (chosen, scored) =
            crate::energy::choose_subset_for_split(p, &alone, &shared, power.as_deref(), objective);
        (
            chosen.subset,
            scored.into_iter().map(|s| s.subset).collect(),
        )
    };
    Some(DeviceChoice {
        devices: chosen.devices,
        weights: chosen.balance.weights,
        predicted: chosen.balance.makespan,
        evaluated,
    })
}

#[cfg(test)]
mod tests {
    /// A C-heavy problem (K small) on a 50 GB/s link with a 40 GB/s fold: folding every tile
    /// leaves the fold as the bottleneck, sending every C the link; the model sends the last
    /// tiles' C and folds the rest, and does as told when the caller fixes the tail.
    #[test]
    fn a_fold_tail_is_chosen_where_it_balances_fold_and_link() {
        use super::*;
        use crate::model::exec::fixed::FixedRate;
        let model = crate::model::pipeline::tests::model();
        let exec = FixedRate {
            flops_per_sec: 60e12,
        };
        let o = Offload::from_host_flags(16384, 16384, 2048, DType::F64, [true; 3], false);
        let b = Blocking {
            tm: 4096,
            tn: 4096,
            tk: 2048,
            group: 4,
        };
        let pick = |blocking: Blocking, fold| {
            choose(&model, &exec, &o, &[blocking], true, fold, 40e9).unwrap()
        };
        let all_folded = FoldRequest {
            on: Some(true),
            tail: Some(0),
            ..Default::default()
        };
        let free = pick(b, FoldRequest::default());
        assert!(free.host_fold && free.fold_tail > 0, "{free:?}");
        let all = pick(b, all_folded);
        assert_eq!(all.fold_tail, 0);
        let none = pick(
            b,
            FoldRequest {
                on: Some(false),
                tail: None,
                ..Default::default()
            },
        );
        assert!(!none.host_fold);
        assert!(free.predicted.seconds < 0.9 * all.predicted.seconds.min(none.predicted.seconds));
        // One C tile at a time is replayed, and the replay sends the tail's C too: the same
        // balance is found there (before the replay knew the tail, such blockings never took
        // one).
        let one = Blocking { group: 1, ..b };
        let c = pick(one, FoldRequest::default());
        assert!(c.host_fold && c.fold_tail > 0, "{c:?}");
        let c_all = pick(one, all_folded);
        assert!(
            c.predicted.seconds < 0.9 * c_all.predicted.seconds,
            "{c:?} {c_all:?}"
        );
    }

    /// On the H200 profile, 717x4127x82 DGEMM (C in host memory, beta 1) folds ahead of
    /// sending C at the priced wake of the fold threads, but not at their slowest wake: it is
    /// not folded (measured on H200: 727 us unfolded against 944 folded). 16384^3, whose first
    /// fold hides behind later products, still folds.
    #[test]
    fn a_fold_must_win_at_the_slowest_wake() {
        use super::*;
        let prof = MachineProfile::recorded("nvidia-h200-x1.json");
        let (model, exec) = pipeline_model(&prof, "cuda:0", DType::F64, true, true).unwrap();
        let rate = fold_rate(Some(&prof));
        let device = MemorySpace::new_device();
        let decide = |m: usize, n: usize, k: usize, fold: FoldRequest| {
            let p = GemmProblem::host_dgemm(m, n, k);
            let o = Offload::from_problem(&p, device);
            let cands = model_tile_candidates(&p, u64::MAX);
            choose(&model, &exec, &o, &cands, true, fold, rate).unwrap()
        };
        let small = decide(717, 4127, 82, FoldRequest::default());
        assert!(!small.host_fold, "{small:?}");
        let folded = decide(
            717,
            4127,
            82,
            FoldRequest {
                on: Some(true),
                tail: None,
                ..Default::default()
            },
        );
        assert!(
            folded.predicted.seconds < FOLD_MARGIN * small.predicted.seconds,
            "the fold is priced ahead at the usual wake: {folded:?} {small:?}"
        );
        let large = decide(16384, 16384, 16384, FoldRequest::default());
        assert!(large.host_fold, "{large:?}");
    }

    #[test]
    fn square_candidates() {
        assert_eq!(
            super::candidate_tiles(100_000),
            vec![256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288, 16384]
        );
        assert_eq!(super::candidate_tiles(1000), vec![256, 384, 512, 768]);
        assert_eq!(super::candidate_tiles(100), vec![100]);
        assert_eq!(super::candidate_tiles(0), vec![1]);
    }

    #[test]
    fn candidates() {
        use super::*;
        // Thin-by-fat: streaming blockings, one C tile at a time, A tiles whole columns.
        let s = streaming_candidates(4096, 4096, 32768);
        assert!(!s.is_empty());
        assert!(s
            .iter()
            .all(|b| b.group == 1 && b.tm == 4096 && b.tn < 4096));
        assert!(s.iter().all(|b| b.tk == 4096 || b.tk == 8192));
        // Square or fat-by-thin: none.
        assert!(streaming_candidates(8192, 8192, 8192).is_empty());
        assert!(streaming_candidates(32768, 32768, 4096).is_empty());
        let p = GemmProblem::host_dgemm;
        // From 4096 on, no square tile under MIN_GPU_TILE; smaller problems keep them.
        let big = model_tile_candidates(&p(4096, 4096, 4096), u64::MAX);
        assert!(big.iter().all(|b| b.tm >= MIN_GPU_TILE));
        assert!(model_tile_candidates(&p(2048, 2048, 2048), u64::MAX)
            .iter()
            .any(|b| b.tm < MIN_GPU_TILE));
        // The budget holds six of the largest tiles.
        let tight = model_tile_candidates(&p(16384, 16384, 16384), 6 * 4096 * 4096 * 8);
        assert!(tight.iter().all(|b| b.tm <= 4096));
        assert!(model_tile_candidates(&p(4096, 4096, 32768), u64::MAX).contains(&s[0]));
        // Deep blockings: 32 KiB columns for A and B (4096 rows f64, 8192 f32), narrow C tiles
        // in groups of four, only with two k steps or more.
        let d = deep_candidates(8192, 8192, 8192, 8);
        assert_eq!(d.len(), 3);
        assert!(d
            .iter()
            .all(|b| b.tm == 4096 && b.tk == 4096 && b.tn <= 2048 && b.group == 4));
        assert!(model_tile_candidates(&p(8192, 8192, 8192), u64::MAX).contains(&d[1]));
        assert!(deep_candidates(16384, 16384, 16384, 4)
            .iter()
            .all(|b| b.tm == 8192 && b.tk == 8192));
        assert!(deep_candidates(8192, 8192, 8192, 4).is_empty());
        assert!(deep_candidates(32768, 4096, 4096, 8).is_empty());
        assert!(deep_candidates(8192, 1024, 8192, 8).is_empty());
    }
}
