//! The row-interchange kernel's CUDA source (`kernels/laswp.cu`), compiled for the CPU by the
//! C++ compiler with `kernels/host_check.cpp` (one OS thread per CUDA thread, CUDA's
//! built-ins mapped onto C++) and run against LAPACK's order of interchanges: rounds, repeated
//! and out-of-range pivots, odd widths and leading dimensions, each element size. Runs without
//! a GPU; the conformance suite checks the PTX itself on a device.

use std::path::Path;
use std::process::Command;

#[test]
fn laswp_source_interchanges_rows_in_lapack_order_on_the_host() {
    let kernels = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    // Cargo makes its target tmp directory; a bundled binary run elsewhere (the GPU machine's
    // copy of the tree) finds none.
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::fs::create_dir_all(tmp).expect("the target tmp directory");
    let exe = tmp.join("laswp_host_check");
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".into());
    let built = Command::new(&cxx)
        .args(["-std=c++20", "-O1", "-pthread", "-Wall", "-Werror"])
        .arg("-Wno-unknown-pragmas")
        .arg("-o")
        .arg(&exe)
        .arg(kernels.join("host_check.cpp"))
        .output()
        .unwrap_or_else(|e| panic!("{cxx} (a C++20 compiler; CI installs g++): {e}"));
    assert!(
        built.status.success(),
        "{cxx} failed:\n{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let run = Command::new(&exe).output().expect("run the host check");
    println!("{}", String::from_utf8_lossy(&run.stdout));
    assert!(
        run.status.success(),
        "laswp.cu differs from LAPACK's order:\n{}",
        String::from_utf8_lossy(&run.stderr)
    );
}
