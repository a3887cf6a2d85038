//! The distributed tests, run under `mpirun -np 4 --oversubscribe` (MPI programs cannot run
//! inside the test harness itself): the SUMMA checks of `hetblas-mpi check` on every grid of four
//! ranks, with the CPU alone and with emulated devices, and a ScaLAPACK program
//! (`tests/c/pdgemm_check.c`, built with `mpicc` against Debian's ScaLAPACK) run with its own
//! PDGEMM and then with `libhetblas_mpi.so` preloaded. Needs Open MPI and ScaLAPACK
//! (`crates/mpi/ci.sh` installs them).

use std::path::PathBuf;
use std::process::Command;

fn mpirun(np: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["-np", &np.to_string(), "--oversubscribe"])
        // CI runs as root; harmless otherwise.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c
}

/// Runs `cmd`, asserting success and that stdout contains `expect`.
fn run(mut cmd: Command, expect: &str) {
    let out = cmd.output().expect("mpirun runs (Open MPI installed?)");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    print!("{stdout}");
    assert!(
        out.status.success() && stdout.contains(expect),
        "{cmd:?} failed ({}):\n{stdout}\n{stderr}",
        out.status
    );
}

#[test]
fn summa_every_grid_on_the_cpu() {
    let mut c = mpirun(4);
    c.env_remove("HETBLAS_EMULATED").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "check",
        "--grids",
        "1x4,2x2,4x1",
    ]);
    run(c, "check: 3 grids x");
}

#[test]
fn summa_every_grid_with_emulated_devices() {
    let mut c = mpirun(4);
    c.env("HETBLAS_EMULATED", "2").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "check",
        "--grids",
        "1x4,2x2,4x1",
    ]);
    run(c, "check: 3 grids x");
}

#[test]
fn summa_on_a_grid_smaller_than_the_world() {
    // Three ranks, a 1x2 grid: the third rank stays out.
    let mut c = mpirun(3);
    c.args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "check",
        "--grids",
        "1x2,2x1",
    ]);
    run(c, "check: 2 grids x");
}

/// The ScaLAPACK program, built once per test run.
fn pdgemm_program() -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/pdgemm_check.c");
    let exe = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("pdgemm_check");
    let status = Command::new("mpicc")
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .args(["-lscalapack-openmpi", "-ldl", "-lm"])
        .status()
        .expect("mpicc runs");
    assert!(status.success(), "mpicc {} failed", src.display());
    exe
}

/// `libhetblas_mpi.so`, built beside this test's binary (target/<profile>/) by `cargo build`
/// (`cargo test` alone does not link the cdylib: ci.sh builds first). A library older than the
/// sources would test old code, so that fails too.
fn cdylib() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let lib = exe
        .parent()
        .and_then(|d| d.parent())
        .expect("target/<profile>/deps")
        .join("libhetblas_mpi.so");
    let built = std::fs::metadata(&lib)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| panic!("{} not built: run `cargo build` first", lib.display()));
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src");
    for f in std::fs::read_dir(&src).expect("src/").flatten() {
        let changed = f.metadata().and_then(|m| m.modified()).expect("mtime");
        assert!(
            changed <= built,
            "{} is older than {}: run `cargo build` first",
            lib.display(),
            f.path().display()
        );
    }
    lib
}

#[test]
fn pdgemm_through_a_scalapack_program() {
    let prog = pdgemm_program();
    // ScaLAPACK's own PDGEMM first: the program's checks are right.
    let mut c = mpirun(4);
    c.arg(&prog);
    run(c, "PASS, ");
    // Then hetblas's, by preloading, with the program failing unless hetblas served it.
    let mut c = mpirun(4);
    c.arg("-x")
        .arg(format!("LD_PRELOAD={}", cdylib().display()))
        .args(["-x", "HETBLAS_EXPECT_PRELOAD=1"])
        .arg(&prog);
    run(c, "PASS, ");
}

#[test]
fn the_projection_prints_a_simulated_table_for_every_node_count() {
    let profile =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/profiles/nvidia-h200-x4.json");
    let out = Command::new(env!("CARGO_BIN_EXE_hetblas-mpi"))
        .arg("project")
        .arg("--profile")
        .arg(&profile)
        .args(["--gpus", "4,8", "--nodes", "1,4,16,64"])
        .output()
        .expect("hetblas-mpi runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("**Simulated**"), "{stdout}");
    // One row per node count and GPU count; the one-node rows are the reference (1.00).
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| nodes") && !l.starts_with("| ---"))
        .map(|l| l.split('|').map(str::trim).collect())
        .collect();
    assert_eq!(rows.len(), 8, "{stdout}");
    for r in &rows {
        let eff: f64 = r[8].parse().expect("strong efficiency");
        if r[1] == "1" {
            assert_eq!(r[8], "1.00");
            assert_eq!(r[13], "1.00");
        }
        assert!(eff > 0.0 && eff < 1.05, "{r:?}");
    }
    // A missing profile is an error, not a table.
    let bad = Command::new(env!("CARGO_BIN_EXE_hetblas-mpi"))
        .args(["project", "--profile", "/nonexistent.json"])
        .output()
        .expect("hetblas-mpi runs");
    assert!(!bad.status.success());
}

/// Runs `cmd`, asserting success; its stdout.
fn stdout_of(mut cmd: Command) -> String {
    let out = cmd.output().expect("mpirun runs (Open MPI installed?)");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{cmd:?} failed ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The lines of `rank`'s local products in a bench's diagnosis.
fn product_lines(stdout: &str, rank: usize) -> Vec<&str> {
    let prefix = format!("rank {rank} product ");
    stdout.lines().filter(|l| l.starts_with(&prefix)).collect()
}

/// The benchmark diagnoses itself: for the first timed repetition, every rank's local
/// products (one per panel, with the runtime's devices, tile and fold) and its registrations.
/// With C on a device the products run on the accelerators only; `--devices all` lets the
/// runtime choose among every device, the CPU included.
#[test]
fn the_benchmark_prints_each_ranks_local_products() {
    let mut c = mpirun(2);
    c.env("HETBLAS_EMULATED", "2").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "bench",
        "--grid",
        "2x1",
        "--size",
        "192",
        "--panel",
        "48",
        "--transport",
        "shared",
        "--reps",
        "1",
    ]);
    let out = stdout_of(c);
    for rank in 0..2 {
        let lines = product_lines(&out, rank);
        // k = 192 in panels of 48; each rank's C is 96 x 192.
        assert_eq!(lines.len(), 4, "rank {rank}:\n{out}");
        for l in &lines {
            assert!(l.contains("96x192x48"), "{l}");
            assert!(l.contains("emulated:") && !l.contains("cpu:"), "{l}");
        }
        assert!(
            out.contains(&format!("rank {rank} registrations")),
            "rank {rank}:\n{out}"
        );
        assert!(
            out.contains(&format!("rank {rank}: devices [")),
            "rank {rank}:\n{out}"
        );
    }
    let result = out
        .lines()
        .find(|l| l.starts_with("result,mpi,192,192,192,2x1,"))
        .unwrap_or_else(|| panic!("no result line:\n{out}"));
    assert!(result.ends_with(",auto"), "{result}");

    // One rank, the same local product as a rank of the 2x1 grid, every device allowed.
    let mut c = mpirun(1);
    c.env("HETBLAS_EMULATED", "1").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "bench",
        "--grid",
        "1x1",
        "-m",
        "96",
        "-n",
        "192",
        "-k",
        "192",
        "--panel",
        "48",
        "--devices",
        "all",
        "--reps",
        "1",
    ]);
    let out = stdout_of(c);
    let lines = product_lines(&out, 0);
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines.iter().all(|l| l.contains("96x192x48")), "{out}");
    assert!(out.contains("product devices [0, 1]"), "{out}");
    assert!(
        out.lines()
            .any(|l| l.starts_with("result,mpi,96,192,192,1x1,") && l.ends_with(",all")),
        "{out}"
    );
}
