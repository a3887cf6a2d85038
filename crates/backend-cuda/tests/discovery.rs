//! Discovery never panics: with a GPU it finds devices and links; without one (CI) it reports
//! a clear reason.

use hetblas_core::{Backend, Error};
use hetblas_cuda::CudaBackend;

#[test]
fn discovery_finds_devices_or_says_why() {
    match CudaBackend.discover() {
        Ok(d) => {
            assert!(!d.devices.is_empty());
            // Each GPU has a link from and to the host.
            assert!(d.links.len() >= 2 * d.devices.len());
            for dev in &d.devices {
                assert!(dev.info().memory_bytes > 0);
                assert_eq!(dev.info().backend, "cuda");
            }
        }
        Err(Error::Unavailable { backend, reason }) => {
            assert_eq!(backend, "cuda");
            assert!(!reason.is_empty());
            assert!(
                !hetblas_conformance::required("cuda"),
                "HETBLAS_REQUIRE=cuda but CUDA is unavailable: {reason}"
            );
            eprintln!("SKIPPED (cuda unavailable: {reason})");
        }
        Err(other) => panic!("discovery failed with a non-reason error: {other:?}"),
    }
}

#[test]
fn device_filter_parses() {
    assert_eq!(hetblas_cuda::parse_filter("0, 2").unwrap(), vec![0, 2]);
    assert!(hetblas_cuda::parse_filter("x").is_err());
}
