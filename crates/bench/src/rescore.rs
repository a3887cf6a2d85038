//! Offline model check: the measured points of a validation CSV (`validate --csv`) predicted
//! again by the model as built now, with a given profile. No GPU needed: between GPU runs this
//! shows whether a model change moves the predictions towards what was measured (the next GPU
//! validation is what counts).

use crate::validation_csv::{fields, percentile, points};
use hetblas_core::autotune::{
    choose, fold_rate, model_tile_candidates, pipeline_model, FoldRequest, GPU_CALL_SETUP_S,
};
use hetblas_core::energy::Objective;
use hetblas_core::model::cocopelia::Offload;
use hetblas_core::problem::{placement_locations, GemmProblem, Operand};
use hetblas_core::profile::MachineProfile;
use hetblas_core::sim::ProfiledMachine;
use hetblas_core::{Blocking, DType, MemorySpace, Trans};
use std::path::Path;

/// One row of a validation CSV.
struct Row {
    problem: GemmProblem,
    label: String,
    sweep: Vec<(Blocking, f64)>,
    /// The chosen tile and its measured seconds.
    chosen: (Blocking, f64),
    /// The fold mode the chosen calls ran, where the CSV records it (columns `host_fold`,
    /// `fold_tail`): whether C was folded and the unfolded tail.
    ran: Option<(bool, usize)>,
    /// The first calls' median (column `cold_s`), where recorded.
    cold: Option<f64>,
}

fn parse_rows(csv: &str, device: MemorySpace) -> Result<Vec<Row>, String> {
    let mut lines = csv.lines();
    let head = fields(lines.next().ok_or("empty CSV")?);
    let col = |name: &str| {
        head.iter()
            .position(|h| h == name)
            .ok_or(format!("CSV lacks column {name}"))
    };
    let (m, n, k, dt, pl, bz, ch, meas, sw) = (
        col("m")?,
        col("n")?,
        col("k")?,
        col("dtype")?,
        col("placement")?,
        col("beta_zero")?,
        col("chosen_tile")?,
        col("measured_s")?,
        col("sweep")?,
    );
    // Absent in CSVs from before the mode (or the first calls) was recorded.
    let mode_cols = col("host_fold").ok().zip(col("fold_tail").ok());
    let cold_col = col("cold_s").ok();
    let mut rows = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f = fields(line);
        let num = |i: usize| f[i].parse::<usize>().map_err(|e| format!("{line}: {e}"));
        let dtype: DType = f[dt].parse().map_err(|e| format!("{line}: {e}"))?;
        let locations =
            placement_locations(&f[pl], device).ok_or(format!("bad placement in {line}"))?;
        let problem = GemmProblem {
            transa: Trans::N,
            transb: Trans::N,
            m: num(m)?,
            n: num(n)?,
            k: num(k)?,
            dtype,
            beta_zero: f[bz] == "true",
            locations,
            sym: None,
        };
        let chosen: Blocking = f[ch].parse()?;
        let measured: f64 = f[meas].parse().map_err(|e| format!("{line}: {e}"))?;
        let ran = match mode_cols {
            Some((hf, ft)) if f.len() > hf.max(ft) => {
                let tail = f[ft].parse::<usize>().map_err(|e| format!("{line}: {e}"))?;
                Some((f[hf] == "true", tail))
            }
            _ => None,
        };
        let mut sweep = points(&f[sw])?;
        if !sweep.iter().any(|s| s.0 == chosen) {
            sweep.push((chosen, measured));
        }
        rows.push(Row {
            label: format!(
                "{}x{}x{} {} {}{}",
                problem.m,
                problem.n,
                problem.k,
                dtype,
                f[pl],
                if problem.beta_zero { " beta=0" } else { "" }
            ),
            problem,
            sweep,
            ran,
            cold: cold_col
                .and_then(|i| f.get(i)?.parse::<f64>().ok())
                .filter(|c| c.is_finite() && *c > 0.0),
            chosen: (chosen, measured),
        });
    }
    Ok(rows)
}

/// Prints, per problem, each measured point's prediction error and the model's choice now;
/// then the median and 90th percentile of |error| at the tiles the model would choose (where
/// measured) and over all points.
pub fn run(csv: &Path, profile: &Path) -> Result<(), String> {
    let prof = MachineProfile::load(profile).map_err(|e| e.to_string())?;
    let label = prof
        .devices
        .iter()
        .map(|d| d.label.clone())
        .find(|l| l != hetblas_core::profile::HOST_LABEL)
        .ok_or("the profile has no accelerator")?;
    let device = MemorySpace::new_device();
    let text = std::fs::read_to_string(csv).map_err(|e| format!("{}: {e}", csv.display()))?;
    let rows = parse_rows(&text, device)?;
    let (mut chosen_err, mut all_err, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ran_signed, mut sim_signed, mut cold_signed) = (Vec::new(), Vec::new(), Vec::new());
    // The same where the CSV does not record the fold mode (the model's mode at the tile).
    let (mut decided_signed, mut decided_sim) = (Vec::new(), Vec::new());
    // Per problem with a sweep: measured time of the point the model and the simulator
    // would pick among the measured ones, over the fastest measured.
    let mut sweep_picks: Vec<(f64, f64)> = Vec::new();
    let machine =
        ProfiledMachine::new(prof.clone(), Some(vec![label.clone()])).map_err(|e| e.to_string())?;
    for r in &rows {
        let p = &r.problem;
        let (model, exec) = pipeline_model(&prof, &label, p.dtype, true, true)
            .ok_or(format!("profile cannot model {}", r.label))?;
        let offload = Offload::from_problem(p, device);
        let fold_applies = !p.beta_zero && p.location(Operand::C).is_host();
        let rate = fold_rate(Some(&prof));
        // Every point was measured with each C tile folded, where folded.
        let as_measured = FoldRequest {
            on: None,
            tail: Some(0),
            ..Default::default()
        };
        let predict = |b: Blocking| {
            choose(
                &model,
                &exec,
                &offload,
                &[b],
                fold_applies,
                as_measured,
                rate,
            )
            .map(|c| (c.predicted.seconds, c.host_fold))
        };
        let cands = model_tile_candidates(p, u64::MAX);
        let pick = choose(
            &model,
            &exec,
            &offload,
            &cands,
            fold_applies,
            FoldRequest::default(),
            rate,
        )
        .ok_or("no candidate")?;
        let best = r
            .sweep
            .iter()
            .copied()
            .min_by(|a, b| a.1.total_cmp(&b.1))
            .expect("sweep holds the chosen point");
        let mut line = format!("{:<32}", r.label);
        // Per measured point: (measured, the model's prediction, the simulator's).
        let mut scored: Vec<(f64, f64, f64)> = Vec::new();
        for &(b, s) in &r.sweep {
            let (pred, fold) = predict(b).ok_or("no prediction")?;
            let sim = machine
                .plan_folded(p, b, Objective::Time, Some(&[0]), (fold, 0))
                .and_then(|mp| machine.simulate(&mp))
                .map_or(f64::INFINITY, |x| x.makespan + GPU_CALL_SETUP_S);
            scored.push((s, pred, sim));
            if std::env::var_os("RESCORE_POINTS").is_some() {
                eprintln!(
                    "point,{},{b},{fold},{s:.6},{pred:.6},{sim:.6}",
                    r.label.trim()
                );
            }
            if std::env::var("RESCORE_DEBUG").is_ok_and(|v| r.label.contains(&v)) {
                let c = choose(
                    &model,
                    &exec,
                    &offload,
                    &[b],
                    fold_applies,
                    FoldRequest::default(),
                    rate,
                )
                .unwrap();
                eprintln!("{} {b}: measured {s:.4} {:?}", r.label, c.predicted);
            }
            let e = (pred - s) / s;
            all_err.push(e.abs());
            line += &format!(" {b}{}:{:+.0}%", if fold { "f" } else { "" }, 100.0 * e);
        }
        if scored.len() > 1 {
            let fastest = scored.iter().map(|x| x.0).fold(f64::INFINITY, f64::min);
            let pick = |key: fn(&(f64, f64, f64)) -> f64| {
                scored
                    .iter()
                    .min_by(|a, b| key(a).total_cmp(&key(b)))
                    .map_or(f64::NAN, |x| x.0 / fastest)
            };
            let (m, s) = (pick(|x| x.1), pick(|x| x.2));
            sweep_picks.push((m, s));
            line += &format!(" | among the measured: model's pick {m:.3}, simulator's {s:.3}");
        }
        if std::env::var("RESCORE_DEBUG").is_ok_and(|v| r.label.contains(&v)) {
            for (b, pr) in &pick.candidates {
                eprintln!("  candidate {b}: {:.4} s", pr.seconds);
            }
            eprintln!(
                "  other fold mode: {:?}",
                pick.other_mode.map(|o| (o.0, o.1.seconds))
            );
        }
        // The chosen point in the fold mode it ran, or, where the CSV does not record it, in the
        // mode the model picks at that tile (the measured calls may have run another).
        let (b, s) = r.chosen;
        let decided = || {
            let c = choose(
                &model,
                &exec,
                &offload,
                &[b],
                fold_applies,
                FoldRequest::default(),
                rate,
            )?;
            Some((c.host_fold, c.fold_tail))
        };
        let point = match r.ran {
            Some(ran) => Some((ran, true)),
            None => decided().map(|d| (d, false)),
        };
        if let Some(((fold, tail), recorded)) = point {
            let ran = FoldRequest {
                on: Some(fold),
                tail: Some(tail),
                ..Default::default()
            };
            let c = choose(&model, &exec, &offload, &[b], fold_applies, ran, rate)
                .ok_or("no prediction of the chosen point")?;
            let e = (c.predicted.seconds - s) / s;
            let how = if recorded { "ran" } else { "decided" };
            line += &format!(" | {how} {b}{} err {:+.1}%", mode(fold, tail), 100.0 * e);
            // The same point replayed by the simulator, on the plan the pool builds for it.
            let fold_on = fold && fold_applies;
            let replayed = machine
                .plan_folded(p, b, Objective::Time, Some(&[0]), (fold_on, tail))
                .and_then(|mp| machine.simulate(&mp))
                .ok()
                .map(|sim| (sim.makespan + GPU_CALL_SETUP_S - s) / s);
            if let Some(e) = replayed {
                line += &format!(" sim {:+.1}%", 100.0 * e);
            }
            let (model_err, sim_err) = if recorded {
                (&mut ran_signed, &mut sim_signed)
            } else {
                (&mut decided_signed, &mut decided_sim)
            };
            model_err.push(e);
            sim_err.extend(replayed);
            if let (true, Some(cold)) = (recorded, r.cold) {
                let e = c.predicted.seconds / cold - 1.0;
                cold_signed.push(e);
                line += &format!(" (first calls {:+.1}%)", 100.0 * e);
            }
        }
        let known = r.sweep.iter().find(|s| s.0 == pick.tile);
        match known {
            Some(&(_, s)) => {
                let e = (pick.predicted.seconds - s) / s;
                chosen_err.push(e.abs());
                ratios.push(s / best.1);
                line += &format!(
                    " | choice {}{} err {:+.1}% vs best {} {:.3}",
                    pick.tile,
                    mode(pick.host_fold, pick.fold_tail),
                    100.0 * e,
                    best.0,
                    s / best.1
                );
            }
            None => {
                line += &format!(
                    " | choice {}{} (not measured; predicted {:.4} s, best measured {} {:.4} s)",
                    pick.tile,
                    mode(pick.host_fold, pick.fold_tail),
                    pick.predicted.seconds,
                    best.0,
                    best.1
                )
            }
        }
        println!("{line}");
    }
    let n = chosen_err.len();
    println!(
        "\nat the model's choice ({n} of {} problems measured there): {}; choice/best median {:.3}, max {:.3}",
        rows.len(),
        spread(&chosen_err),
        percentile(&ratios, 0.5),
        percentile(&ratios, 1.0),
    );
    // (what was predicted, what the count says, the model's errors, the replay's)
    for (what, whose, model_err, sim_err) in [
        (
            "as the chosen calls ran",
            " whose fold mode the CSV records",
            &ran_signed,
            &sim_signed,
        ),
        (
            "at the chosen tiles in the model's fold mode",
            "; the CSV does not record the mode",
            &decided_signed,
            &decided_sim,
        ),
    ] {
        let abs = |v: &[f64]| v.iter().map(|e| e.abs()).collect::<Vec<f64>>();
        if !model_err.is_empty() {
            println!(
                "{what} ({} problems{whose}): {}; {}",
                model_err.len(),
                spread(&abs(model_err)),
                signs(model_err)
            );
        }
        if !sim_err.is_empty() {
            println!(
                "{what}, replayed by the simulator ({} problems): {}; {}",
                sim_err.len(),
                spread(&abs(sim_err)),
                signs(sim_err)
            );
        }
    }
    if !sweep_picks.is_empty() {
        let (m, s): (Vec<f64>, Vec<f64>) = sweep_picks.iter().copied().unzip();
        let spread = |v: &[f64]| {
            format!(
                "median {:.3}, p90 {:.3}, max {:.3}, {} over 1.08",
                percentile(v, 0.5),
                percentile(v, 0.9),
                percentile(v, 1.0),
                v.iter().filter(|&&x| x > 1.08).count()
            )
        };
        println!(
            "picked among the {} sweeps' measured points, over the fastest: the model {}; the simulator {}",
            sweep_picks.len(),
            spread(&m),
            spread(&s)
        );
    }
    if !cold_signed.is_empty() {
        let abs: Vec<f64> = cold_signed.iter().map(|e| e.abs()).collect();
        println!(
            "against the first calls (cold_s) as they ran: {}; {}",
            spread(&abs),
            signs(&cold_signed)
        );
    }
    println!(
        "over all {} measured points: |error| median {:.1}%, p90 {:.1}%",
        all_err.len(),
        100.0 * percentile(&all_err, 0.5),
        100.0 * percentile(&all_err, 0.9)
    );
    Ok(())
}

/// Median, p90 and largest of relative errors, in percent.
fn spread(err: &[f64]) -> String {
    format!(
        "|error| median {:.1}%, p90 {:.1}%, max {:.1}%",
        100.0 * percentile(err, 0.5),
        100.0 * percentile(err, 0.9),
        100.0 * percentile(err, 1.0)
    )
}

/// The signed median of relative errors (predicted / measured - 1) and how many are of each
/// sign: a model off by one sign everywhere has a term measured wrong, not noise.
fn signs(err: &[f64]) -> String {
    format!(
        "signed median {:+.1}%, {} slower and {} faster than predicted",
        100.0 * percentile(err, 0.5),
        err.iter().filter(|&&e| e < 0.0).count(),
        err.iter().filter(|&&e| e > 0.0).count()
    )
}

/// A call's fold mode as the report prints it: " fold", " fold, N sent" or nothing.
fn mode(fold: bool, tail: usize) -> String {
    match (fold, tail) {
        (true, 0) => " fold".to_string(),
        (true, t) => format!(" fold, {t} sent"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "m,n,k,dtype,placement,beta_zero,chosen_tile,predicted_s,measured_s,error,best_tile,best_s,chosen_over_best,plan_new_us,plan_repeat_us,sweep,model";

    #[test]
    fn the_mode_the_chosen_calls_ran_is_read_where_recorded() {
        let row = "8192,8192,8192,f64,hhh,false,4096x1024x4096/g4,0.0307,0.0288,0.066,4096,0.029,0.99,250.0,20.0,\"2048:0.03 4096:0.029\",\"4096:0.03\"";
        let old = parse_rows(&format!("{HEAD}\n{row}\n"), MemorySpace::new_device()).unwrap();
        assert_eq!(old.len(), 1);
        assert!(old[0].ran.is_none());
        // Without the mode, the chosen point is still predicted (in the model's mode there).
        let tile = "4096x1024x4096/g4".parse::<Blocking>().unwrap();
        assert_eq!(old[0].chosen, (tile, 0.0288));
        let new = parse_rows(
            &format!("{HEAD},host_fold,fold_tail\n{row},true,4\n"),
            MemorySpace::new_device(),
        )
        .unwrap();
        assert_eq!(new[0].ran, Some((true, 4)));
        assert_eq!(new[0].chosen, (tile, 0.0288));
        // The chosen point joins the sweep when the sweep lacks it.
        assert!(new[0].sweep.iter().any(|p| p.0 == tile));
        assert!(parse_rows(
            &format!("{HEAD},host_fold,fold_tail\n{row},true,four\n"),
            MemorySpace::new_device()
        )
        .is_err());
    }
}
