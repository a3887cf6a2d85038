//! The K-split call path ([`crate::tuning::ksplit`] is its model): each device computes
//! `alpha * op(A)[:, K_d] * op(B)[K_d, :]` into a C-sized matrix in its own memory (the root's
//! starts as the caller's C, with beta), the partials are copied to the root (peer link, else
//! through host memory) and added there with the device's tile add, and the root's result is
//! copied into C. C in host memory is written once, at the end: a failure on any device leaves
//! it untouched.

use super::decisions::DecisionKey;
use super::options::{GemmOptions, GemmReport};
use super::DevicePool;
use crate::autotune::{self, Decision};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::matrix::{DeviceMatrix, MatOut};
use crate::memory::{MemorySpace, RawTile};
use crate::operand::MatMut;
use crate::problem::{GemmProblem, Operand};
use crate::scalar::Scalar;
use crate::tuning::ksplit;
use std::sync::Arc;
use std::time::Instant;

/// A K-split the pool chose for one call.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct KSplit {
    /// Pool indices; the root (where partials are reduced) first.
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
    pub(super) fn k_split_choice(
        &self,
        problem: &GemmProblem,
        key: &DecisionKey,
        opts: &GemmOptions,
    ) -> Option<KSplit> {
        let mode = opts.k_split_mode();
        if mode == Some(false) || !problem.location(Operand::C).is_host() {
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
        let decision = self
            .decisions
            .get_or_decide(key, || self.decide(problem, opts))
            .ok()?;
        // The root: the C-split's first device when it can be one (its plan is the usual one).
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

    /// The K-split model's shares over `cands` (root first) and the C-split `decision`'s
    /// predicted time; `None` when some device's rate is unknown.
    fn k_split_model(
        &self,
        problem: &GemmProblem,
        cands: &[usize],
        decision: &Decision,
    ) -> Option<(ksplit::KShares, f64)> {
        let profile = self.profile();
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

    /// Runs `split`: the partial products side by side, one thread per device, then the
    /// reduction on the root and C's write-back.
    #[allow(clippy::too_many_arguments)] // one call's state, passed once from `gemm_with`
    pub(super) fn run_k_split<T: Scalar>(
        &self,
        problem: &GemmProblem,
        opts: &GemmOptions,
        operands: &[RawTile; 3],
        alpha: T,
        beta: T,
        split: &KSplit,
        report: &mut GemmReport,
    ) -> Result<()> {
        let (m, n) = (problem.m, problem.n);
        let root = split.devices[0];
        let mut partials: Vec<DeviceMatrix<T>> = split
            .devices
            .iter()
            .map(|&d| self.alloc_matrix::<T>(d, m, n))
            .collect::<Result<_>>()?;
        let ranges = ksplit::ranges(&split.k);
        let [a, b, c] = *operands;
        let targets: Vec<RawTile> = partials.iter().map(|p| p.raw()).collect();
        let subs: Vec<Result<GemmReport>> = std::thread::scope(|s| {
            let handles: Vec<_> = split
                .devices
                .iter()
                .enumerate()
                .map(|(n_dev, &d)| {
                    let (k0, kd) = ranges[n_dev];
                    let target = targets[n_dev];
                    s.spawn(move || -> Result<GemmReport> {
                        let is_root = n_dev == 0;
                        if is_root && !problem.beta_zero {
                            self.copy_blocking(c, target)?;
                        }
                        let sub = GemmProblem {
                            k: kd,
                            beta_zero: !is_root || problem.beta_zero,
                            locations: [a.space, b.space, target.space],
                            ..*problem
                        };
                        let ops = [
                            if problem.transa.is_transposed() {
                                a.sub(k0, 0, kd, m)
                            } else {
                                a.sub(0, k0, m, kd)
                            },
                            if problem.transb.is_transposed() {
                                b.sub(0, k0, n, kd)
                            } else {
                                b.sub(k0, 0, kd, n)
                            },
                            target,
                        ];
                        let sub_opts = GemmOptions {
                            devices: Some(vec![d]),
                            k_split: Some(false),
                            ..opts.clone()
                        };
                        let key = super::gemm::decision_key(sub, &sub_opts);
                        let sub_beta = if is_root { beta } else { T::default() };
                        let mut r = GemmReport::default();
                        self.run_recovering(
                            &sub,
                            &key,
                            &sub_opts,
                            &ops,
                            alpha,
                            sub_beta,
                            &mut r,
                            Instant::now(),
                            // The partials are the K-split's own memory, and C is written
                            // once, at the end: nothing to put back.
                            None,
                        )?;
                        Ok(r)
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|p| {
                        Err(Error::internal(crate::host_queue::panic_message(&p)))
                    })
                })
                .collect()
        });
        let subs: Vec<GemmReport> = subs.into_iter().collect::<Result<_>>()?;
        self.reduce_partials(root, &mut partials)?;
        self.copy_blocking(partials[0].raw(), c)?;
        merge_reports(report, split, &subs, problem);
        Ok(())
    }

    /// `partials[0] += partials[d]` for every other `d`, on the root device.
    fn reduce_partials<T: Scalar>(
        &self,
        root: usize,
        partials: &mut [DeviceMatrix<T>],
    ) -> Result<()> {
        let Some((acc, rest)) = partials.split_first_mut() else {
            return Ok(());
        };
        if rest.is_empty() {
            return Ok(());
        }
        let dev = self.devices[root].clone();
        let label = dev.info().label();
        let queue = dev
            .compute_queues()
            .first()
            .cloned()
            .ok_or_else(|| Error::internal(format!("{label} has no compute queue")))?;
        let (m, n) = (acc.rows(), acc.cols());
        let tmp = self.alloc_matrix::<T>(root, m, n)?;
        let mut staged: Vec<T> = Vec::new();
        for p in rest.iter() {
            if self.link(p.raw().space, tmp.raw().space).is_some() {
                self.copy_blocking(p.raw(), tmp.raw())?;
            } else {
                // No link between the two (devices of two backends): through host memory.
                staged.resize(m * n, T::default());
                let mut host = MatMut::packed(&mut staged, m, n)?;
                let host_raw = MatOut::Host(host.rb_mut()).raw();
                self.copy_blocking(p.raw(), host_raw)?;
                self.copy_blocking(host_raw, tmp.raw())?;
            }
            dev.kernel()
                .add(&queue, T::from_f64(1.0).to_value(), &tmp.raw(), &acc.raw())
                .map_err(|e| e.on_device(&label))?;
            queue.synchronize().map_err(|e| e.on_device(&label))?;
        }
        Ok(())
    }
}

/// The sub-calls' reports as one: devices in split order, K extents, traffic and products
/// summed per device; `stats.c_share` holds each device's share of K (each computes all of C).
fn merge_reports(report: &mut GemmReport, split: &KSplit, subs: &[GemmReport], p: &GemmProblem) {
    let e = p.dtype.size() as u64;
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
        st.bytes_in.push(r.stats.bytes_in.iter().sum());
        st.bytes_peer
            .push(if n == 0 { 0 } else { (p.m * p.n) as u64 * e });
        st.bytes_out
            .push(if n == 0 { (p.m * p.n) as u64 * e } else { 0 });
    }
    st.writebacks = 1;
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
