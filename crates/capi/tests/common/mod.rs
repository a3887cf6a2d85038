//! Helpers shared by the integration tests of libhetblas.so.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The directory holding libhetblas.so (target/<profile>, next to this test's deps/), after
/// building it: cargo does not build a cdylib for integration tests, so the test does, with
/// the test profile (whose artifacts are already there). Where the test runs from a bundle of
/// binaries built on another machine (`../shared/tools/device-bundle`: tests in
/// `.device/tests`, libraries in `.device/bin`), the bundled library is used.
pub fn lib_dir() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let exe = std::env::current_exe().expect("test executable path");
        let bundled = exe.parent().and_then(Path::parent).map(|d| d.join("bin"));
        if let Some(dir) = bundled.filter(|d| d.join("libhetblas.so").exists()) {
            return dir;
        }
        let status = Command::new(env!("CARGO"))
            .args([
                "build",
                "--quiet",
                "--profile",
                "test",
                "-p",
                "hetblas-capi",
            ])
            .status()
            .expect("run cargo to build libhetblas.so");
        assert!(status.success(), "cargo build -p hetblas-capi failed");
        let dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("target/<profile>")
            .to_path_buf();
        assert!(
            dir.join("libhetblas.so").exists(),
            "{} has no libhetblas.so",
            dir.display()
        );
        dir
    })
    .clone()
}
