//! The drop-in library's own settings: every environment variable libhetblas.so reads itself,
//! read here, once, into one typed value. (The Runtime's variables, `HETBLAS_BACKENDS`,
//! `HETBLAS_EMULATED`, ..., are the `hetblas` crate's, read when the Runtime starts.)

use std::path::PathBuf;
use std::sync::OnceLock;

/// What `HETBLAS_CBLAS` asks of the host BLAS.
#[derive(Debug, Clone, PartialEq)]
pub enum HostChoice {
    /// Unset or empty: the first library of the CPU backend's list that loads.
    Search,
    /// `rust` (or `none`): hetblas-refblas answers every host call.
    Rust,
    /// A library by path or soname.
    Library(String),
}

/// The settings of libhetblas.so.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// `HETBLAS_VERBOSE=1`: one stderr line per routing decision, and the summary at exit.
    pub verbose: bool,
    /// `HETBLAS_SUMMARY=1` (or verbose): the summary at exit only.
    pub summary: bool,
    /// `HETBLAS_TRACE=DIR`: each device call's Chrome trace is written there.
    pub trace_dir: Option<PathBuf>,
    /// `HETBLAS_OFFLOAD_FLOPS=x`: every real GEMM of at least `x` flops goes to the devices.
    /// `Err(text)` when it is set but not a number (reported once, then the built-in rule).
    pub offload_flops: Result<Option<f64>, String>,
    /// `HETBLAS_CBLAS`.
    pub host: HostChoice,
}

impl Settings {
    /// The settings a variable reader gives (`var(name)`: the variable's value, if set).
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Settings {
        let verbose = var("HETBLAS_VERBOSE").is_some_and(|v| v.trim() == "1");
        let summary = verbose || var("HETBLAS_SUMMARY").is_some_and(|v| v.trim() == "1");
        let trace_dir = var("HETBLAS_TRACE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from);
        let offload_flops = match var("HETBLAS_OFFLOAD_FLOPS") {
            None => Ok(None),
            Some(v) => match v.trim().parse::<f64>() {
                Ok(x) if x >= 0.0 => Ok(Some(x)),
                _ => Err(v),
            },
        };
        let host = match var("HETBLAS_CBLAS") {
            Some(p) if p.eq_ignore_ascii_case("rust") || p.eq_ignore_ascii_case("none") => {
                HostChoice::Rust
            }
            Some(p) if !p.is_empty() => HostChoice::Library(p),
            _ => HostChoice::Search,
        };
        Settings {
            verbose,
            summary,
            trace_dir,
            offload_flops,
            host,
        }
    }
}

/// The process's settings, read from the environment on first use.
pub fn settings() -> &'static Settings {
    static S: OnceLock<Settings> = OnceLock::new();
    S.get_or_init(|| Settings::from_vars(|k| std::env::var(k).ok()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(vars: &[(&str, &str)]) -> Settings {
        Settings::from_vars(|k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn unset_variables_give_the_defaults() {
        let s = from(&[]);
        assert!(!s.verbose && !s.summary);
        assert_eq!(s.trace_dir, None);
        assert_eq!(s.offload_flops, Ok(None));
        assert_eq!(s.host, HostChoice::Search);
    }

    #[test]
    fn each_variable_is_read() {
        let s = from(&[
            ("HETBLAS_VERBOSE", "1"),
            ("HETBLAS_TRACE", "/tmp/t"),
            ("HETBLAS_OFFLOAD_FLOPS", " 1e9 "),
            ("HETBLAS_CBLAS", "RUST"),
        ]);
        assert!(s.verbose && s.summary, "verbose implies the summary");
        assert_eq!(s.trace_dir, Some(PathBuf::from("/tmp/t")));
        assert_eq!(s.offload_flops, Ok(Some(1e9)));
        assert_eq!(s.host, HostChoice::Rust);
        let s = from(&[
            ("HETBLAS_SUMMARY", "1"),
            ("HETBLAS_VERBOSE", "0"),
            ("HETBLAS_OFFLOAD_FLOPS", "lots"),
            ("HETBLAS_CBLAS", "/opt/libblas.so"),
        ]);
        assert!(s.summary && !s.verbose);
        assert_eq!(s.offload_flops, Err("lots".into()));
        assert_eq!(s.host, HostChoice::Library("/opt/libblas.so".into()));
        assert_eq!(
            from(&[("HETBLAS_OFFLOAD_FLOPS", "-1")]).offload_flops,
            Err("-1".into())
        );
    }
}
