//! What the runtime builder does with the settings it is given: a host BLAS named that does
//! not load, a corrupt profile, faults for the emulated devices. (`Settings::read` itself is
//! tested in the crate; the environment path in `settings_env.rs`.)

use hetblas::{BlasLibrary, Error, MachineProfile, Runtime, Settings};
use hetblas_core::fault::FaultSpec;
use std::path::PathBuf;

/// A file in the temporary directory, named for this process and `name`.
fn temp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("hetblas-settings-{}-{name}", std::process::id()))
}

/// Settings with no profile location and the host BLAS `library`.
fn settings(library: BlasLibrary) -> Settings {
    let mut s = Settings::default();
    s.host_blas = library;
    s
}

#[test]
fn a_host_blas_that_does_not_load_is_an_error_naming_the_setting() {
    let s = settings(BlasLibrary::Path("/nonexistent/libcblas.so".into()));
    let e = Runtime::builder()
        .settings(s.clone())
        .emulated(1)
        .build()
        .unwrap_err();
    let Error::Setting {
        variable, value, ..
    } = &e
    else {
        panic!("not a setting error: {e}")
    };
    assert_eq!(
        (variable.as_str(), value.as_str()),
        ("HETBLAS_CBLAS", "/nonexistent/libcblas.so")
    );
    assert!(e.to_string().contains("/nonexistent/libcblas.so"), "{e}");
    // The survey builds nothing from the CPU or the emulated devices and says why each is
    // absent; the GPUs (absent here, or present) are unaffected.
    let survey = Runtime::builder().settings(s).emulated(1).survey();
    let reason = |name: &str| {
        survey
            .backends
            .iter()
            .find(|b| b.backend == name)
            .and_then(|b| b.reason.clone())
            .unwrap_or_default()
    };
    for name in ["cpu", "emulated"] {
        assert!(
            reason(name).starts_with("HETBLAS_CBLAS=\"/nonexistent/libcblas.so\": "),
            "{name}"
        );
    }
    assert!(survey.setting_errors.is_empty());
}

#[test]
fn the_rust_fallback_and_the_search_both_build() {
    for library in [BlasLibrary::Rust, BlasLibrary::Search] {
        let rt = Runtime::builder()
            .settings(settings(library.clone()))
            .only(&["cpu"])
            .build()
            .unwrap_or_else(|e| panic!("{library:?}: {e}"));
        assert_eq!(rt.settings().host_blas, library);
        let detail = &rt.devices()[0].info().detail;
        if library == BlasLibrary::Rust {
            assert!(detail.contains("Rust"), "{detail}");
        }
    }
}

/// A corrupt profile (not JSON, not a profile) is an error; a profile of another format
/// version, or of other devices, is a note and the built-in rules.
#[test]
fn a_corrupt_profile_is_an_error_another_version_or_machine_a_note() {
    let corrupt = temp("corrupt.json");
    std::fs::write(&corrupt, "{\"version\": 1, \"devices\": [").unwrap();
    let mut s = settings(BlasLibrary::Search);
    s.profile = Some(corrupt.clone());
    let build = |s: &Settings| Runtime::builder().settings(s.clone()).only(&["cpu"]);
    let e = build(&s).build().unwrap_err();
    assert!(matches!(e, Error::Profile(_)), "{e}");
    let text = e.to_string();
    assert!(
        text.contains(corrupt.to_str().unwrap()) && text.contains("hetblas calibrate"),
        "{text}"
    );
    let survey = build(&s).survey();
    assert!(survey.runtime.is_ok());
    assert!(
        survey.profile_status.contains("not a valid profile"),
        "{}",
        survey.profile_status
    );
    // Without the profile (as calibration builds its runtime) the file is not read.
    assert!(build(&s).without_profile().build().is_ok());

    // Another format version: a note.
    let old = temp("old-version.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&MachineProfile::new().to_json().unwrap()).unwrap();
    json["version"] = serde_json::json!(99);
    std::fs::write(&old, json.to_string()).unwrap();
    s.profile = Some(old.clone());
    let rt = build(&s).build().expect("an old profile is no error");
    assert!(
        rt.profile_status().contains("profile version 99"),
        "{}",
        rt.profile_status()
    );
    assert!(rt.profile().is_none());

    // Of other devices (an empty profile describes none of these): a note.
    let other = temp("other-machine.json");
    MachineProfile::new().save(&other).unwrap();
    s.profile = Some(other.clone());
    let rt = build(&s)
        .build()
        .expect("another machine's profile is no error");
    assert!(
        rt.profile_status().contains("ignored"),
        "{}",
        rt.profile_status()
    );
    for f in [corrupt, old, other] {
        let _ = std::fs::remove_file(f);
    }
}

/// The faults of the settings are armed on the devices they name at discovery, and only there.
#[test]
fn faults_are_armed_on_the_devices_they_name() {
    let mut s = settings(BlasLibrary::Search);
    s.faults = FaultSpec::parse_list("dev=emulated:1,at=kernel:1,kind=lost").unwrap();
    let rt = Runtime::builder()
        .settings(s)
        .only(&["cpu"])
        .emulated(2)
        .build()
        .unwrap();
    let (m, n, k) = (64, 48, 32);
    let a = vec![1.0f64; m * k];
    let b = vec![0.5f64; k * n];
    let mut c = vec![0.0f64; m * n];
    let on = |device: usize, c: &mut Vec<f64>| {
        rt.gemm_with(
            hetblas::Trans::N,
            hetblas::Trans::N,
            1.0,
            hetblas::MatRef::packed(&a, m, k).unwrap(),
            hetblas::MatRef::packed(&b, k, n).unwrap(),
            0.0,
            hetblas::MatMut::packed(c, m, n).unwrap(),
            &hetblas::GemmOptions::default().devices([device]).tile(16),
        )
    };
    // Device 1 (emulated:0) has no fault; device 2 (emulated:1) is lost at its first kernel:
    // the call fails, or another device finishes it and the report names the lost one.
    assert!(on(1, &mut c).unwrap().recovered.is_empty());
    match on(2, &mut c) {
        Err(e) => assert!(matches!(e, Error::DeviceLost { .. }), "{e}"),
        Ok(r) => assert_eq!(r.recovered[0].device, "emulated:1", "{:?}", r.recovered),
    }
}
