//! The K-split call path ([`crate::tuning::ksplit`] is its model): each device computes
//! `alpha * op(A)[:, K_d] * op(B)[K_d, :]` into a C-sized partial in its own memory, then
//! reduces its own block of C's columns and writes it to C, all devices at once. C is written
//! only after every block is reduced: a failure before that leaves it untouched.

use super::gemm::GemmRun;
use super::options::{GemmOptions, GemmReport};
use super::workspace::lock;
use super::{op_sub, DevicePool};
use crate::autotune::{self, Decision};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::matrix::{DeviceMatrix, MatOut};
use crate::memory::{HostAccess, MemorySpace, RawTile};
use crate::operand::MatMut;
use crate::problem::{GemmProblem, Operand};
use crate::scalar::Scalar;
use crate::trace::{Activity, Interval, Trace};
use crate::tuning::ksplit;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// A K-split the pool chose for one call.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct KSplit {
    /// Pool indices, in K order (device `i` owns the `i`-th block of C's columns).
    pub devices: Vec<usize>,
    /// K extent per device.
    pub k: Vec<usize>,
    /// Predicted seconds of the K-split and of the C-split it beat (`None` when forced
    /// without rates).
    pub predicted: Option<(f64, f64)>,
}

impl DevicePool {
    /// The K-split for `problem`, when the caller asked for one (`opts.k_split`) or, left to
    /// the model, when C has fewer than two tiles per device able to take part and the model
    /// predicts the K-split faster than the C-split `decision` by [`crate::balance::MIN_GAIN`].
    /// Only with C in host memory and devices with their own memory and a tile add.
    pub(super) fn k_split_choice<T>(&self, run: &GemmRun<'_, T>) -> Option<KSplit> {
        let GemmRun {
            problem, key, opts, ..
        } = run;
        let mode = opts.k_split;
        // A K split's partial products cover all of C: only for a call over all of it.
        if mode == Some(false) || !problem.location(Operand::C).is_host() || !opts.c_region.is_all()
        {
            return None;
        }
        let mut cands: Vec<usize> = self
            .working_devices(opts)
            .into_iter()
            .filter(|&i| {
                let d = &self.devices[i];
                !d.space().is_host()
                    && d.kernel().supports(problem.dtype)
                    && d.kernel().supports_add()
            })
            .collect();
        if cands.len() < 2 {
            return None;
        }
        let (decision, _) = self
            .decisions
            .get_or_decide(key, || self.decide(problem, opts, key.4.staged))
            .ok()?;
        // The C-split's first device first, when it can take part.
        if let Some(p) = cands.iter().position(|&i| i == decision.devices[0]) {
            cands.swap(0, p);
        }
        let tiles = decision.grid.mt() * decision.grid.nt();
        if mode.is_none() && tiles >= 2 * cands.len() {
            // Enough C tiles for every device: the C split, without weighing (the common case
            // pays nothing for the K-split's model).
            return None;
        }
        let model = self.k_split_model(problem, &cands, &decision);
        match (mode, model) {
            (_, Some((shares, c_split))) => {
                let wins = shares.seconds < c_split * (1.0 - crate::balance::MIN_GAIN);
                if mode == Some(true) || wins {
                    let (devices, k) = cands
                        .iter()
                        .zip(&shares.k)
                        .filter(|(_, &k)| k > 0)
                        .map(|(&i, &k)| (i, k))
                        .unzip();
                    return Some(KSplit {
                        devices,
                        k,
                        predicted: Some((shares.seconds, c_split)),
                    });
                }
                None
            }
            (Some(true), None) => {
                // Forced without rates: equal extents.
                let n = cands.len().min(problem.k);
                let k = (0..n)
                    .map(|d| problem.k * (d + 1) / n - problem.k * d / n)
                    .collect();
                cands.truncate(n);
                Some(KSplit {
                    devices: cands,
                    k,
                    predicted: None,
                })
            }
            _ => None,
        }
    }

    /// The K-split model's shares over `cands` and the C-split `decision`'s
    /// predicted time; `None` when some device's rate is unknown.
    fn k_split_model(
        &self,
        problem: &GemmProblem,
        cands: &[usize],
        decision: &Decision,
    ) -> Option<(ksplit::KShares, f64)> {
        let profile = self.decision_profile();
        let bw = |s: MemorySpace, d: MemorySpace| self.link_bandwidth(s, d);
        let tile = decision.grid.tm;
        let devs: Vec<&Arc<dyn Device>> =
            decision.devices.iter().map(|&i| &self.devices[i]).collect();
        let rates = autotune::device_rates(problem, &devs, tile, profile.as_deref(), &bw)?;
        let c_split = crate::balance::makespan(problem, &rates, &decision.weights);
        let cdevs: Vec<&Arc<dyn Device>> = cands.iter().map(|&i| &self.devices[i]).collect();
        let shares = ksplit::choose(problem, &cdevs, tile, profile.as_deref(), &bw)?;
        Some((shares, c_split))
    }

    /// Runs `split` as the module doc says. A failure says whether C was being written: until
    /// then it is as before the call.
    pub(super) fn run_k_split<T: Scalar>(
        &self,
        run: &GemmRun<'_, T>,
        split: &KSplit,
        report: &mut GemmReport,
    ) -> std::result::Result<(), KSplitFailure> {
        let (problem, opts, [a, b, c]) = (&run.problem, run.opts, run.operands);
        let untouched = |error| KSplitFailure {
            error,
            c_written: false,
        };
        let (m, n) = (problem.m, problem.n);
        // The origin of the call's timeline: each sub-call's trace is shifted onto it.
        let t_call = Instant::now();
        let steps = Mutex::new(Steps::new(opts.trace, t_call, &self.devices));
        let partials: Vec<DeviceMatrix<T>> = split
            .devices
            .iter()
            .map(|&d| self.alloc_matrix::<T>(d, m, n))
            .collect::<Result<_>>()
            .map_err(untouched)?;
        // Each owner's buffer for the blocks it adds (the other partials', beta times the
        // caller's), allocated now: allocating after the products left both GPUs idle (H200).
        let blocks = column_blocks(n, split.devices.len());
        let scratch: Vec<Option<DeviceMatrix<T>>> = split
            .devices
            .iter()
            .zip(&blocks)
            .map(|(&d, &(_, nj))| {
                (nj > 0)
                    .then(|| self.alloc_matrix::<T>(d, m, nj))
                    .transpose()
            })
            .collect::<Result<_>>()
            .map_err(untouched)?;
        let ranges = ksplit::ranges(&split.k);
        let targets: Vec<RawTile> = partials.iter().map(|p| p.raw()).collect();
        let subs = on_threads(split.devices.iter().enumerate(), |(n_dev, &d)| {
            let (k0, kd) = ranges[n_dev];
            let target = targets[n_dev];
            let sub = GemmProblem {
                k: kd,
                beta_zero: true,
                locations: [a.space, b.space, target.space],
                ..*problem
            };
            let ops = [
                op_sub(a, problem.transa, 0, k0, m, kd),
                op_sub(b, problem.transb, k0, 0, kd, n),
                target,
            ];
            let sub_opts = GemmOptions {
                devices: Some(vec![d]),
                k_split: Some(false),
                ..opts.clone()
            };
            let sub_run = GemmRun::new(sub, &sub_opts, ops, run.alpha, T::default(), false);
            let mut r = GemmReport::default();
            let sub_start = Instant::now();
            // The partials are the K-split's own memory, and C is written once, at the end:
            // nothing to put back.
            self.run_recovering(&sub_run, &mut r, sub_start, None)?;
            Ok((r, sub_start.duration_since(t_call).as_secs_f64()))
        });
        let mut subs = subs.map_err(untouched)?;
        for (r, origin) in &mut subs {
            lock(&steps).take_sub(r, *origin);
        }
        // Every block reduced before any is written: a failure leaves C as it was.
        let owners = (0..split.devices.len()).filter_map(|o| scratch[o].as_ref().map(|t| (o, t)));
        on_threads(owners, |(owner, tmp)| {
            let (d, block) = (split.devices[owner], blocks[owner]);
            self.reduce_block(owner, d, &partials, tmp, block, run.beta, c, &steps)
        })
        .map_err(untouched)?;
        // The blocks go out all at once, under one entry for the whole of C (each copy entering
        // on its own, the second waited for the first).
        let devices = self.devices_of(&split.devices);
        // C is in host memory (`k_split_choice` splits K only then).
        let region = [(c.addr, c.extent_bytes(), HostAccess::ReadWrite)];
        let entered = self
            .enter(&devices, &region, c.is_contiguous())
            .map_err(untouched)?;
        let owners = (0..split.devices.len()).filter(|&owner| blocks[owner].1 > 0);
        let written = on_threads(owners, |owner| {
            let (j0, nj) = blocks[owner];
            let (acc, dst) = (partials[owner].raw().sub(0, j0, m, nj), c.sub(0, j0, m, nj));
            let t = Instant::now();
            self.copy_entered(acc, dst)?;
            let d = split.devices[owner];
            lock(&steps).push(d, Activity::WriteBack, "C out", t, dst.bytes() as u64);
            Ok(())
        });
        drop(entered);
        written.map_err(|error| KSplitFailure {
            error,
            c_written: true,
        })?;
        let subs: Vec<GemmReport> = subs.into_iter().map(|(r, _)| r).collect();
        merge_reports(report, split, &subs, problem);
        report.trace = steps
            .into_inner()
            .unwrap_or_else(|p| p.into_inner())
            .finish();
        Ok(())
    }

    /// Reduces the columns `block` (first, count) of C on `partials[owner]`'s device, pool index `d`:
    /// every other partial's block is copied in (peer link, else through host memory) and
    /// added, then, when beta != 0, beta times the caller's block of `c`.
    #[allow(clippy::too_many_arguments)] // one block's reduction, called from one place
    fn reduce_block<T: Scalar>(
        &self,
        owner: usize,
        d: usize,
        partials: &[DeviceMatrix<T>],
        tmp: &DeviceMatrix<T>,
        (j0, nj): (usize, usize),
        beta: T,
        c: RawTile,
        steps: &Mutex<Steps>,
    ) -> Result<()> {
        if nj == 0 {
            return Ok(());
        }
        let acc = partials[owner].raw();
        let m = acc.rows;
        let acc = acc.sub(0, j0, m, nj);
        let dev = self.devices[d].clone();
        let label = dev.info().label();
        let queue = dev
            .compute_queues()
            .first()
            .cloned()
            .ok_or_else(|| Error::internal(format!("{label} has no compute queue")))?;
        let mut staged: Vec<T> = Vec::new();
        let add = |scale: T, what: &'static str| -> Result<()> {
            let t = Instant::now();
            dev.kernel()
                .add(&queue, scale.to_value(), &tmp.raw(), &acc)
                .map_err(|e| e.on_device(&label))?;
            queue.synchronize().map_err(|e| e.on_device(&label))?;
            lock(steps).push(d, Activity::Gemm, what, t, 0);
            Ok(())
        };
        for p in partials
            .iter()
            .enumerate()
            .filter(|&(e, _)| e != owner)
            .map(|(_, p)| p)
        {
            let src = p.raw().sub(0, j0, m, nj);
            let t = Instant::now();
            if self.link(src.space, tmp.raw().space).is_some() {
                self.copy_blocking(src, tmp.raw())?;
            } else {
                // No link between the two (devices of two backends): through host memory.
                staged.resize(m * nj, T::default());
                let mut host = MatMut::packed(&mut staged, m, nj)?;
                let host_raw = MatOut::Host(host.rb_mut()).raw();
                self.copy_blocking(src, host_raw)?;
                self.copy_blocking(host_raw, tmp.raw())?;
            }
            lock(steps).push(d, Activity::Fetch, "partial", t, src.bytes() as u64);
            add(T::from_f64(1.0), "reduce")?;
        }
        if beta != T::default() {
            let src = c.sub(0, j0, m, nj);
            let t = Instant::now();
            self.copy_blocking(src, tmp.raw())?;
            lock(steps).push(d, Activity::Fetch, "C in", t, src.bytes() as u64);
            add(beta, "beta C")?;
        }
        Ok(())
    }
}

/// Why a K-split failed, and whether C was being written then (before, it is untouched and
/// the call can run again another way).
pub(super) struct KSplitFailure {
    pub error: Error,
    pub c_written: bool,
}

/// `n` columns in `parts` contiguous blocks of near-equal width, as (first, count).
fn column_blocks(n: usize, parts: usize) -> Vec<(usize, usize)> {
    let parts = parts.max(1);
    (0..parts)
        .map(|p| (n * p / parts, n * (p + 1) / parts - n * p / parts))
        .collect()
}

/// `f` on each of `items`, each on a thread of its own: the results in order, or the first
/// error, a panic becoming an internal error with its message.
fn on_threads<I: Send, R: Send>(
    items: impl Iterator<Item = I>,
    f: impl Fn(I) -> Result<R> + Sync,
) -> Result<Vec<R>> {
    let f = &f;
    let results: Vec<Result<R>> = std::thread::scope(|s| {
        let handles: Vec<_> = items.map(|i| s.spawn(move || f(i))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|p| Err(Error::internal(crate::host_queue::panic_message(&p))))
            })
            .collect()
    });
    results.into_iter().collect()
}

/// The K-split's timeline, when asked for: the sub-calls' traces on the call's clock, and its
/// own steps (each partial block in, the adds, C's blocks in and out) timed on the host around
/// their blocking calls.
struct Steps {
    /// The pool's device labels; empty when no timeline was asked for.
    labels: Vec<String>,
    origin: Instant,
    intervals: Vec<Interval>,
}

impl Steps {
    fn new(on: bool, origin: Instant, devices: &[Arc<dyn Device>]) -> Steps {
        Steps {
            labels: if on {
                devices.iter().map(|d| d.info().label()).collect()
            } else {
                Vec::new()
            },
            origin,
            intervals: Vec::new(),
        }
    }

    fn on(&self) -> bool {
        !self.labels.is_empty()
    }

    /// A step on the pool's device `device` that started at `start` and has just ended.
    fn push(
        &mut self,
        device: usize,
        activity: Activity,
        label: &'static str,
        start: Instant,
        bytes: u64,
    ) {
        let Some(name) = self.labels.get(device) else {
            return;
        };
        self.intervals.push(Interval {
            queue: format!("{}/ksplit", name.replace(':', "")),
            device: name.clone(),
            activity,
            label: label.to_string(),
            start: start.duration_since(self.origin).as_secs_f64(),
            end: self.origin.elapsed().as_secs_f64(),
            bytes,
            flops: 0.0,
        });
    }

    /// A sub-call's trace (times from its execution's start, which began `origin` + its
    /// `execute_start` seconds after the call's).
    fn take_sub(&mut self, r: &mut GemmReport, origin: f64) {
        if !self.on() {
            return;
        }
        let shift = origin + r.execute_start;
        if let Some(t) = r.trace.take() {
            self.intervals.extend(t.intervals.into_iter().map(|mut i| {
                i.start += shift;
                i.end += shift;
                i
            }));
        }
    }

    fn finish(mut self) -> Option<Trace> {
        if !self.on() {
            return None;
        }
        self.intervals.sort_by(|a, b| a.start.total_cmp(&b.start));
        Some(Trace {
            intervals: self.intervals,
        })
    }
}

/// The sub-calls' reports as one: devices in split order, K extents, traffic and products
/// summed per device; `stats.c_share` holds each device's share of K (each computes all of C).
fn merge_reports(report: &mut GemmReport, split: &KSplit, subs: &[GemmReport], p: &GemmProblem) {
    let e = p.dtype.size() as u64;
    let blocks = column_blocks(p.n, subs.len());
    report.k_split = split.k.clone();
    report.weights = split.k.iter().map(|&k| k as f64 / p.k as f64).collect();
    report.balancer_weights = report.weights.clone();
    report.tile = subs.first().and_then(|r| r.tile);
    let st = &mut report.stats;
    *st = Default::default();
    for (n, r) in subs.iter().enumerate() {
        report.devices.extend(r.devices.iter().cloned());
        report.transfers.extend(r.transfers.iter().cloned());
        report.recovered.extend(r.recovered.iter().cloned());
        st.gemms += r.stats.gemms;
        for o in 0..3 {
            st.fetches[o] += r.stats.fetches[o];
        }
        st.c_tiles.push(r.stats.c_tiles.iter().sum());
        st.c_share.push(report.weights[n]);
        // Its block of C: the others' partial blocks in, the caller's block in (beta != 0),
        // the reduced block out.
        let block = (p.m * blocks[n].1) as u64 * e;
        let c_in = if p.beta_zero { 0 } else { block };
        st.bytes_in
            .push(r.stats.bytes_in.iter().sum::<u64>() + c_in);
        st.bytes_peer.push((subs.len() as u64 - 1) * block);
        st.bytes_out.push(block);
    }
    st.writebacks = blocks.iter().filter(|b| b.1 > 0).count();
    report.host_fold = false;
    let labels = report.devices.join(", ");
    report.notes.push(match split.predicted {
        Some((ks, cs)) => format!(
            "K split over {labels} (K extents {:?}): predicted {:.3} ms against {:.3} ms for \
             the C split",
            split.k,
            ks * 1e3,
            cs * 1e3
        ),
        None => format!("K split over {labels} (K extents {:?}), as asked", split.k),
    });
}
