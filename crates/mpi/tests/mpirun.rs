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
    // Field 13: the products' devices asked for.
    assert_eq!(result.split(',').nth(12), Some("auto"), "{result}");

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
            .any(|l| l.starts_with("result,mpi,96,192,192,1x1,")
                && l.split(',').nth(12) == Some("all")),
        "{out}"
    );
}

/// The local-product check: four ranks on a 2x2 grid with one emulated device each, computing
/// at 1 GFLOP/s so that a product takes a known time (134 MFLOP: about 0.13 s), and the
/// timelines of the timed repetitions (`--trace`). Asserted from the counters and the
/// timeline, not from wall-clock thresholds: nothing is registered or allocated after the
/// first call; every panel is multiplied once per call; the ranks owning a panel's A and B
/// (the diagonal of the grid: k-blocks are dealt cyclically from (0, 0)) multiply it in place;
/// the look-ahead posts panels while products run; and each rank spends most of its call in
/// its products (the rest is accounted for by cause). The result is checked too.
#[test]
fn each_ranks_time_outside_its_products_is_accounted_for() {
    let trace = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("local-products-2x2.json");
    let _ = std::fs::remove_file(&trace);
    let mut c = mpirun(4);
    c.env_remove("HETBLAS_EMULATED").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "--emulated",
        "1",
        "--emulated-gflops",
        "1",
        "bench",
        "-s",
        "1024",
        "--grid",
        "2x2",
        "--panel",
        "256",
        "--reps",
        "2",
        "--check",
        "--trace",
    ]);
    c.arg(&trace);
    let out = stdout_of(c);
    assert!(out.contains("check: "), "{out}");
    for rank in 0..4 {
        let line = out
            .lines()
            .find(|l| l.starts_with(&format!("rank {rank} counters, timed repetitions:")))
            .unwrap_or_else(|| panic!("no counters of rank {rank}:\n{out}"));
        assert!(line.contains(": 0 registrations (0 bytes)"), "{line}");
        assert!(line.contains(", 0 allocations (0 bytes)"), "{line}");
        // Panels 0 and 2 are (0, 0)'s and (1, 1)'s, A and B alike: 2 of 4 per call.
        let own = if rank == 0 || rank == 3 { 4 } else { 0 };
        assert!(
            line.ends_with(&format!("{own} of 8 products in place")),
            "{line}"
        );
    }
    let result = out
        .lines()
        .find(|l| l.starts_with("result,mpi,1024,1024,1024,2x2,"))
        .unwrap_or_else(|| panic!("no result line:\n{out}"));
    // Field 15: the least share of any rank's call spent in its products.
    let share: f64 = result.split(',').nth(14).unwrap().parse().unwrap();
    assert!(share > 0.5, "products' share {share}: {result}");

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("the trace")).unwrap();
    let events: Vec<&serde_json::Value> = json["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .collect();
    for rank in 0..4u64 {
        let mine: Vec<&&serde_json::Value> = events.iter().filter(|e| e["pid"] == rank).collect();
        let span = |e: &serde_json::Value| {
            let t = e["ts"].as_f64().unwrap();
            (t, t + e["dur"].as_f64().unwrap())
        };
        let products: Vec<(f64, f64)> = mine
            .iter()
            .filter(|e| e["cat"] == "product")
            .map(|e| span(e))
            .collect();
        let mut panels: Vec<u64> = mine
            .iter()
            .filter(|e| e["cat"] == "product")
            .map(|e| e["args"]["panel"].as_u64().unwrap())
            .collect();
        panels.sort_unstable();
        assert_eq!(panels, vec![0, 0, 1, 1, 2, 2, 3, 3], "rank {rank}");
        // Panels are posted while products run (the look-ahead): some post of this rank
        // starts inside one of its products.
        let overlapped = mine
            .iter()
            .filter(|e| e["cat"] == "post")
            .filter(|e| {
                let (s, _) = span(e);
                products.iter().any(|&(ps, pe)| s > ps && s < pe)
            })
            .count();
        assert!(overlapped > 0, "rank {rank}: no post during a product");
    }
}

/// One rank alone (grid 1x1): every panel is its own, read in place; it never waits and
/// posts nothing, and its counters show no registration or allocation after the first call.
#[test]
fn a_lone_rank_multiplies_in_place_and_never_waits() {
    let mut c = mpirun(1);
    c.env_remove("HETBLAS_EMULATED").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "--emulated",
        "1",
        "bench",
        "-m",
        "256",
        "-n",
        "512",
        "-k",
        "512",
        "--grid",
        "1x1",
        "--panel",
        "128",
        "--reps",
        "2",
        "--check",
    ]);
    let out = stdout_of(c);
    let line = out
        .lines()
        .find(|l| l.starts_with("rank 0 counters, timed repetitions:"))
        .unwrap_or_else(|| panic!("no counters:\n{out}"));
    assert!(line.contains(": 0 registrations (0 bytes)"), "{line}");
    assert!(line.contains(", 0 allocations (0 bytes)"), "{line}");
    assert!(line.contains("0 B packed, 0 B received"), "{line}");
    assert!(line.ends_with("8 of 8 products in place"), "{line}");
    for l in out.lines().filter(|l| l.starts_with("rank 0 timeline rep")) {
        assert!(l.contains("(waits 0.0%, posting/packing 0.0%"), "{l}");
    }
    assert!(out.contains("check: "), "{out}");
}

/// Without --panel the model chooses the panel width (every rank's prediction compared) and
/// each rank's place of C: here from the emulated devices' own rates (--nominal-profile).
/// The bench says what it chose; the result is checked.
#[test]
fn the_model_chooses_the_layout_and_the_result_holds() {
    let mut c = mpirun(2);
    c.env_remove("HETBLAS_EMULATED").args([
        env!("CARGO_BIN_EXE_hetblas-mpi"),
        "--emulated",
        "1",
        "--emulated-gflops",
        "5",
        "--nominal-profile",
        "bench",
        "-m",
        "512",
        "-n",
        "512",
        "-k",
        "4096",
        "--transport",
        "shared",
        "--reps",
        "1",
        "--check",
    ]);
    let out = stdout_of(c);
    let head = out
        .lines()
        .find(|l| l.starts_with("bench 512x512x4096"))
        .unwrap_or_else(|| panic!("no bench line:\n{out}"));
    assert!(head.contains("grid 2x1"), "{head}");
    assert!(head.contains("(model: "), "{head}");
    let width: usize = head
        .split("panel ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{head}"));
    assert!([1024, 2048, 4096].contains(&width), "{head}");
    assert!(out.contains("check: "), "{out}");
}
