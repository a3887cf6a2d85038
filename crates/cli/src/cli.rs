//! The command line: global options, subcommands, and what they share.

use crate::factor::FactorCommand;
use crate::sym::{MultiplyArgs, RankArgs, Routine};
use crate::{calibrate, devices, factor, gemm, predict, simulate, tri};
use clap::{Parser, Subcommand};
use hetblas::{Result, Runtime};

#[derive(Parser, Debug)]
#[command(
    name = "hetblas",
    version,
    about = "Heterogeneous BLAS and LAPACK: one call on every GPU and the CPU of the node"
)]
pub struct Cli {
    /// Add N host-emulated devices (testing the multi-device pipeline without GPUs).
    #[arg(long, global = true, default_value_t = 0, display_order = 100)]
    emulated: usize,
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// List the devices found, and each backend that is absent with the reason.
    Devices(devices::DevicesArgs),
    /// GEMM and the routines run as its plan (their commands are `gemm`'s module's own).
    #[command(flatten)]
    Gemm(gemm::GemmCommand),
    /// Measure links and kernels; write the machine profile the models use.
    Calibrate(calibrate::CalibrateArgs),
    /// Each model's predicted time per candidate tile for a problem, and hetblas's choice.
    Predict(predict::PredictArgs),
    /// Run a TRSM (B := op(A)^-1 alpha B) on random host data; print time and GFLOP/s.
    Trsm(tri::TriArgs),
    /// Run a TRMM (B := alpha op(A) B) on random host data; print time and GFLOP/s.
    Trmm(tri::TriArgs),
    /// Replay a GEMM's (or TRSM's, TRMM's) plan on a machine profile (measured or synthetic;
    /// default: this machine's calibrated one) in virtual time: makespan and busy shares, no
    /// device needed.
    Simulate(simulate::SimulateArgs),
    /// SYRK (C = alpha op(A) op(A)^T + beta C, one triangle) on random host data, timed.
    Syrk(RankArgs),
    /// HERK (C = alpha op(A) op(A)^H + beta C, real alpha and beta) on random host data.
    Herk(RankArgs),
    /// SYR2K (C = alpha op(A) op(B)^T + alpha op(B) op(A)^T + beta C) on random host data.
    Syr2k(RankArgs),
    /// HER2K (C = alpha op(A) op(B)^H + conj(alpha) op(B) op(A)^H + beta C) on random data.
    Her2k(RankArgs),
    /// SYMM (C = alpha A B + beta C or alpha B A + beta C, A symmetric) on random host data.
    Symm(MultiplyArgs),
    /// HEMM (SYMM with A Hermitian) on random host data.
    Hemm(MultiplyArgs),
    /// Cholesky factorization (LAPACK ?potrf) of a random Hermitian positive definite host
    /// matrix, timed; --check verifies residuals.
    Potrf(factor::FactorArgs),
    /// LU factorization with partial pivoting (LAPACK ?getrf) of a random host matrix.
    Getrf(factor::FactorArgs),
    /// Solve A X = B through LU (LAPACK ?gesv) on random host data.
    Gesv(factor::FactorArgs),
}

/// The runtime: discovery as the settings say (`--emulated` in place of `HETBLAS_EMULATED`),
/// refused when a setting's value cannot be used; a retired variable that is set is a warning.
fn runtime(emulated: usize) -> Result<Runtime> {
    let rt = builder(emulated).build()?;
    warn_retired(rt.settings());
    Ok(rt)
}

fn builder(emulated: usize) -> hetblas::RuntimeBuilder {
    let b = Runtime::builder();
    if emulated > 0 {
        b.emulated(emulated)
    } else {
        b
    }
}

/// One stderr line per retired variable that is set.
pub fn warn_retired(settings: &hetblas::Settings) {
    for note in &settings.retired {
        eprintln!("hetblas: warning: {note}");
    }
}

pub fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Command::Calibrate(a) => calibrate::run(cli.emulated, a),
        Command::Devices(a) => devices::run(builder(cli.emulated).survey(), a),
        Command::Gemm(c) => gemm::run(&runtime(cli.emulated)?, c),
        Command::Predict(a) => predict::run(&runtime(cli.emulated)?, cli.emulated, a),
        Command::Trsm(a) => tri::run(&runtime(cli.emulated)?, hetblas::TriRoutine::Trsm, a),
        Command::Trmm(a) => tri::run(&runtime(cli.emulated)?, hetblas::TriRoutine::Trmm, a),
        Command::Simulate(a) => simulate::run(a),
        Command::Syrk(a) => crate::sym::run_rank(&runtime(cli.emulated)?, Routine::Syrk, a),
        Command::Herk(a) => crate::sym::run_rank(&runtime(cli.emulated)?, Routine::Herk, a),
        Command::Syr2k(a) => crate::sym::run_rank(&runtime(cli.emulated)?, Routine::Syr2k, a),
        Command::Her2k(a) => crate::sym::run_rank(&runtime(cli.emulated)?, Routine::Her2k, a),
        Command::Symm(a) => crate::sym::run_multiply(&runtime(cli.emulated)?, Routine::Symm, a),
        Command::Hemm(a) => crate::sym::run_multiply(&runtime(cli.emulated)?, Routine::Hemm, a),
        Command::Potrf(a) => factor::run(&runtime(cli.emulated)?, FactorCommand::Potrf, a),
        Command::Getrf(a) => factor::run(&runtime(cli.emulated)?, FactorCommand::Getrf, a),
        Command::Gesv(a) => factor::run(&runtime(cli.emulated)?, FactorCommand::Gesv, a),
    }
}

/// Parses "0,2" or "cuda:0,cpu:0" into device indices.
pub fn parse_devices(rt: &Runtime, spec: &str) -> Result<Vec<usize>> {
    let mut out = Vec::new();
    for part in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let idx = match part.parse::<usize>() {
            Ok(i) => i,
            Err(_) => rt
                .devices()
                .iter()
                .position(|d| d.info().label().eq_ignore_ascii_case(part))
                .ok_or_else(|| {
                    hetblas::Error::InvalidInput(format!(
                        "no device {part:?} (see `hetblas devices`)"
                    ))
                })?,
        };
        out.push(idx);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gemm::GemmCommand;
    use clap::CommandFactory;

    /// Every argument of every (sub)command, with the path of commands that holds it.
    fn all_args(cmd: &clap::Command, path: &str, out: &mut Vec<(String, clap::Arg)>) {
        let path = format!("{path} {}", cmd.get_name());
        for a in cmd.get_arguments() {
            out.push((path.clone(), a.clone()));
        }
        for sub in cmd.get_subcommands() {
            all_args(sub, &path, out);
        }
    }

    #[test]
    fn command_is_well_formed() {
        Cli::command().debug_assert();
    }

    #[test]
    fn every_option_has_help() {
        let mut cmd = Cli::command();
        cmd.build();
        let mut args = Vec::new();
        all_args(&cmd, "", &mut args);
        // The subcommands' own arguments are there, not only the global ones.
        assert!(args.len() > 20, "only {} arguments found", args.len());
        let missing: Vec<String> = args
            .iter()
            .filter(|(_, a)| a.get_help().is_none_or(|h| h.to_string().trim().is_empty()))
            .map(|(p, a)| format!("{p}: {}", a.get_id()))
            .collect();
        assert!(missing.is_empty(), "options without help: {missing:?}");
    }

    #[test]
    fn help_texts_belong_to_their_option() {
        let cmd = Cli::command();
        let gemm = cmd.find_subcommand("gemm").expect("gemm subcommand");
        let help = |id: &str| {
            gemm.get_arguments()
                .find(|a| a.get_id() == id)
                .and_then(|a| a.get_help())
                .map(|h| h.to_string())
                .unwrap_or_default()
        };
        assert!(
            help("seed").to_lowercase().contains("seed"),
            "{}",
            help("seed")
        );
        assert!(!help("host_fold").to_lowercase().contains("seed"));
        assert!(help("host_fold").contains("host"), "{}", help("host_fold"));
    }

    fn parse(args: &[&str]) -> std::result::Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("hetblas").chain(args.iter().copied()))
    }

    #[test]
    fn negative_scalars_are_accepted() {
        let cli = parse(&["gemm", "--alpha", "-1.5", "--beta", "-0.25", "-m", "7"])
            .expect("negative alpha and beta parse");
        let Command::Gemm(GemmCommand::Gemm(g)) = cli.cmd else {
            panic!("not gemm: {:?}", cli.cmd)
        };
        assert_eq!((g.alpha, g.beta), (-1.5, -0.25));
        assert_eq!(g.shape.mnk(), (7, 4096, 4096));
        // The = form, and a negative exponent.
        let cli = parse(&["gemm", "--alpha=-2e-3"]).expect("--alpha=-2e-3 parses");
        let Command::Gemm(GemmCommand::Gemm(g)) = cli.cmd else {
            panic!("not gemm")
        };
        assert_eq!(g.alpha, -2e-3);
        // A negative number is still refused where it is not a number the option takes.
        assert!(parse(&["gemm", "--size", "-4"]).is_err());
        assert!(parse(&["gemm", "--alpha", "-x"]).is_err());
    }

    #[test]
    fn gemmt_takes_gemms_options_and_a_triangle() {
        let cli = parse(&["gemmt", "-n", "9", "-k", "4", "--transb", "T", "--check"])
            .expect("gemmt parses");
        let Command::Gemm(GemmCommand::Gemmt(g)) = cli.cmd else {
            panic!("not gemmt: {:?}", cli.cmd)
        };
        assert_eq!(g.uplo, hetblas::Uplo::Lower, "L is the default");
        assert_eq!(g.gemm.shape.mnk(), (4096, 9, 4));
        assert!(g.gemm.run.check && g.gemm.shape.transb == hetblas::Trans::T);
        let Command::Gemm(GemmCommand::Gemmt(g)) =
            parse(&["gemmt", "--uplo", "u"]).expect("uplo u").cmd
        else {
            panic!("not gemmt")
        };
        assert_eq!(g.uplo, hetblas::Uplo::Upper);
        assert!(parse(&["gemmt", "--uplo", "X"]).is_err());
    }

    /// The subcommands that run a routine.
    const ROUTINES: [&str; 13] = [
        "gemm", "gemmt", "trsm", "trmm", "syrk", "herk", "syr2k", "her2k", "symm", "hemm", "potrf",
        "getrf", "gesv",
    ];

    /// An argument as `--help` shows it: (id, short, long, help, defaults).
    type Shown = (String, Option<char>, Option<String>, String, String);

    /// The arguments of `sub` among `ids`, sorted.
    fn options_of(sub: &str, ids: &[&str]) -> Vec<Shown> {
        let cmd = Cli::command();
        let mut v: Vec<_> = cmd
            .find_subcommand(sub)
            .unwrap_or_else(|| panic!("no subcommand {sub}"))
            .get_arguments()
            .filter(|a| ids.contains(&a.get_id().as_str()))
            .map(|a| {
                (
                    a.get_id().to_string(),
                    a.get_short(),
                    a.get_long().map(str::to_string),
                    a.get_help().map(|h| h.to_string()).unwrap_or_default(),
                    format!("{:?}", a.get_default_values()),
                )
            })
            .collect();
        v.sort();
        v
    }

    /// `hetblas <routine> --help` lists the same problem and run options, with the same
    /// letters, help and defaults, for every routine (syrk took -n/--size and no -s or
    /// --trace; herk defaulted to f64 and refused it; default sizes were 2048, 4096, 16384).
    #[test]
    fn every_routine_takes_the_same_problem_and_run_options() {
        let common = [
            "size", "m", "n", "k", "dtype", "reps", "check", "trace", "devices", "seed", "json",
        ];
        let gemm = options_of("gemm", &common);
        assert_eq!(gemm.len(), common.len(), "{gemm:?}");
        for r in ROUTINES {
            assert_eq!(options_of(r, &common), gemm, "{r} differs from gemm");
        }
        // predict and simulate take the problem's options, with the same default size.
        let problem = ["size", "m", "n", "k", "dtype", "transa", "transb"];
        assert_eq!(
            options_of("predict", &problem),
            options_of("gemm", &problem)
        );
        assert_eq!(
            options_of("simulate", &problem),
            options_of("gemm", &problem)
        );
        // Every subcommand that is not a routine is known here, so a new routine is checked.
        let others = ["devices", "calibrate", "predict", "simulate"];
        for sub in Cli::command().get_subcommands() {
            let name = sub.get_name();
            assert!(
                ROUTINES.contains(&name) || others.contains(&name),
                "{name}: add it to ROUTINES (or to the other commands)"
            );
        }
    }

    /// Every command's report has a JSON form for scripts, under the same option: the
    /// routines', and predict's, simulate's and calibrate's (text only before), and devices'.
    #[test]
    fn every_command_takes_json() {
        let cmd = Cli::command();
        let gemm = options_of("gemm", &["json"]);
        assert_eq!(gemm.len(), 1);
        for sub in cmd.get_subcommands() {
            let name = sub.get_name();
            assert_eq!(options_of(name, &["json"]), gemm, "{name}");
        }
    }

    /// README.md's command list names every subcommand, each with an example that parses
    /// (the list had left out simulate, trsm, trmm and the symmetric routines).
    #[test]
    fn the_readmes_command_list_is_complete_and_its_examples_parse() {
        let readme = include_str!("../../../README.md");
        let section = readme
            .split("## The `hetblas` command")
            .nth(1)
            .and_then(|s| s.split("\n## ").next())
            .expect("README.md has the command section");
        let examples: Vec<Vec<&str>> = section
            .lines()
            .filter(|l| l.starts_with("        hetblas "))
            .map(|l| l.split_whitespace().collect())
            .collect();
        for e in &examples {
            if let Err(err) = Cli::try_parse_from(e) {
                panic!("README example {:?} does not parse: {err}", e.join(" "));
            }
        }
        for sub in Cli::command().get_subcommands() {
            let name = sub.get_name();
            assert!(
                examples.iter().any(|e| e.contains(&name))
                    || section.lines().any(|l| {
                        l.starts_with("    hetblas ") && l.split_whitespace().any(|w| w == name)
                    }),
                "{name} is not in README.md's command list"
            );
        }
        assert!(examples.len() >= 10, "{} examples", examples.len());
    }

    /// One default size everywhere, and a dtype each routine is defined for.
    #[test]
    fn defaults_are_one_size_and_a_valid_dtype() {
        let Command::Gemm(GemmCommand::Gemm(g)) = parse(&["gemm"]).expect("gemm").cmd else {
            panic!("not gemm")
        };
        let Command::Predict(p) = parse(&["predict"]).expect("predict").cmd else {
            panic!("not predict")
        };
        let Command::Herk(h) = parse(&["herk"]).expect("herk").cmd else {
            panic!("not herk")
        };
        let Command::Potrf(f) = parse(&["potrf"]).expect("potrf").cmd else {
            panic!("not potrf")
        };
        let size = crate::shape::DEFAULT_SIZE;
        assert_eq!(g.shape.mnk(), (size, size, size));
        assert_eq!(p.shape.mnk(), g.shape.mnk());
        assert_eq!(h.sym.problem.mnk(), g.shape.mnk());
        assert_eq!(f.problem.mnk(), g.shape.mnk());
        assert_eq!(g.shape.dtype(), hetblas::DType::F64);
        for (routine, dtype) in [
            (Routine::Syrk, hetblas::DType::F64),
            (Routine::Herk, hetblas::DType::C64),
            (Routine::Her2k, hetblas::DType::C64),
            (Routine::Hemm, hetblas::DType::C64),
            (Routine::Symm, hetblas::DType::F64),
        ] {
            assert_eq!(routine.dtype(h.sym.problem.dtype), dtype, "{routine:?}");
        }
        // A dtype given is taken as given.
        let Command::Hemm(m) = parse(&["hemm", "--dtype", "c32"]).expect("hemm").cmd else {
            panic!("not hemm")
        };
        assert_eq!(
            Routine::Hemm.dtype(m.sym.problem.dtype),
            hetblas::DType::C32
        );
    }
}
