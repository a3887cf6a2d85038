//! Energy: the call's [`Objective`], each device's busy and idle power ([`DevicePower`]), the
//! subset choice under an objective ([`choose_subset_for`]) and measured joules ([`meter`]).
//!
//! The model (PARALiA's, StarPU's): energy = sum over the devices of busy power x busy time +
//! idle power x idle time over the makespan. A device left out still idles for the whole call,
//! so leaving it out saves only the difference between its busy and idle power.

pub mod meter;

use crate::balance::{DeviceRate, SubsetChoice, MIN_GAIN};
use crate::problem::GemmProblem;
use serde::{Deserialize, Serialize};

/// What the device subset and the shares are chosen for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Objective {
    /// Shortest time (the default).
    #[default]
    Time,
    /// Fewest joules.
    Energy,
    /// Smallest energy x time (energy-delay product).
    Edp,
}

impl std::str::FromStr for Objective {
    type Err = crate::Error;
    fn from_str(s: &str) -> crate::Result<Objective> {
        [Objective::Time, Objective::Energy, Objective::Edp]
            .into_iter()
            .find(|o| s.eq_ignore_ascii_case(&o.to_string()))
            .ok_or_else(|| {
                crate::Error::InvalidInput(format!("objective {s:?}: one of time, energy, edp"))
            })
    }
}

impl std::fmt::Display for Objective {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Objective::Time => "time",
            Objective::Energy => "energy",
            Objective::Edp => "edp",
        })
    }
}

/// A device's power draw, measured by calibration or estimated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DevicePower {
    /// The device's label ("cuda:0", "cpu:0").
    pub label: String,
    /// Watts while it runs GEMM tiles.
    pub busy_w: f64,
    /// Watts while it has nothing to do.
    pub idle_w: f64,
    /// Where the numbers come from ("nvml", "rapl", "estimate: ...", "test").
    pub source: String,
}

/// A CPU's estimated power when no counter can be read: `CPU_WATTS_PER_CORE` per core busy
/// (a server core at all-core turbo runs 5-10 W; 16 cores of the H200 hosts' Xeons near
/// 150 W), idle `CPU_IDLE_FRACTION` of that (package C-states keep uncore and memory awake).
pub const CPU_WATTS_PER_CORE: f64 = 9.0;
/// See [`CPU_WATTS_PER_CORE`].
pub const CPU_IDLE_FRACTION: f64 = 0.3;

/// [`DevicePower`] of a CPU of `cores` cores, from the documented estimate.
pub fn cpu_estimate(label: &str, cores: usize) -> DevicePower {
    let busy = CPU_WATTS_PER_CORE * cores.max(1) as f64;
    DevicePower {
        label: label.to_string(),
        busy_w: busy,
        idle_w: busy * CPU_IDLE_FRACTION,
        source: format!(
            "estimate: {CPU_WATTS_PER_CORE} W per core busy, {CPU_IDLE_FRACTION} of it idle"
        ),
    }
}

/// Joules of a device drawing `(busy W, idle W)` busy `busy_s` of a call of `makespan` seconds.
pub(crate) fn joules((busy_w, idle_w): (f64, f64), busy_s: f64, makespan: f64) -> f64 {
    busy_w * busy_s + idle_w * (makespan - busy_s).max(0.0)
}

/// A subset's score under an objective (smaller is better).
pub(crate) fn score(objective: Objective, seconds: f64, joules: f64) -> f64 {
    match objective {
        Objective::Time => seconds,
        Objective::Energy => joules,
        Objective::Edp => seconds * joules,
    }
}

/// One evaluated subset with its predicted energy.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ScoredSubset {
    pub subset: SubsetChoice,
    /// Joules over every candidate (those left out idle for the whole call).
    pub joules: f64,
}

/// Chooses the subset of `rates` for `objective`: the balancer's own choice for time or without
/// every candidate's power (`power[i]` = (busy W, idle W)); else the subset of least predicted
/// energy (or energy x time), a larger one winning by [`MIN_GAIN`]. Returns it and every subset
/// evaluated, best first.
pub fn choose_subset_for(
    p: &GemmProblem,
    rates: &[DeviceRate],
    power: Option<&[(f64, f64)]>,
    objective: Objective,
) -> (ScoredSubset, Vec<ScoredSubset>) {
    choose_subset_for_split(p, rates, rates, power, objective)
}

/// [`choose_subset_for`] with the rates of devices alone and beside others apart
/// ([`crate::balance::choose_subset_split`]).
pub fn choose_subset_for_split(
    p: &GemmProblem,
    rates: &[DeviceRate],
    shared: &[DeviceRate],
    power: Option<&[(f64, f64)]>,
    objective: Objective,
) -> (ScoredSubset, Vec<ScoredSubset>) {
    let score_all = |all: Vec<SubsetChoice>| -> Vec<ScoredSubset> {
        all.into_iter()
            .map(|s| {
                let joules = power.map_or(0.0, |pw| {
                    let mut busy = vec![0.0; rates.len()];
                    for (&d, &t) in s.devices.iter().zip(&s.balance.times) {
                        busy[d] = t;
                    }
                    let makespan = s.balance.makespan;
                    pw.iter()
                        .zip(&busy)
                        .map(|(&w, &t)| joules(w, t, makespan))
                        .sum()
                });
                ScoredSubset { subset: s, joules }
            })
            .collect()
    };
    let (chosen, all) = crate::balance::choose_subset_split(p, rates, shared);
    let usable = power.is_some_and(|pw| pw.len() == rates.len());
    if objective == Objective::Time || !usable {
        return (score_all(vec![chosen]).remove(0), score_all(all));
    }
    let mut scored = score_all(all);
    let key = |s: &ScoredSubset| score(objective, s.subset.balance.makespan, s.joules);
    scored.sort_by(|a, b| key(a).total_cmp(&key(b)));
    let best = key(&scored[0]);
    let chosen = scored
        .iter()
        .filter(|s| key(s) <= best * (1.0 + MIN_GAIN))
        .min_by(|a, b| {
            a.subset
                .devices
                .len()
                .cmp(&b.subset.devices.len())
                .then(key(a).total_cmp(&key(b)))
        })
        .cloned()
        .unwrap_or_else(|| scored[0].clone());
    (chosen, scored)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemorySpace;
    use crate::operand::Trans;
    use crate::scalar::DType;

    fn problem(n: usize) -> GemmProblem {
        GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m: n,
            n,
            k: n,
            dtype: DType::F64,
            beta_zero: true,
            locations: [MemorySpace::HOST; 3],
            sym: None,
        }
    }

    fn rate(flops: f64) -> DeviceRate {
        DeviceRate {
            flops_per_sec: flops,
            host_bytes_per_sec: None,
            overhead: 0.0,
        }
    }

    #[test]
    fn energy_leaves_out_the_hungry_device() {
        // A fast device drawing 400 W and a frugal one at half its speed drawing 50 W, both
        // idling at 10 W: time takes both, energy the frugal one alone.
        let p = problem(2048);
        let rates = [rate(2e9), rate(1e9)];
        let power = [(400.0, 10.0), (50.0, 10.0)];
        let (t, _) = choose_subset_for(&p, &rates, Some(&power), Objective::Time);
        assert_eq!(t.subset.devices, vec![0, 1]);
        let (e, all) = choose_subset_for(&p, &rates, Some(&power), Objective::Energy);
        assert_eq!(e.subset.devices, vec![1]);
        // The frugal device alone: 50 W for F/1e9 s plus the other idling at 10 W.
        let secs = p.flops() / 1e9;
        assert!(
            (e.joules - 60.0 * secs).abs() / (60.0 * secs) < 0.06,
            "{e:?}"
        );
        assert!(e.joules < 0.85 * t.joules);
        assert_eq!(all.len(), 3);
        // EDP weighs time too: the frugal device alone takes 3x the time for 0.4x the energy
        // (1.2x the product): both.
        let (d, _) = choose_subset_for(&p, &rates, Some(&power), Objective::Edp);
        assert_eq!(d.subset.devices, vec![0, 1]);
        // Without every device's power, the time choice.
        let (n, _) = choose_subset_for(&p, &rates, None, Objective::Energy);
        assert_eq!(n.subset.devices, vec![0, 1]);
    }

    #[test]
    fn objective_parses() {
        assert_eq!("EDP".parse::<Objective>().unwrap(), Objective::Edp);
        assert!("speed".parse::<Objective>().is_err());
        assert_eq!(Objective::default().to_string(), "time");
    }
}
