//! The library reads the environment as the command does: a bad value is the same error
//! ([`hetblas::Error::Setting`], naming the variable and the value). This binary holds one test,
//! so that the variables it sets are seen by nothing else.

use hetblas::{Error, Runtime};

#[test]
fn the_library_refuses_a_bad_setting_as_the_command_does() {
    for (var, value) in [
        ("HETBLAS_VERBOSE", "yes"),
        ("HETBLAS_FAULT", "garbage"),
        ("HETBLAS_BACKENDS", "garbage"),
    ] {
        std::env::set_var(var, value);
        let e = Runtime::discover().unwrap_err();
        assert!(
            matches!(&e, Error::Setting { variable, value: v, .. } if variable == var && v == value),
            "{var}={value}: {e}"
        );
        assert!(
            e.to_string().starts_with(&format!("{var}={value:?}: ")),
            "{e}"
        );
        // The survey reports it, and runs discovery with the default in its place.
        let survey = Runtime::builder().only(&["cpu"]).survey();
        assert_eq!(survey.setting_errors, [e]);
        assert!(survey.runtime.is_ok());
        std::env::remove_var(var);
    }
    assert!(Runtime::builder().only(&["cpu"]).build().is_ok());
}
