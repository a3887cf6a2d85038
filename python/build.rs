//! Puts the drop-in library (crates/capi's libhetblas.so) into the package, beside the Python
//! files, so that the wheel carries it (`python -m hetblas run` preloads it).
//!
//! A library already there is kept when it is newer than every source of the crates it is built
//! from (python/build.sh and CI copy the workspace's own build there first). Otherwise it is
//! built here, by cargo in the root workspace: in the workspace's target directory, or, when
//! this build itself runs in that directory (cargo locks it for the whole build), in a
//! directory of its own under it. That is what `pip install ./python` on a fresh checkout does.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::SystemTime;

fn main() {
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest
        .parent()
        .expect("python/ is in the repository")
        .to_path_buf();
    let dest = manifest.join("hetblas").join("libhetblas.so");
    let crates = root.join("crates");
    println!("cargo:rerun-if-changed={}", dest.display());
    println!("cargo:rerun-if-changed={}", crates.display());
    println!(
        "cargo:rerun-if-changed={}",
        root.join("Cargo.lock").display()
    );

    let newest_source = newest(&crates).max(modified(&root.join("Cargo.lock")));
    if modified(&dest) > newest_source {
        return;
    }
    let workspace_target = root.join("target");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("set by cargo"));
    let target_dir = if canonical(&out_dir).starts_with(canonical(&workspace_target)) {
        workspace_target.join("python-dropin")
    } else {
        workspace_target
    };
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    println!(
        "cargo:warning=building libhetblas.so (crates/capi) into {}",
        target_dir.display()
    );
    let status = Command::new(cargo)
        .current_dir(&root)
        .args(["build", "--release", "-p", "hetblas-capi", "--target-dir"])
        .arg(&target_dir)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building crates/capi failed");
    let built = target_dir.join("release").join("libhetblas.so");
    std::fs::copy(&built, &dest)
        .unwrap_or_else(|e| panic!("copying {} to {}: {e}", built.display(), dest.display()));
}

/// The newest modification time of the sources under `dir` (Rust files, manifests, build
/// scripts' inputs), skipping build outputs.
fn newest(dir: &Path) -> SystemTime {
    let mut t = SystemTime::UNIX_EPOCH;
    let Ok(entries) = std::fs::read_dir(dir) else {
        return t;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = e.file_name();
        if name == "target" || name == "tests" || name == "benches" {
            continue;
        }
        if p.is_dir() {
            t = t.max(newest(&p));
        } else if matches!(
            p.extension().and_then(|x| x.to_str()),
            Some("rs" | "toml" | "c" | "h")
        ) {
            t = t.max(modified(&p));
        }
    }
    t
}

fn modified(p: &Path) -> SystemTime {
    std::fs::metadata(p)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}
