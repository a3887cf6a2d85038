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
    let dir = std::env::temp_dir().join(format!("hetblas-cli-test-{}", std::process::id()));
    Command::new(binary())
        .args(args)
        .env("HETBLAS_BACKENDS", "cpu")
        .env("HETBLAS_PROFILE", dir.join("absent-profile.json"))
        .env_remove("HETBLAS_EMULATED")
        .output()
        .expect("hetblas runs")
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
