//! The `hetblas` binary run as a user runs it, on the CPU and host-emulated devices.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The `hetblas` binary: cargo's, or, where the test runs from a bundle of binaries built on
/// another machine (`../shared/tools/device-bundle`: tests in `.device/tests`, programs in
/// `.device/bin`), the one beside it.
fn binary() -> PathBuf {
    let built = PathBuf::from(env!("CARGO_BIN_EXE_hetblas"));
    if built.exists() {
        return built;
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| {
            exe.parent()
                .and_then(Path::parent)
                .map(|d| d.join("bin/hetblas"))
        })
        .filter(|p| p.exists())
        .unwrap_or(built)
}

/// Runs `hetblas args..` with no GPU backend and no machine profile.
fn hetblas(args: &[&str]) -> Output {
    hetblas_with(args, &[])
}

/// [`hetblas`] with `env` set on top (after the defaults, so it may replace them), and no
/// other hetblas setting of the caller's environment.
fn hetblas_with(args: &[&str], env: &[(&str, &str)]) -> Output {
    command(args, env).output().expect("hetblas runs")
}

/// The command of [`hetblas_with`], not started.
fn command(args: &[&str], env: &[(&str, &str)]) -> Command {
    let dir = std::env::temp_dir().join(format!("hetblas-cli-test-{}", std::process::id()));
    let mut cmd = Command::new(binary());
    for (k, _) in std::env::vars() {
        // Tests' own variables (HETBLAS_REQUIRE, ...) are no setting; removing them is harmless.
        if k.starts_with("HETBLAS_") {
            cmd.env_remove(k);
        }
    }
    cmd.args(args)
        .env("HETBLAS_BACKENDS", "cpu")
        .env("HETBLAS_PROFILE", dir.join("absent-profile.json"))
        .envs(env.iter().copied());
    cmd
}

fn stdout_of(args: &[&str]) -> String {
    let out = hetblas(args);
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        out.status.success(),
        "hetblas {args:?} failed\nstdout:\n{so}\nstderr:\n{se}"
    );
    so.into_owned()
}

#[test]
fn complex_gemm_conjugates_and_checks() {
    for dtype in ["c64", "c32"] {
        let so = stdout_of(&[
            "--emulated",
            "2",
            "gemm",
            "--dtype",
            dtype,
            "-m",
            "70",
            "-n",
            "50",
            "-k",
            "40",
            "--transa",
            "C",
            "--transb",
            "T",
            "--alpha",
            "0.5",
            "--alpha-im",
            "-1.5",
            "--beta",
            "-0.5",
            "--beta-im",
            "0.25",
            "--devices",
            "1,2",
            "--tile",
            "16",
            "--reps",
            "1",
            "--check",
        ]);
        let name = format!("{}gemm 70x50x40 CT", if dtype == "c64" { 'z' } else { 'c' });
        assert!(so.contains(&name), "{so}");
        assert!(so.contains("within the error bound"), "{so}");
    }
    // An imaginary part needs a complex dtype.
    let out = hetblas(&["gemm", "--dtype", "f64", "--alpha-im", "1", "--reps", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("complex"));
}

#[test]
fn gemm_with_negative_scalars_runs_and_checks() {
    let so = stdout_of(&[
        "--emulated",
        "2",
        "gemm",
        "-m",
        "150",
        "-n",
        "90",
        "-k",
        "70",
        "--transa",
        "T",
        "--alpha",
        "-1.5",
        "--beta",
        "-0.5",
        "--devices",
        "1,2",
        "--tile",
        "32",
        "--reps",
        "1",
        "--check",
    ]);
    assert!(so.contains("dgemm 150x90x70 TN"), "{so}");
    assert!(
        so.contains("check: ") && so.contains("within the error bound"),
        "{so}"
    );
}

/// `hetblas gemmt`: GEMM's options with a triangle; `--check` verifies the triangle against
/// the reference and the other triangle bit for bit, and the BLAS name is printed.
#[test]
fn gemmt_computes_one_triangle_and_checks_both() {
    let so = stdout_of(&[
        "--emulated",
        "2",
        "gemmt",
        "--dtype",
        "c64",
        "--uplo",
        "U",
        "-n",
        "90",
        "-k",
        "33",
        "--transa",
        "C",
        "--alpha",
        "0.5",
        "--alpha-im",
        "-1",
        "--beta",
        "-0.5",
        "--devices",
        "1,2",
        "--tile",
        "16",
        "--reps",
        "1",
        "--check",
    ]);
    assert!(so.contains("zgemmtr U C N 90x90x33"), "{so}");
    assert!(
        so.contains("entries of the U triangle within the error bound")
            && so.contains("the other triangle's 4005 entries bit-identical"),
        "{so}"
    );
    // The defaults: the lower triangle of a real GEMMT on what hetblas chooses.
    let so = stdout_of(&["gemmt", "--size", "64", "--reps", "1", "--check"]);
    assert!(so.contains("dgemmtr L N N 64x64x64"), "{so}");
    // C is square.
    let out = hetblas(&["gemmt", "-m", "5", "-n", "6", "--reps", "1"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("n x n"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn devices_lists_the_cpu_and_the_emulated_devices() {
    let so = stdout_of(&["--emulated", "2", "devices", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&so).expect("JSON");
    let kinds: Vec<&str> = v["devices"]
        .as_array()
        .expect("devices")
        .iter()
        .map(|d| d["kind"].as_str().expect("kind"))
        .collect();
    assert_eq!(kinds, ["Cpu", "Emulated", "Emulated"], "{so}");
    let backends: Vec<(&str, u64)> = v["backends"]
        .as_array()
        .expect("backends")
        .iter()
        .map(|b| {
            (
                b["backend"].as_str().unwrap(),
                b["devices"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        backends,
        [("cuda", 0), ("hip", 0), ("cpu", 1), ("emulated", 2)],
        "{so}"
    );
    let table = stdout_of(&["devices"]);
    assert!(table.contains("[0] cpu"), "{table}");
    assert!(table.contains("cuda      absent: not selected"), "{table}");
}

#[test]
fn refused_arguments_say_why() {
    let out = hetblas(&["gemm", "--size", "-4"]);
    assert!(!out.status.success());
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(se.contains("-4"), "{se}");
    let out = hetblas(&["gemm", "--host-fold", "maybe"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("maybe"));
}

/// The exit of a refusal: status 1 (not a signal, not a panic's 101) and a message on stderr
/// that contains every one of `words`.
fn refused(out: &Output, words: &[&str]) {
    let se = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(1),
        "status {:?}, stderr:\n{se}",
        out.status
    );
    assert!(!se.contains("panicked"), "{se}");
    for w in words {
        assert!(se.contains(w), "{w:?} not in stderr:\n{se}");
    }
}

#[test]
fn sizes_that_do_not_fit_in_memory_are_refused_before_allocating() {
    // 4 x 800 TB: aborted allocating.
    refused(&hetblas(&["gemm", "--size", "10000000"]), &["memory"]);
    // Sizes whose byte count does not even fit in 64 bits.
    refused(
        &hetblas(&[
            "gemm",
            "-m",
            "4294967296",
            "-n",
            "4294967296",
            "-k",
            "4294967296",
        ]),
        &["memory"],
    );
}

#[test]
fn a_gemm_larger_than_an_address_space_limit_is_refused() {
    // Under an 8 GB limit, --size 20000 (4 x 3.2 GB) aborted allocating.
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit -v 8388608 && exec '{}' gemm --size 20000 --reps 1",
            binary().display()
        ))
        .env("HETBLAS_BACKENDS", "cpu")
        .env("HETBLAS_PROFILE", "/nonexistent/hetblas-profile.json")
        .env_remove("HETBLAS_EMULATED")
        .output()
        .expect("sh runs");
    refused(&out, &["memory"]);
}

#[test]
fn emulated_device_counts_that_cannot_be_built_are_refused() {
    // Panicked (capacity overflow), and aborted.
    refused(
        &hetblas(&["--emulated", "18446744073709551615", "devices"]),
        &["emulated"],
    );
    refused(
        &hetblas(&["--emulated", "1000000000", "devices"]),
        &["emulated"],
    );
}

#[test]
fn predict_on_a_device_that_does_not_exist_is_refused() {
    // Panicked: index out of bounds.
    refused(
        &hetblas(&["--emulated", "2", "predict", "--device", "99"]),
        &["99"],
    );
}

#[test]
fn negative_sizes_and_zero_reps_are_refused_as_such() {
    // `-m -5` was refused as an unknown argument '-5'; say it is not a size.
    let out = hetblas(&["gemm", "-m", "-5"]);
    assert_eq!(out.status.code(), Some(2));
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(
        se.contains("invalid value '-5'") && !se.contains("unexpected argument"),
        "{se}"
    );
    // `--reps 0` silently ran once.
    let out = hetblas(&["gemm", "--size", "8", "--reps", "0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("reps"));
}

#[test]
fn check_accepts_a_correct_nan_or_infinite_result() {
    // Reported "internal error (a hetblas bug): check FAILED: C(0,0) = NaN, expected NaN".
    for scalars in [["--alpha=nan", "--beta=0"], ["--alpha=1", "--beta=1e400"]] {
        let so = stdout_of(
            &[
                &["gemm", "--size", "16", "--reps", "1", "--check"][..],
                &scalars[..],
            ]
            .concat(),
        );
        assert!(so.contains("check: "), "{so}");
    }
}

#[test]
fn an_unwritable_trace_path_is_refused_before_computing() {
    let out = hetblas(&[
        "gemm",
        "--size",
        "64",
        "--reps",
        "1",
        "--trace",
        "/nonexistent-dir/trace.json",
    ]);
    refused(&out, &["trace.json"]);
    // Refused before the computation: no timing line.
    assert!(!String::from_utf8_lossy(&out.stdout).contains("GFLOP/s"));
}

#[test]
fn empty_environment_variables_count_as_unset() {
    // `HETBLAS_CBLAS=` was taken as a library named "" and `HETBLAS_BACKENDS=` as "no
    // backend": either left no device at all.
    for var in ["HETBLAS_CBLAS", "HETBLAS_BACKENDS"] {
        let out = Command::new(binary())
            .args(["devices", "--json"])
            .env("HETBLAS_BACKENDS", "cpu")
            .env(var, "")
            .env("HETBLAS_PROFILE", "/nonexistent/hetblas-profile.json")
            .env_remove("HETBLAS_EMULATED")
            .output()
            .expect("hetblas runs");
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{var}=: {se}");
        assert!(so.contains("\"Cpu\""), "{var}=: {so}");
    }
}

#[test]
fn simulate_predicts_four_and_eight_gpus_with_none_present() {
    let profile = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/profiles/nvidia-h200-x4.json"
    );
    let trace = std::env::temp_dir().join(format!("hetblas-sim-{}.json", std::process::id()));
    let so = stdout_of(&[
        "simulate",
        "--profile",
        profile,
        "-s",
        "16384",
        "--trace",
        trace.to_str().expect("utf-8 path"),
    ]);
    assert!(so.contains("makespan"), "{so}");
    for d in ["cuda:0", "cuda:1", "cuda:2", "cuda:3"] {
        assert!(so.contains(d), "{d} missing: {so}");
    }
    // Four H200s cannot beat four times one's DGEMM peak (about 60 TFLOP/s each).
    let tflops: f64 = so
        .split(" TFLOP/s")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|s| s.parse().ok())
        .expect("a TFLOP/s figure");
    assert!(tflops > 50.0 && tflops < 240.0, "{tflops}");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace written"))
            .expect("trace is JSON");
    assert!(json["traceEvents"]
        .as_array()
        .is_some_and(|e| e.len() > 100));
    let _ = std::fs::remove_file(&trace);
    // Eight of the measured kind, synthetic.
    let one = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/profiles/nvidia-h200-x1.json"
    );
    let so = stdout_of(&["simulate", "--profile", one, "--gpus", "8", "-s", "16384"]);
    assert!(so.contains("cuda:7"), "{so}");
    refused(
        &hetblas(&["simulate", "--profile", "/nonexistent/profile.json"]),
        &["no profile", "/nonexistent/profile.json"],
    );
}

#[test]
fn simulate_predicts_a_trsm_dag_on_one_to_eight_gpus() {
    let one = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/profiles/nvidia-h200-x1.json"
    );
    let tflops = |so: &str| -> f64 {
        so.split(" TFLOP/s")
            .next()
            .and_then(|s| s.rsplit(' ').next())
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no TFLOP/s figure: {so}"))
    };
    let mut rates = Vec::new();
    for gpus in ["1", "2", "8"] {
        let so = stdout_of(&[
            "simulate",
            "--profile",
            one,
            "--gpus",
            gpus,
            "--routine",
            "trsm",
            "-s",
            "16384",
        ]);
        assert!(so.contains("dtrsm L L N N m=16384 n=16384"), "{so}");
        let last = format!("cuda:{}", gpus.parse::<usize>().unwrap() - 1);
        assert!(so.contains(&last), "{last} missing: {so}");
        rates.push(tflops(&so));
    }
    // More GPUs help, but no more than their number (about 60 TFLOP/s of DGEMM each).
    assert!(rates[0] > 10.0 && rates[0] < 60.0, "{rates:?}");
    assert!(
        rates[1] > rates[0] && rates[1] < 2.0 * rates[0],
        "{rates:?}"
    );
    assert!(
        rates[2] > rates[1] && rates[2] < 8.0 * rates[0],
        "{rates:?}"
    );
}

#[test]
fn trsm_simulate_without_a_profile_is_refused_before_computing() {
    let trace = std::env::temp_dir().join(format!("hetblas-notrisim-{}.json", std::process::id()));
    for routine in ["trsm", "trmm"] {
        refused(
            &hetblas(&[
                routine,
                "-s",
                "64",
                "--trace",
                trace.to_str().expect("utf-8 path"),
                "--simulate",
            ]),
            &["--simulate needs a machine profile"],
        );
        assert!(!trace.exists());
    }
}

#[test]
fn gemm_simulate_without_a_profile_is_refused_before_computing() {
    let trace = std::env::temp_dir().join(format!("hetblas-nosim-{}.json", std::process::id()));
    refused(
        &hetblas(&[
            "gemm",
            "-s",
            "64",
            "--trace",
            trace.to_str().expect("utf-8 path"),
            "--simulate",
        ]),
        &["--simulate needs a machine profile"],
    );
    assert!(!trace.exists());
}

/// `gemm --trace` splits the traced call's time into its parts. On one device: its tasks' span
/// is then read on one clock and fits in the call whatever the machine's load. (Across devices
/// each clock's origin is read after its event, late by however long the thread waited for a
/// core: a loaded 2-core CI run saw 5.86 ms of tasks on two emulated devices in a 4.24 ms call.)
#[test]
fn a_traced_gemm_reports_where_its_time_went() {
    let trace = std::env::temp_dir().join(format!("hetblas-parts-{}.json", std::process::id()));
    let so = stdout_of(&[
        "--emulated",
        "1",
        "gemm",
        "--devices",
        "emulated:0",
        "-s",
        "200",
        "--tile",
        "64",
        "--beta",
        "1",
        "--reps",
        "2",
        "--trace",
        trace.to_str().expect("utf-8 path"),
    ]);
    let _ = std::fs::remove_file(&trace);
    let line = so
        .lines()
        .find(|l| l.starts_with("traced call "))
        .unwrap_or_else(|| panic!("no breakdown: {so}"));
    // "traced call T ms: A ms to decide, plan and enter, B ms to the first task, C ms of
    // tasks, D ms after the last"
    let ms: Vec<f64> = line
        .split(" ms")
        .filter_map(|p| p.rsplit([' ', ',']).next()?.parse().ok())
        .collect();
    assert_eq!(ms.len(), 5, "{line}");
    // The tasks take time, within the call's; deciding does not take negative time. (The
    // split between the wait for the first task and the time after the last carries the trace
    // clock's offset, a device's epoch being read after its event, so neither is checked; the
    // last part is the remainder, so the parts add up by construction.)
    assert!(ms[1] >= 0.0 && ms[3] > 0.0 && ms[3] <= ms[0], "{line}");
}

#[test]
fn trsm_and_trmm_sweep_tiles_against_the_model() {
    for routine in ["trsm", "trmm"] {
        let so = stdout_of(&[
            routine, "-s", "96", "--tiles", "16,32", "--reps", "1", "--check",
        ]);
        for t in [
            "tile 16 (sweep)",
            "tile 32 (sweep)",
            "the best of the sweep (tile ",
        ] {
            assert!(so.contains(t), "{routine}: {t:?} missing: {so}");
        }
        assert!(so.contains("within the error bound"), "{routine}: {so}");
    }
}

/// A setting whose value cannot be used stops every command with one error naming the
/// variable and the value (they ran silently, or failed naming neither); `devices` still lists
/// what it found with the default in its place, says which setting is wrong, and exits 1.
#[test]
fn a_bad_setting_is_refused_naming_the_variable_and_the_value() {
    let gemm = ["gemm", "--size", "16", "--reps", "1"];
    for (var, value, why) in [
        ("HETBLAS_FAULT", "garbage", "not key=value"),
        ("HETBLAS_VERBOSE", "yes", "expected 1 (on) or 0 (off)"),
        ("HETBLAS_BACKENDS", "garbage", "unknown backend"),
        ("HETBLAS_EMULATED", "two", "not a count"),
        ("HETBLAS_CUDA_DEVICES", "first", "GPU ordinals"),
        ("HETBLAS_OFFLOAD_FLOPS", "lots", "flops"),
    ] {
        let said = format!("hetblas: {var}={value:?}: ");
        let out = hetblas_with(&gemm, &[(var, value)]);
        refused(&out, &[&said, why]);
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("GFLOP/s"),
            "{var}: computed anyway"
        );
        let out = hetblas_with(&["devices"], &[(var, value)]);
        refused(&out, &[&said]);
        let so = String::from_utf8_lossy(&out.stdout);
        assert!(so.contains("[0] cpu"), "{var}: {so}");
        assert!(
            so.contains(&format!("settings:\n  {var}={value:?}: ")),
            "{var}: {so}"
        );
    }
}

/// A host BLAS named that does not load: every computing command fails naming the variable
/// and the load error; `devices` does not fail (the CPU is listed absent with that reason, and
/// the other backends with theirs), with no device left at all as with the emulated ones.
#[test]
fn a_host_blas_that_does_not_load_is_named_and_devices_says_why() {
    let env = [("HETBLAS_CBLAS", "/nonexistent/libblas.so")];
    let said = "HETBLAS_CBLAS=\"/nonexistent/libblas.so\": the host BLAS cannot be used: ";
    refused(
        &hetblas_with(&["gemm", "--size", "16", "--reps", "1"], &env),
        &[said, "/nonexistent/libblas.so"],
    );
    for emulated in ["0", "2"] {
        let out = hetblas_with(&["--emulated", emulated, "devices"], &env);
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "--emulated {emulated}: {so}{se}");
        assert!(so.contains("devices:\n  none\n"), "{so}");
        assert!(so.contains(&format!("cpu       absent: {said}")), "{so}");
        if emulated == "2" {
            assert!(so.contains(&format!("emulated  absent: {said}")), "{so}");
        }
        // Every absent backend says why.
        for line in so.lines().filter(|l| l.contains("absent:")) {
            let why = line.split("absent:").nth(1).unwrap_or("").trim();
            assert!(why.len() > 10, "{line}");
        }
    }
}

/// Backends left out by `HETBLAS_BACKENDS`, and those absent here, each say why; with no
/// device left, a computing command lists every reason.
#[test]
fn devices_says_why_each_backend_is_absent() {
    let out = hetblas_with(&["devices", "--json"], &[("HETBLAS_BACKENDS", "hip")]);
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}");
    let v: serde_json::Value = serde_json::from_str(&so).expect("JSON");
    for b in v["backends"].as_array().expect("backends") {
        let (name, devices) = (
            b["backend"].as_str().unwrap(),
            b["devices"].as_u64().unwrap(),
        );
        let reason = b["reason"].as_str().unwrap_or("");
        assert!(
            devices > 0 || !reason.is_empty(),
            "{name}: no device, no reason"
        );
        if name != "hip" {
            assert_eq!(reason, "not selected (HETBLAS_BACKENDS=hip)", "{name}");
        }
    }
    let hip = &v["backends"][1];
    if hip["devices"] == 0 {
        // No HIP here: nothing to compute on, and the error gives each backend's reason.
        let out = hetblas_with(&["gemm", "--size", "16"], &[("HETBLAS_BACKENDS", "hip")]);
        refused(
            &out,
            &[
                "no usable device",
                "hip: ",
                "cpu: not selected (HETBLAS_BACKENDS=hip)",
            ],
        );
    }
}

/// A profile file that is not a profile is an error of every command that would use it (it
/// was replaced by the built-in rules without a word); `devices` says so and does not fail;
/// `calibrate` does not read it (it writes a new one).
#[test]
fn a_corrupt_profile_is_an_error_and_devices_says_so() {
    let path = std::env::temp_dir().join(format!("hetblas-corrupt-{}.json", std::process::id()));
    std::fs::write(&path, "{ not a profile").unwrap();
    let env = [("HETBLAS_PROFILE", path.to_str().unwrap())];
    refused(
        &hetblas_with(&["gemm", "--size", "16", "--reps", "1"], &env),
        &[
            "is not a valid profile",
            path.to_str().unwrap(),
            "hetblas calibrate",
        ],
    );
    let out = hetblas_with(&["devices"], &env);
    let so = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{so}");
    assert!(
        so.contains("model: profile: ") && so.contains("is not a valid profile"),
        "{so}"
    );
    std::fs::remove_file(&path).unwrap();
}

/// A variable hetblas no longer reads is a warning naming what replaced it, not an error.
#[test]
fn a_retired_variable_is_a_warning() {
    let out = hetblas_with(
        &["gemm", "--size", "16", "--reps", "1"],
        &[("HETBLAS_PIN", "xyz"), ("HETBLAS_FOLD_TAIL", "4")],
    );
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{se}");
    for w in [
        "hetblas: warning: HETBLAS_PIN is set but no longer read",
        "hetblas: warning: HETBLAS_FOLD_TAIL is set but no longer read",
    ] {
        assert_eq!(se.matches(w).count(), 1, "{w:?} in\n{se}");
    }
    assert!(se.contains("--fold-tail"), "{se}");
}

/// `gemm --warm-seconds` calls untimed until the time has passed, then times `--reps` calls
/// (printed in order); `--back-to-back` leaves C as the last call wrote it, so it cannot be
/// checked.
#[test]
fn gemm_warms_up_then_times_calls_back_to_back() {
    for extra in [&[][..], &["--back-to-back"][..]] {
        let mut args = vec![
            "--emulated",
            "1",
            "gemm",
            "-s",
            "96",
            "--tile",
            "32",
            "--beta",
            "1",
            "--reps",
            "2",
            "--warm-seconds",
            "0.05",
        ];
        args.extend_from_slice(extra);
        let so = stdout_of(&args);
        let warm = so
            .lines()
            .find(|l| l.starts_with("warm-up: "))
            .unwrap_or_else(|| panic!("no warm-up line: {so}"));
        let calls: u64 = warm
            .split_whitespace()
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{warm}"));
        assert!(calls >= 1, "{warm}");
        let timed = so
            .lines()
            .find_map(|l| l.strip_prefix("timed calls in order (s): "))
            .unwrap_or_else(|| panic!("no timed calls: {so}"));
        let times: Vec<f64> = timed
            .split_whitespace()
            .map(|t| t.parse().expect("seconds"))
            .collect();
        assert_eq!(times.len(), 2, "{timed}");
        assert!(times.iter().all(|&t| t > 0.0), "{timed}");
    }
    refused_by_clap(&hetblas(&["gemm", "--warm-seconds", "inf"]), "inf");
    refused_by_clap(&hetblas(&["gemm", "--warm-seconds", "-1"]), "-1");
    refused_by_clap(&hetblas(&["gemm", "--back-to-back", "--check"]), "--check");
}

/// An argument clap refuses: not a success, no panic, `word` in the message.
fn refused_by_clap(out: &Output, word: &str) {
    let se = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "accepted; stderr:\n{se}");
    assert!(!se.contains("panicked") && se.contains(word), "{se}");
}

/// `hetblas gemm ... | head -0`, `hetblas devices --json | head`: the reader gone before the
/// output. The command ends quietly, as `cat` would (by SIGPIPE); it panicked ("failed printing
/// to stdout: Broken pipe", exit 101).
#[test]
fn a_closed_pipe_ends_the_command_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    for args in [
        &["gemm", "-s", "64", "--reps", "1"][..],
        &["--emulated", "2", "devices", "--json"][..],
        &["trsm", "-s", "64", "--reps", "1", "--json"][..],
    ] {
        let mut child = command(args, &[])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("hetblas starts");
        // The read end closed before the command prints.
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("hetblas ends");
        let se = String::from_utf8_lossy(&out.stderr);
        assert!(!se.contains("panicked"), "{args:?}: {se}");
        assert!(
            out.status.success() || out.status.signal() == Some(libc_sigpipe()),
            "{args:?}: {:?}, stderr:\n{se}",
            out.status
        );
    }
}

/// SIGPIPE's number on Linux.
fn libc_sigpipe() -> i32 {
    13
}

/// `--check` of a result that is NaN where the reference is NaN too (`--alpha nan`) passes,
/// but says so: it reported every entry "within the error bound".
#[test]
fn check_says_when_the_result_is_nan_as_the_reference_is() {
    let so = stdout_of(&["gemm", "-s", "16", "--reps", "1", "--check", "--alpha=nan"]);
    let line = so
        .lines()
        .find(|l| l.starts_with("check: "))
        .expect("a check line");
    assert!(
        line.contains("256 entries of the result are NaN or infinite, as the reference's"),
        "{line}"
    );
    // A finite result says nothing of the kind.
    let so = stdout_of(&["gemm", "-s", "16", "--reps", "1", "--check"]);
    assert!(
        !so.contains("NaN or infinite") && so.contains("within the error bound"),
        "{so}"
    );
}

/// Every routine takes -s/-m/-n/-k, --dtype, --reps, --check, --trace, --devices and runs on
/// its defaults (herk, her2k and hemm defaulted to f64 and refused it; syrk refused -s and
/// --trace); a dimension the routine does not have is refused naming what it has.
#[test]
fn every_routine_runs_on_the_same_options() {
    let trace = std::env::temp_dir().join(format!("hetblas-same-{}.json", std::process::id()));
    let trace = trace.to_str().expect("utf-8 path");
    for routine in [
        "gemm", "gemmt", "trsm", "trmm", "syrk", "herk", "syr2k", "her2k", "symm", "hemm", "potrf",
        "getrf", "gesv",
    ] {
        let so = stdout_of(&[
            "--emulated",
            "1",
            routine,
            "-s",
            "48",
            "--reps",
            "1",
            "--check",
            "--devices",
            "0",
            "--trace",
            trace,
        ]);
        assert!(so.contains("check: "), "{routine}: {so}");
    }
    let _ = std::fs::remove_file(trace);
    for (args, words) in [
        (
            &["trsm", "-k", "3"][..],
            &["trsm takes no -k", "B is m x n"][..],
        ),
        (&["syrk", "-m", "3"][..], &["syrk takes no -m", "-n"][..]),
        (
            &["symm", "-k", "3"][..],
            &["symm takes no -k", "--side"][..],
        ),
        (
            &["potrf", "-m", "3"][..],
            &["potrf takes no -m", "n x n"][..],
        ),
    ] {
        refused(&hetblas(args), words);
    }
}

/// Reports name the routine as BLAS does (`dsyrk L N`), devices by label, no Rust debug
/// formatting (`Rank { uplo: Lower, .. }`, `FaultSpec { .. }`); TRMM solves nothing; and
/// `--json` prints one JSON object of the report.
#[test]
fn reports_are_plain_text_or_json() {
    let so = stdout_of(&[
        "syrk", "-n", "40", "-k", "24", "--reps", "1", "--trans", "T",
    ]);
    assert!(so.contains("dsyrk L T n=40 k=24 on [cpu:0]"), "{so}");
    let so = stdout_of(&["hemm", "--side", "R", "-m", "20", "-n", "30", "--reps", "1"]);
    assert!(so.contains("zhemm R L m=20 n=30 on [cpu:0]"), "{so}");
    let so = stdout_of(&["trmm", "-s", "40", "--reps", "1"]);
    assert!(so.contains("dtrmm L L N N m=40 n=40"), "{so}");
    assert!(!so.contains("solves"), "{so}");
    let so = stdout_of(&[
        "--emulated",
        "2",
        "gemm",
        "-s",
        "64",
        "--reps",
        "1",
        "--devices",
        "1,2",
        "--fault",
        "dev=2,at=kernel:1,kind=lost",
    ]);
    assert!(
        so.contains("injecting a fault (dev=2,at=kernel:1,kind=lost)"),
        "{so}"
    );
    let so = stdout_of(&[
        "--emulated",
        "1",
        "predict",
        "--routine",
        "syrk",
        "-s",
        "100",
    ]);
    assert!(so.contains("dsyrk L N n=100 k=100"), "{so}");
    assert!(
        !so.contains('{') && !so.contains("Rank") && !so.contains("Some("),
        "{so}"
    );
    for (args, routine) in [
        (
            &["gemm", "-s", "16", "--reps", "1", "--check", "--json"][..],
            "dgemm",
        ),
        (
            &["gemmt", "-s", "16", "--reps", "1", "--check", "--json"][..],
            "dgemmtr",
        ),
        (
            &["herk", "-s", "16", "--reps", "1", "--check", "--json"][..],
            "zherk",
        ),
        (
            &["trsm", "-s", "16", "--reps", "1", "--check", "--json"][..],
            "dtrsm",
        ),
        (
            &["getrf", "-s", "16", "--reps", "1", "--check", "--json"][..],
            "dgetrf",
        ),
    ] {
        let so = stdout_of(args);
        let v: serde_json::Value =
            serde_json::from_str(&so).unwrap_or_else(|e| panic!("{args:?}: {e}: {so}"));
        assert_eq!(v["routine"], routine, "{so}");
        assert!(v["median_s"].as_f64().is_some_and(|t| t > 0.0), "{so}");
        assert_eq!(v["check"]["passed"], true, "{so}");
    }
}

/// What cannot finish or cannot be written is refused before any work: a synthetic machine of
/// 100000 GPUs (grew to 7.6 GB in 30 s), a plan of billions of tiles (`--tile 3`, `--size
/// 1000000`: nothing in 60 s), nothing to simulate (`--size 0`: NaN TFLOP/s), a profile that
/// cannot be written (failed after all the measuring).
#[test]
fn what_cannot_finish_is_refused_up_front() {
    let one = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/profiles/nvidia-h200-x1.json"
    );
    refused_by_clap(
        &hetblas(&["simulate", "--profile", one, "--gpus", "100000"]),
        "1 to 64 GPUs",
    );
    for (args, words) in [
        (
            &["--tile", "3"][..],
            &["--tile 3", "at most", "larger --tile"][..],
        ),
        (
            &["--size", "1000000"][..],
            &["tile tasks", "smaller size"][..],
        ),
        (&["--size", "0"][..], &["nothing to simulate"][..]),
        (
            &["--routine", "trsm", "--size", "1000000"][..],
            &["tile tasks"][..],
        ),
    ] {
        let all = [&["simulate", "--profile", one][..], args].concat();
        let out = hetblas(&all);
        refused(&out, words);
        assert!(!String::from_utf8_lossy(&out.stdout).contains("TFLOP/s"));
    }
    // /proc takes no new file: refused at once, not after minutes of measuring.
    let out = hetblas(&[
        "calibrate",
        "--quick",
        "--out",
        "/proc/hetblas-profile.json",
    ]);
    refused(
        &out,
        &[
            "cannot write the profile to /proc/hetblas-profile.json",
            "--out",
        ],
    );
    assert!(String::from_utf8_lossy(&out.stdout).is_empty());
}

/// `predict` on a machine with no accelerator says what to do instead (it said the profile
/// had no table for cpu:0 "(or nothing moves)", or that there was no profile), as commands that
/// work when pasted: run here as written (with a profile path of the test's), they calibrate
/// emulated devices, predict the same problem on them, and simulate it on a GPU profile; each
/// report, the calibration's summary included, also as one JSON object.
#[test]
fn predict_without_an_accelerator_says_what_to_run() {
    let out = hetblas(&["predict", "-s", "1024", "--dtype", "f32"]);
    refused(&out, &["cpu:0 is the host"]);
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    // The commands between backticks, in order.
    let commands: Vec<&str> = se.split('`').skip(1).step_by(2).collect();
    assert_eq!(
        commands,
        [
            "hetblas --emulated 1 calibrate --quick",
            "hetblas --emulated 1 predict -s 1024 --dtype f32",
            "hetblas simulate --profile docs/profiles/nvidia-h200-x1.json -s 1024 --dtype f32",
        ],
        "{se}"
    );
    let dir = std::env::temp_dir().join(format!("hetblas-paste-{}", std::process::id()));
    let profile = dir.join("profile.json");
    let profile = profile.to_str().expect("utf-8 path");
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let mut reports = Vec::new();
    for c in commands {
        let args: Vec<&str> = c.split_whitespace().skip(1).chain(["--json"]).collect();
        let out = command(&args, &[("HETBLAS_PROFILE", profile)])
            .current_dir(root)
            .output()
            .expect("hetblas runs");
        let (so, se) = (
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        assert!(out.status.success(), "{c}: {se}");
        let v: serde_json::Value =
            serde_json::from_str(&so).unwrap_or_else(|e| panic!("{c}: {e}: {so}\n{se}"));
        reports.push(v);
    }
    let _ = std::fs::remove_dir_all(&dir);
    let [calibrated, predicted, simulated] = &reports[..] else {
        unreachable!()
    };
    assert_eq!(calibrated["how"], "calibrated", "{calibrated}");
    assert_eq!(calibrated["profile"], profile, "{calibrated}");
    let tables = calibrated["gemm"].as_array().expect("gemm tables");
    assert!(
        tables
            .iter()
            .any(|t| t["device"] == "emulated:0" && t["best_tflops"].as_f64() > Some(0.0)),
        "{calibrated}"
    );
    assert_eq!(predicted["routine"], "sgemm", "{predicted}");
    assert_eq!(predicted["device"], "emulated:0", "{predicted}");
    assert!(
        predicted["choice"]["predicted_s"].as_f64() > Some(0.0),
        "{predicted}"
    );
    let chosen = predicted["candidates"].as_array().expect("candidates");
    assert_eq!(chosen.iter().filter(|c| c["chosen"] == true).count(), 1);
    assert_eq!(simulated["routine"], "sgemm", "{simulated}");
    assert!(simulated["makespan_s"].as_f64() > Some(0.0), "{simulated}");
}

/// With emulated devices and no profile, `predict` says which calibration to run (it said
/// "no profile ... nothing to predict with"); `simulate` with no profile at all says where one
/// comes from (`--profile` was a required option, with no word of either), and with a profile
/// of no accelerator what it can simulate instead.
#[test]
fn refusals_for_want_of_a_profile_say_what_to_run() {
    refused(
        &hetblas(&["--emulated", "2", "predict", "-s", "1024"]),
        &[
            "predict needs a calibrated profile",
            "run `hetblas --emulated 2 calibrate --quick`",
        ],
    );
    refused(
        &hetblas(&["simulate", "-s", "1024"]),
        &[
            "simulate needs a machine profile",
            "--profile FILE",
            "`hetblas calibrate --quick`",
        ],
    );
    // A CPU-only machine's profile: "the profile has no accelerator", now with what to run
    // instead; the first suggestion, pasted, simulates the CPU alone.
    let dir = std::env::temp_dir().join(format!("hetblas-cpu-only-{}", std::process::id()));
    let profile = dir.join("profile.json");
    let profile = profile.to_str().expect("utf-8 path");
    let env = [("HETBLAS_PROFILE", profile)];
    let calibrate = ["calibrate", "--quick", "--no-power", "--no-cross-links"];
    assert!(hetblas_with(&calibrate, &env).status.success());
    let out = hetblas_with(&["simulate", "-s", "512", "--routine", "trsm"], &env);
    refused(
        &out,
        &["describes none", "--devices cpu:0", "hetblas --emulated 1"],
    );
    let se = String::from_utf8_lossy(&out.stderr).into_owned();
    let pasted = se.split('`').nth(1).expect("a command in backticks");
    let args: Vec<&str> = pasted.split_whitespace().skip(1).collect();
    let so = String::from_utf8_lossy(&hetblas_with(&args, &env).stdout).into_owned();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        so.contains("simulated dtrsm") && so.contains("[cpu:0]"),
        "{pasted}: {so}"
    );
}

/// `predict` (every routine's path), `simulate` (GEMM and TRSM) and `calibrate` print one
/// JSON object with `--json` (the routines' reports had it, these printed text only); GEMM's
/// prediction and the calibration's JSON are checked in
/// `predict_without_an_accelerator_says_what_to_run` (they need a calibrated profile).
#[test]
fn predict_and_simulate_reports_are_json_with_json() {
    let profile = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/profiles/nvidia-h200-x1.json"
    );
    for (args, routine, list) in [
        (
            &[
                "--emulated",
                "1",
                "predict",
                "--routine",
                "potrf",
                "-s",
                "512",
            ][..],
            "dpotrf",
            "alternatives",
        ),
        (
            &[
                "--emulated",
                "1",
                "predict",
                "--routine",
                "trsm",
                "-s",
                "512",
            ][..],
            "dtrsm",
            "alternatives",
        ),
        (
            &["predict", "--routine", "herk", "-s", "512"][..],
            "zherk",
            "no_prediction",
        ),
        (
            &[
                "simulate",
                "--profile",
                profile,
                "--gpus",
                "2",
                "-s",
                "8192",
            ][..],
            "dgemm",
            "per_device",
        ),
        (
            &[
                "simulate",
                "--profile",
                profile,
                "--routine",
                "trsm",
                "-s",
                "8192",
            ][..],
            "dtrsm",
            "per_device",
        ),
    ] {
        let so = stdout_of(&[args, &["--json"]].concat());
        let v: serde_json::Value =
            serde_json::from_str(&so).unwrap_or_else(|e| panic!("{args:?}: {e}: {so}"));
        assert_eq!(v["routine"], routine, "{so}");
        let listed = match &v[list] {
            serde_json::Value::Array(l) => !l.is_empty(),
            other => !other.is_null(),
        };
        assert!(listed, "{args:?}: no {list} in {so}");
        // The text form is the same report.
        let text = stdout_of(args);
        assert!(text.contains(routine) && !text.starts_with('{'), "{text}");
    }
}

/// Progress (a bar over the calls of `gemm --warm-seconds 3`) is drawn on a terminal once a
/// step has run a second, and never where stderr is not a terminal or with `--json`, so
/// scripts and tests read clean output. The terminal is `script`'s pseudo-terminal.
#[test]
fn progress_shows_on_a_terminal_only() {
    let run = |args: &[&str]| -> String {
        let dir = std::env::temp_dir().join(format!("hetblas-cli-test-{}", std::process::id()));
        let line = std::iter::once(binary().display().to_string())
            .chain(args.iter().map(|a| a.to_string()))
            .collect::<Vec<_>>()
            .join(" ");
        let mut cmd = Command::new("script");
        for (k, _) in std::env::vars() {
            if k.starts_with("HETBLAS_") {
                cmd.env_remove(k);
            }
        }
        let out = cmd
            .args(["-qec", &line, "/dev/null"])
            .env("HETBLAS_BACKENDS", "cpu")
            .env("HETBLAS_PROFILE", dir.join("absent-profile.json"))
            .env("TERM", "xterm")
            .output()
            .expect("`script` (util-linux) runs the command on a pseudo-terminal");
        let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
        assert!(out.status.success(), "{line}: {text}");
        text
    };
    let args = ["gemm", "-s", "32", "--reps", "1", "--warm-seconds", "3"];
    let shown = run(&args);
    assert!(shown.contains("warm-up calls (untimed)"), "{shown}");
    let json = run(&[&args[..], &["--json"]].concat());
    assert!(!json.contains("calls"), "{json}");
    serde_json::from_str::<serde_json::Value>(&json).unwrap_or_else(|e| panic!("{e}: {json}"));
    // Not a terminal: stderr stays empty.
    let out = hetblas(&args);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--check` of every routine with a scalar NaN (`--alpha nan`: the reference is NaN where the
/// result is) passes and says so, in text and JSON: syrk, herk, syr2k, her2k, symm, hemm, trsm
/// and trmm failed it ("check FAILED: C(0,0) = NaN, expected NaN"). That a NaN or infinity the
/// reference does not have fails is tested where every check decides it, hetblas_core's
/// `reference::agrees` (and each check's own test).
#[test]
fn check_passes_a_nan_the_reference_has_in_every_routine() {
    for routine in [
        "gemm", "gemmt", "syrk", "herk", "syr2k", "her2k", "symm", "hemm", "trsm", "trmm",
    ] {
        let args = [routine, "-s", "12", "--reps", "1", "--check", "--alpha=nan"];
        let so = stdout_of(&args);
        let line = so
            .lines()
            .find(|l| l.starts_with("check: "))
            .unwrap_or_else(|| panic!("{routine}: no check line in\n{so}"));
        assert!(
            line.contains("entries of the result are NaN or infinite, as the reference's"),
            "{routine}: {line}"
        );
        let so = stdout_of(&[&args[..], &["--json"]].concat());
        let v: serde_json::Value =
            serde_json::from_str(&so).unwrap_or_else(|e| panic!("{routine}: {e}: {so}"));
        assert_eq!(v["check"]["passed"], true, "{routine}: {so}");
        assert!(
            v["check"]["non_finite"].as_u64().is_some_and(|n| n > 0),
            "{routine}: {so}"
        );
    }
}
