//! Fuzzing the C ABI of libhetblas.so in-process: every routine it exports (the Fortran
//! `?xxx_` and ILP64 `?xxx_64_` entries, CBLAS `cblas_?xxx` and `cblas_?xxx64_`), in every
//! precision, with seeded random arguments over the routine's whole argument space: option
//! characters upper and lower case and junk, negative, zero and small sizes (in the ILP64
//! entries also sizes below -2^32, which a 32-bit truncation would read as 0), leading
//! dimensions short, exact and padded, zero and negative increments, alpha and beta 0, 1, -1,
//! random and NaN, NaN in the output arrays (beta = 0 must not read it).
//!
//! The oracles ([`oracle`]):
//! - Debian's reference BLAS (`libblas3`, and `libblas64-3` for the ILP64 entries), loaded
//!   with libloading and its `xerbla_`/`cblas_xerbla` intercepted, says which calls are
//!   invalid and what they report: libhetblas.so must report the same routine name and
//!   parameter number, through its entry's handler, and touch no array;
//! - the host BLAS (OpenBLAS) computes each valid call: libhetblas.so's Fortran entries, which
//!   forward to it, must match bit for bit; its CBLAS entries and the routines it computes
//!   itself within the dtype's error bound.
//!
//! - GEMMT (`?gemmtr`, `?gemmt`), which Debian's reference BLAS (3.11) lacks, is judged
//!   against stand-ins written from the reference 3.12 sources over hetblas-refblas
//!   ([`standin`]; see there what that does and does not show).
//!
//! GEMM also runs against an f64-accumulated reference of its own ([`gemm`]). Libraries'
//! stderr is captured during the run: a panic caught at an entry (hetblas prints "internal
//! error (panic)") fails the test. Cases per symbol and entry point: `HETBLAS_FUZZ_CASES`
//! (default 500: about 300,000 cases, a few seconds). A failure prints the symbol, the entry point, the case's seed and its
//! arguments.

#[path = "../common/mod.rs"]
mod common;
#[macro_use]
mod call;
mod gemm;
mod libs;
mod oracle;
mod standin;
mod table;
mod values;

use libs::{libs, required, serial, with_prefix, PREFIXES, REFERENCE, REFERENCE64};
use oracle::Ctx;
use std::collections::BTreeMap;
use std::io::{Read, Seek};
use std::os::fd::AsRawFd;
use values::Api;

/// Captures this process's stderr (file descriptor 2) until [`StderrCapture::finish`].
struct StderrCapture {
    saved: i32,
    file: std::fs::File,
}

impl StderrCapture {
    fn start() -> StderrCapture {
        let file = tempfile();
        // SAFETY: dup and dup2 on descriptors this process owns; 2 is restored in finish.
        let saved = unsafe { libc::dup(2) };
        assert!(saved >= 0, "dup(2)");
        // SAFETY: as above.
        assert!(unsafe { libc::dup2(file.as_raw_fd(), 2) } >= 0, "dup2");
        StderrCapture { saved, file }
    }

    /// Restores stderr; returns what was written to it.
    fn finish(mut self) -> String {
        // SAFETY: restores the descriptor saved in start, then closes the copy.
        unsafe {
            libc::dup2(self.saved, 2);
            libc::close(self.saved);
        }
        let mut s = String::new();
        self.file.rewind().expect("rewind the capture");
        self.file.read_to_string(&mut s).expect("read the capture");
        s
    }
}

fn tempfile() -> std::fs::File {
    let dir = Some(std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")))
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let path = dir.join(format!("fuzz_abi_stderr_{}", std::process::id()));
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&path)
        .expect("a capture file");
    let _ = std::fs::remove_file(&path);
    f
}

/// Whether the reference libraries are there; `false` (after saying why) skips, unless
/// `HETBLAS_REQUIRE` names `netlib` (CI), which fails instead.
fn references_present() -> bool {
    let l = libs();
    let missing: Vec<&str> = [
        (l.reference.is_none(), REFERENCE),
        (l.reference64.is_none(), REFERENCE64),
    ]
    .iter()
    .filter(|(m, _)| *m)
    .map(|(_, p)| *p)
    .collect();
    if missing.is_empty() {
        return true;
    }
    let msg = format!(
        "the reference BLAS is missing ({}; Debian packages libblas3, libblas64-3)",
        missing.join(", ")
    );
    assert!(!required("netlib"), "HETBLAS_REQUIRE=netlib but {msg}");
    eprintln!("skipped: {msg}");
    false
}

/// Whether libhetblas.so forwards to the host the test loaded (its default choice,
/// libopenblas.so.0, not `HETBLAS_CBLAS=...`).
fn forwarding() -> bool {
    let host = libs().host.is_some();
    assert!(
        host || !required("openblas"),
        "HETBLAS_REQUIRE=openblas but libopenblas.so.0 is not loadable"
    );
    if !host {
        eprintln!("no libopenblas.so.0: valid calls are checked for their reports only");
    }
    host && std::env::var("HETBLAS_CBLAS").map_or(true, |v| v.is_empty())
}

fn cases_per_entry() -> usize {
    std::env::var("HETBLAS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500)
}

#[test]
fn every_exported_routine_against_the_reference_and_host_blas() {
    let _serial = serial();
    if !references_present() {
        return;
    }
    let mut ctx = Ctx {
        cases: cases_per_entry(),
        forwarding: forwarding(),
        by_family: BTreeMap::new(),
        by_api: BTreeMap::new(),
        wrong: Vec::new(),
    };
    let entries = table::entries();
    let start = std::time::Instant::now();
    let capture = StderrCapture::start();
    for prefix in PREFIXES {
        with_prefix(prefix, || {
            for e in &entries {
                for api in Api::ALL {
                    (e.run)(&mut ctx, api);
                }
            }
        });
    }
    let stderr = capture.finish();
    let secs = start.elapsed().as_secs_f64();

    let total: usize = ctx.by_api.values().map(|t| t.cases).sum();
    eprintln!(
        "{total} cases over {} symbols x {} entry points x {} name families in {secs:.1} s; by family \
         (cases / invalid / bit-identical / within the bound / reference diverges):",
        entries.len(),
        Api::ALL.len(),
        PREFIXES.len()
    );
    for (f, t) in &ctx.by_family {
        eprintln!(
            "  {f:8} {:6} / {:6} / {:6} / {:6} / {:4}",
            t.cases, t.invalid, t.identical, t.bounded, t.divergent
        );
    }
    for (a, t) in &ctx.by_api {
        eprintln!(
            "  {a:15} {:6} / {:6} / {:6} / {:6} / {:4}",
            t.cases, t.invalid, t.identical, t.bounded, t.divergent
        );
    }
    let panics = stderr.matches("panic").count();
    let mut by_symbol: BTreeMap<&str, usize> = BTreeMap::new();
    for w in &ctx.wrong {
        let key = w.split(", case seed").next().unwrap_or(w);
        *by_symbol.entry(key).or_default() += 1;
    }
    assert!(
        ctx.wrong.is_empty() && panics == 0,
        "{} wrong of {} ({by_symbol:?}), {panics} panics; the first:\n{}\nstderr:\n{}",
        ctx.wrong.len(),
        total + ctx.wrong.len(),
        ctx.wrong[..ctx.wrong.len().min(400)].join("\n"),
        &stderr[..stderr.len().min(4000)]
    );
    // Every family reaches both sides: invalid calls, and valid ones compared.
    for (f, t) in &ctx.by_family {
        assert!(
            t.identical + t.bounded > 0,
            "{f}: no valid call in {} cases",
            t.cases
        );
    }
    assert!(
        total >= 100_000 || ctx.cases < 500,
        "{total} cases: fewer than 100,000"
    );
}

#[test]
fn gemm_against_an_f64_accumulated_reference() {
    let _serial = serial();
    let capture = StderrCapture::start();
    let (cases, invalid, wrong) = gemm::run(1_000);
    let stderr = capture.finish();
    eprintln!(
        "GEMM: {cases} cases ({invalid} invalid), {} wrong",
        wrong.len()
    );
    let panics = stderr.matches("panic").count();
    assert!(
        wrong.is_empty() && panics == 0,
        "{} wrong of {cases}, {panics} panics; the first: {:#?}\nstderr:\n{}",
        wrong.len(),
        &wrong[..wrong.len().min(10)],
        &stderr[..stderr.len().min(4000)]
    );
    // About a third of the generated calls are invalid (each kind of argument wrong).
    assert!(invalid > cases / 5, "{invalid} invalid calls of {cases}");
}
