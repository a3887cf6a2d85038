//! libhetblas.so as C programs see it: built here with the system `cc`, linked against the
//! library or run with it preloaded, over a stand-in host BLAS (`c/fixture.c`) whose Fortran
//! GEMM calls its CBLAS GEMM by global name.
//!
//! - no recursion: hetblas reaches the host through its handle and loads it with
//!   RTLD_DEEPBIND, so the host's own call by global name stays inside the host (without
//!   either, each case below would recurse until the stack overflows);
//! - the device path (two emulated devices, every GEMM offloaded) gives correct results, and a
//!   device failure (`HETBLAS_FAULT=dev=any,at=alloc:1`) completes on the host, correctly, and says so;
//! - bad arguments reach the program's own `xerbla_` / `xerbla_64_` / `cblas_xerbla` with the
//!   reference's names and parameter numbers, and the call does nothing else;
//! - the ILP64 (`sgemm_64_`) symbols compute;
//! - GEMMT under its names (`dgemmtr_`, `dgemmt_`, `cblas_dgemmt`, `cblas_dgemmtr`) computes
//!   one triangle, on the devices or, kept on the host, in the host's own `dgemmt_`;
//! - the renamed family of pip's wheels (`scipy_dgemm_`, `scipy_cblas_dgemm64_`, ...) is
//!   exported for every routine, computes, and forwards the calls it keeps on the host to the
//!   library that defines the same names (the fixture stands for a wheel's OpenBLAS); the LAPACK
//!   entries forward to the routine they replaced;
//! - a CUDA program's device pointers given to `dgemm_` are computed where they live (on a
//!   GPU machine; skipped without one, failed with `HETBLAS_REQUIRE=cuda`).

mod common;

use common::lib_dir;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

struct Built {
    dir: PathBuf,
    fixture: PathBuf,
    linked: PathBuf,
    preload: PathBuf,
}

fn cc(args: &[&str]) {
    let out = Command::new("cc")
        .args(args)
        .output()
        .expect("the system C compiler `cc`");
    assert!(
        out.status.success(),
        "cc {args:?} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Builds the fixture library and the two test programs once.
fn built() -> &'static Built {
    static B: OnceLock<Built> = OnceLock::new();
    B.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c");
        let dir = std::env::temp_dir().join(format!("hetblas-capi-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let s = |p: &Path| p.to_str().unwrap().to_string();
        let fixture = dir.join("libfixture.so");
        cc(&[
            "-O1",
            "-shared",
            "-fPIC",
            "-o",
            &s(&fixture),
            &s(&src.join("fixture.c")),
        ]);
        let lib = lib_dir();
        // Linked against hetblas (as a program linked with -lhetblas), exporting its own
        // error handlers like a Fortran program linked against a BLAS does.
        let linked = dir.join("dropin_linked");
        cc(&[
            "-O1",
            "-rdynamic",
            "-o",
            &s(&linked),
            &s(&src.join("dropin.c")),
            &format!("-L{}", s(&lib)),
            "-lhetblas",
            &format!("-Wl,-rpath,{}", s(&lib)),
            "-lm",
        ]);
        // Linked against the fixture only, for LD_PRELOAD=libhetblas.so.
        let preload = dir.join("dropin_preload");
        cc(&[
            "-O1",
            "-DPRELOAD_ONLY",
            "-o",
            &s(&preload),
            &s(&src.join("dropin.c")),
            &format!("-L{}", s(&dir)),
            "-lfixture",
            &format!("-Wl,-rpath,{}", s(&dir)),
            "-lm",
        ]);
        Built {
            dir,
            fixture,
            linked,
            preload,
        }
    })
}

/// Runs `prog case` with a clean hetblas environment plus `env`, killed after 60 s.
fn run(prog: &Path, case: &str, preload: bool, env: &[(&str, &str)]) -> Output {
    let b = built();
    let mut cmd = Command::new("timeout");
    cmd.arg("60").arg(prog).arg(case).current_dir(&b.dir);
    for (k, _) in std::env::vars() {
        if k.starts_with("HETBLAS_") || k == "LD_PRELOAD" {
            cmd.env_remove(k);
        }
    }
    cmd.env("HETBLAS_CBLAS", &b.fixture);
    if preload {
        cmd.env("LD_PRELOAD", lib_dir().join("libhetblas.so"));
    }
    cmd.envs(env.iter().copied());
    cmd.output().expect("run the test program")
}

fn assert_ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: exit {:?} (124: timed out, 139: stack overflow from recursion)\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn host_forwarding_does_not_recurse_when_linked() {
    let out = run(&built().linked, "gemm", false, &[]);
    assert_ok(&out, "linked, host = fixture");
}

#[test]
fn host_forwarding_does_not_recurse_when_preloaded() {
    let out = run(&built().preload, "gemm", true, &[]);
    assert_ok(&out, "preloaded, host = fixture");
}

#[test]
fn device_path_computes_and_says_so() {
    let env = [
        ("HETBLAS_EMULATED", "2"),
        ("HETBLAS_BACKENDS", "emulated"),
        ("HETBLAS_OFFLOAD_FLOPS", "0"),
        ("HETBLAS_VERBOSE", "1"),
    ];
    let out = run(&built().preload, "gemm", true, &env);
    assert_ok(&out, "emulated devices");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("devices [emulated:0, emulated:1]"),
        "the GEMMs did not go to the emulated devices:\n{err}"
    );
    // Each device call names the tiling its plan chose.
    let device_lines: Vec<&str> = err
        .lines()
        .filter(|l| l.contains(": devices [") && !l.contains("runtime started"))
        .collect();
    assert!(
        !device_lines.is_empty() && device_lines.iter().all(|l| l.contains(", tile ")),
        "a device call's line lacks its tiling:\n{err}"
    );
    let gemmt = err
        .lines()
        .filter(|l| l.contains("dgemmtr ") && l.contains("devices [emulated:0, emulated:1]"))
        .count();
    assert_eq!(
        gemmt, 4,
        "the 4 GEMMTs did not all go to the devices:\n{err}"
    );
}

/// With `HETBLAS_TRACE=DIR` every call the devices computed writes its trace there: GEMM's,
/// GEMMT's and the symmetric routines' (SYRK wrote none once).
#[test]
fn every_device_call_writes_its_trace() {
    let dir = built().dir.join(format!("traces-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env = [
        ("HETBLAS_EMULATED", "2"),
        ("HETBLAS_BACKENDS", "emulated"),
        ("HETBLAS_OFFLOAD_FLOPS", "0"),
        ("HETBLAS_TRACE", dir.to_str().unwrap()),
    ];
    for case in ["syrk", "gemm"] {
        let out = run(&built().preload, case, true, &env);
        assert_ok(&out, case);
    }
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    for routine in ["dsyrk", "dgemm", "dgemmtr"] {
        assert!(
            names
                .iter()
                .any(|f| f.ends_with(&format!("-{routine}.json"))),
            "no {routine} trace among {names:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// GEMMT kept on the host goes to the host's own routine (the fixture's `dgemmt_`, OpenBLAS's
/// and MKL's name) from either of hetblas's names and from CBLAS.
#[test]
fn gemmt_on_the_host_goes_to_the_hosts_own_routine() {
    let out = run(&built().preload, "gemmt-host", true, &[]);
    assert_ok(&out, "gemmt, host = fixture with dgemmt_");
}

#[test]
fn device_failure_completes_on_the_host() {
    let env = [
        ("HETBLAS_EMULATED", "2"),
        ("HETBLAS_BACKENDS", "emulated"),
        ("HETBLAS_OFFLOAD_FLOPS", "0"),
        ("HETBLAS_FAULT", "dev=any,at=alloc:1"),
        ("HETBLAS_VERBOSE", "1"),
    ];
    let out = run(&built().preload, "gemm", true, &env);
    assert_ok(&out, "emulated device failing");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("device path failed") && err.contains("completed on the host BLAS"),
        "the failure was not reported:\n{err}"
    );
    assert!(
        err.contains("devices [emulated:0, emulated:1]"),
        "after the failure the device path should work again:\n{err}"
    );
}

/// A device failing mid-call, after tiles of C were written back: the drop-in's Runtime keeps
/// no undo log of C (it costs a host copy of C per call), so the drop-in's own copy of C must
/// give the host BLAS the original C to redo the call from (beta != 0 in `gemm`'s checks).
#[test]
fn a_device_failing_after_write_backs_leaves_the_host_the_original_c() {
    // One device, so that it writes C(0, 0) back (its fourth copy) before it fails at its
    // fifth, in the first call (300x200x250, beta 0.5, two tiles of C). Without the drop-in's
    // copy of C the host redid the call from the written tile: max error 1.97.
    let env = [
        ("HETBLAS_EMULATED", "1"),
        ("HETBLAS_BACKENDS", "emulated"),
        ("HETBLAS_OFFLOAD_FLOPS", "0"),
        ("HETBLAS_FAULT", "dev=any,at=copy:5"),
        ("HETBLAS_VERBOSE", "1"),
    ];
    let out = run(&built().preload, "gemm", true, &env);
    assert_ok(&out, "emulated device failing after a write-back");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("dgemm 300x200x250: device path failed (fault-injection error")
            && err.contains("in copy 5"),
        "the fault did not hit the first call after its write-back:\n{err}"
    );
}

#[test]
fn bad_arguments_reach_the_programs_handlers() {
    let out = run(&built().linked, "xerbla", false, &[]);
    assert_ok(&out, "xerbla");
}

#[test]
fn bad_arguments_without_host_blas() {
    let out = run(
        &built().linked,
        "xerbla",
        false,
        &[("HETBLAS_CBLAS", "rust")],
    );
    assert_ok(&out, "xerbla, HETBLAS_CBLAS=rust");
}

/// A setting the drop-in library cannot use is one line on stderr, naming the variable, the
/// value and why, and the default; the program runs to its end, correct (the library and the
/// command refuse the same values: `hetblas::Settings`).
#[test]
fn a_bad_setting_is_one_line_on_stderr_and_the_default() {
    let env = [
        ("HETBLAS_VERBOSE", "yes"),
        ("HETBLAS_OFFLOAD_FLOPS", "lots"),
        ("HETBLAS_FAULT", "garbage"),
        ("HETBLAS_PIN", "xyz"),
    ];
    let out = run(&built().preload, "gemm", true, &env);
    assert_ok(&out, "bad settings");
    let err = String::from_utf8_lossy(&out.stderr);
    for line in [
        "hetblas: HETBLAS_VERBOSE=\"yes\": expected 1 (on) or 0 (off); using the default",
        "hetblas: HETBLAS_OFFLOAD_FLOPS=\"lots\": not a number of flops",
        "hetblas: HETBLAS_FAULT=\"garbage\": fault \"garbage\"",
        "hetblas: HETBLAS_PIN is set but no longer read",
    ] {
        let n = err.lines().filter(|l| l.starts_with(line)).count();
        assert_eq!(n, 1, "{line:?} {n} times in:\n{err}");
    }
    // A host BLAS named that does not load: said once, and the pure-Rust one answers.
    let out = run(
        &built().linked,
        "gemm",
        false,
        &[("HETBLAS_CBLAS", "/nonexistent/libblas.so")],
    );
    assert_ok(&out, "HETBLAS_CBLAS=/nonexistent/libblas.so");
    let err = String::from_utf8_lossy(&out.stderr);
    let said = "hetblas: HETBLAS_CBLAS=\"/nonexistent/libblas.so\": the host BLAS cannot be used: ";
    assert_eq!(err.matches(said).count(), 1, "{err}");
    assert!(err.contains("No such file"), "the load error: {err}");
}

#[test]
fn ilp64_symbols_compute() {
    let out = run(&built().linked, "ilp64", false, &[]);
    assert_ok(&out, "sgemm_64_");
}

#[test]
fn renamed_families_forward_to_the_library_that_defines_them() {
    let out = run(
        &built().preload,
        "renamed-host",
        true,
        &[("HETBLAS_VERBOSE", "1")],
    );
    assert_ok(&out, "scipy_ names, host path");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("host BLAS of the scipy_ ILP64 names") && err.contains("libfixture.so"),
        "the scipy_ names' host was not the library defining them:\n{err}"
    );
}

#[test]
fn renamed_families_reach_the_devices() {
    let env = [
        ("HETBLAS_EMULATED", "2"),
        ("HETBLAS_BACKENDS", "emulated"),
        ("HETBLAS_OFFLOAD_FLOPS", "0"),
        ("HETBLAS_SUMMARY", "1"),
    ];
    let out = run(&built().preload, "renamed-devices", true, &env);
    assert_ok(&out, "scipy_ names, device path");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("7 on the devices [emulated:0, emulated:1]"),
        "the summary does not count the 4 renamed GEMMs and 3 factorizations on the \
         devices:\n{err}"
    );
}

/// Every BLAS and CBLAS entry of the reference names has its `scipy_` forms in both widths
/// (they are generated from the same definitions; this checks the generation left none out).
#[test]
fn every_routine_is_exported_under_the_renamed_family() {
    let out = Command::new("nm")
        .args(["-D", "--defined-only"])
        .arg(lib_dir().join("libhetblas.so"))
        .output()
        .expect("nm (binutils)");
    assert!(out.status.success());
    let names: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().last().map(str::to_string))
        .collect();
    let aux = [
        "xerbla_",
        "xerbla_64_",
        "xerbla_array_",
        "lsame_",
        "cblas_xerbla",
    ];
    let mut checked = 0;
    for n in names
        .iter()
        .filter(|n| !n.starts_with("scipy_") && !aux.contains(&n.as_str()))
    {
        let wanted = if let Some(base) = n.strip_suffix("_64_") {
            vec![format!("scipy_{base}_64_")]
        } else if n.starts_with("cblas_") {
            match n.strip_suffix("64_") {
                Some(base) => vec![format!("scipy_{base}64_")],
                None => vec![format!("scipy_{n}"), format!("scipy_{n}64_")],
            }
        } else if let Some(base) = n.strip_suffix('_') {
            vec![format!("scipy_{base}_"), format!("scipy_{base}_64_")]
        } else {
            continue; // data symbols (RowMajorStrg, CBLAS_CallFromC)
        };
        for w in wanted {
            assert!(names.contains(&w), "{n} is exported but {w} is not");
            checked += 1;
        }
    }
    assert!(
        checked > 900
            && names.contains("scipy_cblas_dgemm64_")
            && names.contains("scipy_dgesv_64_"),
        "only {checked} renamed names checked"
    );
}

#[test]
fn header_compiles_and_links_both_widths() {
    let b = built();
    let lib = lib_dir();
    let inc = Path::new(env!("CARGO_MANIFEST_DIR")).join("include");
    let src = b.dir.join("header.c");
    std::fs::write(
        &src,
        "#include \"hetblas.h\"\n\
         int main(void) {\n\
           double a[4] = {1, 2, 3, 4}, c[4] = {0};\n\
           cblas_dgemm(CblasColMajor, CblasNoTrans, CblasNoTrans, 2, 2, 2, 1.0, a, 2, a, 2,\n\
                       0.0, c, 2);\n\
           return !(c[0] == 7 && c[1] == 10 && c[2] == 15 && c[3] == 22);\n\
         }\n",
    )
    .unwrap();
    for (name, def) in [
        ("header32", "-DHETBLAS_LP64"),
        ("header64", "-DHETBLAS_ILP64"),
    ] {
        let exe = b.dir.join(name);
        cc(&[
            "-Wall",
            "-Werror",
            def,
            "-I",
            inc.to_str().unwrap(),
            "-o",
            exe.to_str().unwrap(),
            src.to_str().unwrap(),
            &format!("-L{}", lib.display()),
            "-lhetblas",
            &format!("-Wl,-rpath,{}", lib.display()),
        ]);
        let out = run(&exe, "", false, &[]);
        assert_ok(&out, name);
    }
}

#[test]
fn cuda_device_pointers_are_computed_where_they_live() {
    let b = built();
    let exe = b.dir.join("devptr");
    let lib = lib_dir();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/devptr.c");
    cc(&[
        "-O1",
        "-Wall",
        "-Werror",
        "-o",
        exe.to_str().unwrap(),
        src.to_str().unwrap(),
        &format!("-L{}", lib.display()),
        "-lhetblas",
        &format!("-Wl,-rpath,{}", lib.display()),
        "-ldl",
        "-lm",
    ]);
    let require = std::env::var("HETBLAS_REQUIRE").unwrap_or_default();
    let out = run(
        &exe,
        "",
        false,
        &[("HETBLAS_REQUIRE", &require), ("HETBLAS_VERBOSE", "1")],
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    if out.status.code() == Some(77) {
        eprintln!("{}", stdout.trim());
        return;
    }
    assert_ok(&out, "devptr");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("computed where they live"),
        "the device pointers did not take the device path:\n{err}"
    );
}
