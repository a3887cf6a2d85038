//! The judgement of a validation (`validate --summary`): for the sets of one or more CSVs,
//! the prediction errors with their signs and the choices against the best of each sweep, in
//! markdown, beside issue 57's targets. A set whose seed was used for tuning (a ledger of
//! such seeds, `docs/data/tuned-seeds.txt`; `validate --rescore --tuned` adds to it) is
//! reported as tuned-on: a model is judged only on sets it was not fitted to, and a seed drawn
//! from the clock when the set is measured is one nobody tuned on.

use crate::validation_csv::{fields, percentile};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

/// One measured problem of a validation CSV.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub label: String,
    pub tile: String,
    pub fold: String,
    pub predicted: f64,
    pub measured: f64,
    /// The first timed calls' median (`cold_s`), where recorded.
    pub cold: Option<f64>,
    pub chosen_over_best: f64,
    pub seed: Option<u64>,
}

impl Row {
    /// predicted / measured - 1: negative when the call ran slower than predicted.
    pub fn error(&self) -> f64 {
        self.predicted / self.measured - 1.0
    }

    /// The same against the first calls.
    pub fn cold_error(&self) -> Option<f64> {
        self.cold
            .filter(|c| c.is_finite() && *c > 0.0)
            .map(|c| self.predicted / c - 1.0)
    }
}

/// The rows of a validation CSV (columns by name; those added later are optional).
///
/// # Errors
/// A missing column of the first version, or a field that does not parse.
pub fn read(csv: &str) -> Result<Vec<Row>, String> {
    let mut lines = csv.lines();
    let head = fields(lines.next().ok_or("empty CSV")?);
    let col = |name: &str| head.iter().position(|h| h == name);
    let need = |name: &str| col(name).ok_or(format!("CSV lacks column {name}"));
    let (m, n, k, dt, bz, ch, pr, me, cb) = (
        need("m")?,
        need("n")?,
        need("k")?,
        need("dtype")?,
        need("beta_zero")?,
        need("chosen_tile")?,
        need("predicted_s")?,
        need("measured_s")?,
        need("chosen_over_best")?,
    );
    let (hf, ft, sd, cold) = (
        col("host_fold"),
        col("fold_tail"),
        col("seed"),
        col("cold_s"),
    );
    let mut rows = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let f = fields(line);
        let get = |i: usize| f.get(i).map(String::as_str).unwrap_or("");
        let num = |i: usize| {
            get(i)
                .parse::<f64>()
                .map_err(|e| format!("{line}: column {}: {e}", head[i]))
        };
        let fold = match (hf.map(get), ft.map(get)) {
            (Some("true"), Some(t)) => format!("folded, {t} sent"),
            (Some("false"), _) => "C sent".into(),
            _ => String::new(),
        };
        rows.push(Row {
            label: format!(
                "{}x{}x{} {}{}",
                get(m),
                get(n),
                get(k),
                get(dt),
                if get(bz) == "true" {
                    " beta 0"
                } else {
                    " beta 1"
                }
            ),
            tile: get(ch).to_string(),
            fold,
            predicted: num(pr)?,
            measured: num(me)?,
            cold: cold.and_then(|i| get(i).parse().ok()),
            chosen_over_best: num(cb)?,
            seed: sd.and_then(|i| get(i).parse().ok()),
        });
    }
    Ok(rows)
}

/// The seeds of a ledger file: one per line, `#` starts a comment.
pub fn ledger_seeds(text: &str) -> BTreeSet<u64> {
    text.lines()
        .filter_map(|l| l.split('#').next()?.trim().parse().ok())
        .collect()
}

/// Adds the seeds of `csv` to the ledger at `ledger` (created if absent), each once, with
/// the CSV's name.
///
/// # Errors
/// The CSV cannot be read or parsed, or the ledger cannot be written.
pub fn record_tuned(csv: &Path, ledger: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(csv).map_err(|e| format!("{}: {e}", csv.display()))?;
    let seeds: BTreeSet<u64> = read(&text)?.iter().filter_map(|r| r.seed).collect();
    let old = std::fs::read_to_string(ledger).unwrap_or_default();
    let known = ledger_seeds(&old);
    let mut out = old.clone();
    for s in seeds.difference(&known) {
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{s} # rescored (tuned on): {}", csv.display());
    }
    if out != old {
        std::fs::write(ledger, out).map_err(|e| format!("{}: {e}", ledger.display()))?;
    }
    Ok(())
}

/// Issue 57's targets for a fresh set: |error| median, p90, max; chosen/best median, max.
const TARGETS: [f64; 5] = [0.03, 0.08, 0.15, 1.02, 1.08];

/// The markdown summary of the sets in `csvs` (see the module doc).
///
/// # Errors
/// A CSV that cannot be read or parsed, or that holds no row.
pub fn markdown(csvs: &[std::path::PathBuf], ledger: Option<&Path>) -> Result<String, String> {
    let mut rows = Vec::new();
    for c in csvs {
        let text = std::fs::read_to_string(c).map_err(|e| format!("{}: {e}", c.display()))?;
        rows.extend(read(&text)?);
    }
    if rows.is_empty() {
        return Err("no measured problem".into());
    }
    let tuned = ledger
        .map(|l| ledger_seeds(&std::fs::read_to_string(l).unwrap_or_default()))
        .unwrap_or_default();
    let seeds: BTreeSet<u64> = rows.iter().filter_map(|r| r.seed).collect();
    let mut md = String::new();
    let seeds_text: Vec<String> = seeds.iter().map(u64::to_string).collect();
    let (lo, hi) = rows.iter().fold((f64::INFINITY, 0.0f64), |(a, b), r| {
        (a.min(r.measured), b.max(r.measured))
    });
    let _ = writeln!(
        md,
        "## Validation: seed {} ({} problems, measured {:.2} ms to {:.3} s)\n",
        if seeds.is_empty() {
            "none recorded".to_string()
        } else {
            seeds_text.join(", ")
        },
        rows.len(),
        lo * 1e3,
        hi
    );
    let tuned_on: Vec<&u64> = seeds.iter().filter(|s| tuned.contains(s)).collect();
    let _ = writeln!(
        md,
        "{}\n",
        if seeds.is_empty() {
            "No seed recorded: a fixed or unknown set, not a judgement of the model on new problems."
                .to_string()
        } else if tuned_on.is_empty() {
            "Judged: no seed of these sets is in the ledger of sets the model was tuned on.".into()
        } else {
            format!("TUNED-ON: seeds {tuned_on:?} are in the ledger of sets the model was tuned on; this is not a judgement.")
        }
    );
    let warm: Vec<f64> = rows.iter().map(Row::error).collect();
    let cold: Vec<f64> = rows.iter().filter_map(Row::cold_error).collect();
    let choice: Vec<f64> = rows.iter().map(|r| r.chosen_over_best).collect();
    let big: Vec<f64> = rows
        .iter()
        .filter(|r| r.measured >= 0.02)
        .map(Row::error)
        .collect();
    let stats = |e: &[f64]| -> [String; 6] {
        if e.is_empty() {
            return std::array::from_fn(|_| "-".to_string());
        }
        let abs: Vec<f64> = e.iter().map(|x| x.abs()).collect();
        let opt = e.iter().filter(|&&x| x > 0.0).count();
        let pes = e.iter().filter(|&&x| x < 0.0).count();
        [
            format!("{:.1}%", 100.0 * percentile(&abs, 0.5)),
            format!("{:.1}%", 100.0 * percentile(&abs, 0.9)),
            format!("{:.1}%", 100.0 * percentile(&abs, 1.0)),
            format!("{:+.1}%", 100.0 * percentile(e, 0.5)),
            format!("{pes} slower / {opt} faster than predicted"),
            format!(
                "{:+.1}% .. {:+.1}%",
                100.0 * percentile(e, 0.0),
                100.0 * percentile(e, 1.0)
            ),
        ]
    };
    let (w, c, b) = (stats(&warm), stats(&cold), stats(&big));
    let _ = writeln!(
        md,
        "| error (predicted / measured - 1) | steady state (`measured_s`) | first calls (`cold_s`) | calls of 20 ms or more | target |"
    );
    let _ = writeln!(md, "| --- | --- | --- | --- | --- |");
    let names = [
        "abs median",
        "abs p90",
        "abs max",
        "signed median",
        "signs",
        "range",
    ];
    let targets = [
        format!("<= {:.0}%", TARGETS[0] * 100.0),
        format!("<= {:.0}%", TARGETS[1] * 100.0),
        format!("<= {:.0}%", TARGETS[2] * 100.0),
        "near 0".into(),
        "both signs".into(),
        String::new(),
    ];
    for i in 0..6 {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} |",
            names[i], w[i], c[i], b[i], targets[i]
        );
    }
    let over = |x: f64| choice.iter().filter(|&&c| c >= x).count();
    let _ = writeln!(
        md,
        "\nChoice (the chosen plan's measured time over the best of its sweep): median **{:.3}**, p90 {:.3}, max **{:.3}**; {} of {} at 1.03 or more, {} at 1.08 or more (targets: median <= {:.2}, max <= {:.2}).\n",
        percentile(&choice, 0.5),
        percentile(&choice, 0.9),
        percentile(&choice, 1.0),
        over(1.03),
        choice.len(),
        over(1.08),
        TARGETS[3],
        TARGETS[4]
    );
    let abs: Vec<f64> = warm.iter().map(|x| x.abs()).collect();
    let met = [
        percentile(&abs, 0.5) <= TARGETS[0],
        percentile(&abs, 0.9) <= TARGETS[1],
        percentile(&abs, 1.0) <= TARGETS[2],
        warm.iter().any(|&x| x > 0.0) && warm.iter().any(|&x| x < 0.0),
        percentile(&choice, 0.5) <= TARGETS[3],
        percentile(&choice, 1.0) <= TARGETS[4],
    ];
    let _ = writeln!(
        md,
        "Acceptance (steady state): median {}, p90 {}, max {}, both signs {}, choice median {}, choice max {}.\n",
        verdict(met[0]),
        verdict(met[1]),
        verdict(met[2]),
        verdict(met[3]),
        verdict(met[4]),
        verdict(met[5])
    );
    let mut worst: Vec<&Row> = rows.iter().collect();
    worst.sort_by(|a, b| b.error().abs().total_cmp(&a.error().abs()));
    let _ = writeln!(
        md,
        "| largest errors | tile | C | predicted ms | measured ms | first calls ms | error | first calls | chosen/best |"
    );
    let _ = writeln!(
        md,
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"
    );
    for r in worst.iter().take(10) {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {:.3} | {:.3} | {} | {:+.1}% | {} | {:.3} |",
            r.label,
            r.tile,
            r.fold,
            r.predicted * 1e3,
            r.measured * 1e3,
            r.cold.map_or("-".into(), |c| format!("{:.3}", c * 1e3)),
            100.0 * r.error(),
            r.cold_error()
                .map_or("-".into(), |e| format!("{:+.1}%", 100.0 * e)),
            r.chosen_over_best
        );
    }
    Ok(md)
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "**missed**"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "m,n,k,dtype,placement,beta_zero,chosen_tile,predicted_s,measured_s,error,best_tile,best_s,chosen_over_best,plan_new_us,plan_repeat_us,sweep,model,host_fold,fold_tail,seed,case,cold_s,cold_error
100,200,300,f64,hhh,false,1024,0.0100,0.0110,-0.0909,1024,0.0110,1.0000,1,1,\"1024:0.0110\",\"1024:0.0100\",true,2,77,0,0.0120,-0.1667
400,500,600,f32,hhh,true,2048,0.0300,0.0290,0.0345,4096,0.0270,1.0741,1,1,\"2048:0.0290 4096:0.0270\",\"2048:0.0300\",false,0,77,1,0.0300,0.0
";

    #[test]
    fn reads_rows_and_judges_the_set() {
        let rows = read(CSV).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].seed, Some(77));
        assert!((rows[0].error() + 0.0909).abs() < 1e-3);
        assert!((rows[0].cold_error().unwrap() + 0.1667).abs() < 1e-3);
        assert_eq!(rows[0].fold, "folded, 2 sent");
        assert_eq!(rows[1].label, "400x500x600 f32 beta 0");
        // Old CSVs (no seed, no cold time) still read.
        let old: String = CSV
            .lines()
            .map(|l| l.split(",77,").next().unwrap().to_string() + "\n")
            .collect::<String>()
            .replace(",seed,case,cold_s,cold_error", "");
        let rows = read(&old).unwrap();
        assert_eq!(rows[1].seed, None);
        assert_eq!(rows[1].cold_error(), None);
    }

    #[test]
    fn a_tuned_seed_is_not_a_judgement() {
        let dir = std::env::temp_dir().join(format!("hetblas-summary-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("set.csv");
        std::fs::write(&csv, CSV).unwrap();
        let ledger = dir.join("tuned.txt");
        std::fs::write(&ledger, "# tuned\n2026\n").unwrap();
        let md = markdown(std::slice::from_ref(&csv), Some(&ledger)).unwrap();
        assert!(md.contains("Judged"), "{md}");
        assert!(md.contains("1 slower / 1 faster"), "{md}");
        // Choice: 1.000 and 1.074: the max misses 1.08? No: 1.074 meets it.
        assert!(md.contains("max **1.074**"), "{md}");
        record_tuned(&csv, &ledger).unwrap();
        record_tuned(&csv, &ledger).unwrap();
        let text = std::fs::read_to_string(&ledger).unwrap();
        assert_eq!(ledger_seeds(&text), BTreeSet::from([2026, 77]));
        assert_eq!(text.matches("77 #").count(), 1, "{text}");
        let md = markdown(std::slice::from_ref(&csv), Some(&ledger)).unwrap();
        assert!(md.contains("TUNED-ON"), "{md}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
