//! Settings: every environment variable hetblas reads, read once, here, into one typed value.
//!
//! Nothing below this crate reads the environment: the runtime builder hands each part what it
//! needs (the backends their device lists, host BLAS and faults; the profile's location to the
//! loader), and the drop-in library reads the same [`Settings`] for its own (offload threshold,
//! verbose, trace). A variable set to a value that cannot be used is an error naming the
//! variable and the value ([`Error::Setting`]): the library and the command refuse to start,
//! the drop-in library prints one line and uses the default. An empty variable counts as unset.
//!
//! | variable | field |
//! | --- | --- |
//! | `HETBLAS_BACKENDS=cuda,cpu` | [`Settings::backends`] |
//! | `HETBLAS_CUDA_DEVICES=0,1`, `HETBLAS_HIP_DEVICES=1` | [`Settings::cuda_devices`], [`Settings::hip_devices`] |
//! | `HETBLAS_CBLAS=/path/libX.so` or `rust` | [`Settings::host_blas`] |
//! | `HETBLAS_PROFILE=/path/profile.json` | [`Settings::profile`] |
//! | `HETBLAS_EMULATED=N` | [`Settings::emulated`] |
//! | `HETBLAS_FAULT="dev=1,at=kernel:4"` | [`Settings::faults`] |
//! | `HETBLAS_OFFLOAD_FLOPS=x` | [`Settings::offload_flops`] |
//! | `HETBLAS_VERBOSE=1` | [`Settings::verbose`] |
//! | `HETBLAS_SUMMARY=1` | [`Settings::summary`] |
//! | `HETBLAS_TRACE=DIR` | [`Settings::trace`] |
//!
//! Variables that experiments used and that are no longer read ([`RETIRED`]) are not errors:
//! set, each gives a note ([`Settings::retired`]) saying what replaced it.
//!
//! Not here: the library locations `HETBLAS_CUDA_LIB_DIR` and `HETBLAS_HIP_LIB_DIR`, which each
//! GPU backend's loader reads beside the vendors' own (`CUDA_HOME`, `ROCM_PATH`): the libraries
//! are loaded once per process, by whichever caller comes first (tests call the backends
//! directly); and the variables of tests and tools (`HETBLAS_REQUIRE`, `HETBLAS_FUZZ_CASES`,
//! `HETBLAS_BENCH_*`, ...), read by them.

use hetblas_core::fault::FaultSpec;
use hetblas_core::Error;
use hetblas_cpu::BlasLibrary;
use std::ffi::OsString;
use std::path::PathBuf;

/// The backends `HETBLAS_BACKENDS` may name. The host-emulated devices are added whatever the
/// list says when they are asked for (`HETBLAS_EMULATED`); naming them alone
/// (`HETBLAS_BACKENDS=emulated`) leaves every other backend out.
pub const BACKEND_NAMES: [&str; 4] = ["cuda", "hip", "cpu", "emulated"];

/// Variables hetblas no longer reads, with what replaced each: experiments whose choice is now
/// the model's (or fixed at what the measurements chose), and overrides of what a call or the
/// command says under one name.
pub const RETIRED: &[(&str, &str)] = &[
    (
        "HETBLAS_STEP_LEAD",
        "an experiment the model never chose; plans use no step lead",
    ),
    (
        "HETBLAS_FOLD_SPREAD",
        "an experiment; a fold tail spreads half its tiles",
    ),
    (
        "HETBLAS_FOLD_CHUNK",
        "an experiment; fold tasks share each tile out among the threads",
    ),
    ("HETBLAS_FOLD_THREADS", "folds run on the cores, at most 12"),
    (
        "HETBLAS_ADAPT_FOLD",
        "the model always prices folds at the rate recent folds reached",
    ),
    (
        "HETBLAS_HOST_FOLD",
        "the model decides; a call fixes it with GemmOptions::host_fold (the command: --host-fold)",
    ),
    (
        "HETBLAS_FOLD_TAIL",
        "the model decides; a call fixes it with GemmOptions::fold_tail (the command: --fold-tail)",
    ),
    (
        "HETBLAS_K_SPLIT",
        "the model decides; a call fixes it with GemmOptions::k_split",
    ),
    (
        "HETBLAS_PRESERVE_C",
        "a call asks for the undo log of C with GemmOptions::preserve_c",
    ),
    (
        "HETBLAS_TAIL_PIECES",
        "the planner splits by size; tests use DevicePool::set_tail_pieces",
    ),
    (
        "HETBLAS_PIN",
        "host memory is page-locked and cached; RuntimeBuilder::pin_policy chooses otherwise",
    ),
    (
        "HETBLAS_PREFAULT",
        "large fresh outputs are always faulted in before page-locking",
    ),
    (
        "HETBLAS_POPULATE_THREADS",
        "fresh memory is faulted in on every core",
    ),
    (
        "HETBLAS_POPULATE_STAGED",
        "a staged fresh output is always populated on every core during its call",
    ),
    (
        "HETBLAS_HUGEPAGE",
        "a staged fresh output is always populated on every core during its call",
    ),
    (
        "HETBLAS_EMULATED_FAIL",
        "HETBLAS_FAULT=dev=any,at=alloc:1 fails each device's first allocation",
    ),
];

/// Every setting hetblas reads, typed. `Default` is what an empty environment gives (but
/// [`Settings::profile`], whose default location comes from `HOME`).
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct Settings {
    /// `HETBLAS_BACKENDS`: the backends discovery asks ([`BACKEND_NAMES`]); `None`: all.
    /// Emulated devices, asked for explicitly, are added either way.
    pub backends: Option<Vec<String>>,
    /// `HETBLAS_CUDA_DEVICES`: the CUDA ordinals taken, in this order; `None`: all.
    pub cuda_devices: Option<Vec<i32>>,
    /// `HETBLAS_HIP_DEVICES`: the HIP ordinals taken, in this order; `None`: all.
    pub hip_devices: Option<Vec<i32>>,
    /// `HETBLAS_CBLAS`: the host BLAS of the CPU, the emulated devices and the drop-in
    /// library's host calls.
    pub host_blas: BlasLibrary,
    /// Where the machine profile is: `HETBLAS_PROFILE`, else under `XDG_CACHE_HOME` or `HOME`
    /// ([`hetblas_core::profile::default_path_with`]); `None` when none of them is set.
    pub profile: Option<PathBuf>,
    /// `HETBLAS_EMULATED`: host-emulated devices to add (tests; the command's `--emulated`).
    pub emulated: usize,
    /// `HETBLAS_FAULT`: faults armed on the devices at discovery (tests).
    pub faults: Vec<FaultSpec>,
    /// `HETBLAS_OFFLOAD_FLOPS`: the drop-in library offloads every real GEMM of at least this
    /// many flops (replacing its model and built-in rule).
    pub offload_flops: Option<f64>,
    /// `HETBLAS_VERBOSE=1`: the drop-in library says on stderr where each GEMM went, and why,
    /// and prints its summary at exit.
    pub verbose: bool,
    /// `HETBLAS_SUMMARY=1` (or verbose): the drop-in library prints one line at exit: calls
    /// seen, on the devices, time there and on the host.
    pub summary: bool,
    /// `HETBLAS_TRACE`: the directory the drop-in library writes each device call's trace to.
    pub trace: Option<PathBuf>,
    /// One note per retired variable that is set ([`RETIRED`]).
    pub retired: Vec<String>,
}

impl Settings {
    /// Reads every setting from the environment.
    ///
    /// # Errors
    /// [`Error::Setting`] for the first variable whose value cannot be used.
    pub fn from_env() -> Result<Settings, Error> {
        let (settings, mut errors) = Settings::read_env();
        match errors.is_empty() {
            true => Ok(settings),
            false => Err(errors.swap_remove(0)),
        }
    }

    /// Reads every setting from the environment, the default in place of each value that
    /// cannot be used, and the errors ([`Error::Setting`]) that say which (the drop-in library
    /// prints them and carries on; `hetblas devices` shows them).
    pub fn read_env() -> (Settings, Vec<Error>) {
        Settings::read(|name| std::env::var_os(name))
    }

    /// [`Settings::read_env`] with `var` giving each variable's value (tests pass their own).
    pub fn read(var: impl Fn(&str) -> Option<OsString>) -> (Settings, Vec<Error>) {
        let mut errors = Vec::new();
        // Set and not empty: an empty variable is no choice, not a choice of nothing.
        let get = |name: &str| var(name).filter(|v| !v.is_empty());
        let mut parse = |name: &'static str, f: &dyn Fn(&str) -> Result<(), String>| {
            if let Some(raw) = get(name) {
                let text = raw.to_string_lossy();
                if let Err(reason) = f(text.trim()) {
                    errors.push(setting_error(name, &text, reason));
                }
            }
        };
        let backends = std::cell::RefCell::new(None);
        parse("HETBLAS_BACKENDS", &|v| {
            *backends.borrow_mut() = Some(parse_backends(v)?);
            Ok(())
        });
        let cuda_devices = std::cell::RefCell::new(None);
        parse(cuda_var(), &|v| {
            *cuda_devices.borrow_mut() = Some(parse_ordinals(v)?);
            Ok(())
        });
        let hip_devices = std::cell::RefCell::new(None);
        parse(hip_var(), &|v| {
            *hip_devices.borrow_mut() = Some(parse_ordinals(v)?);
            Ok(())
        });
        let emulated = std::cell::Cell::new(0);
        parse("HETBLAS_EMULATED", &|v| {
            emulated.set(parse_emulated(v)?);
            Ok(())
        });
        let faults = std::cell::RefCell::new(Vec::new());
        parse("HETBLAS_FAULT", &|v| {
            *faults.borrow_mut() = FaultSpec::parse_list(v).map_err(|e| match e {
                Error::InvalidInput(why) => why,
                other => other.to_string(),
            })?;
            Ok(())
        });
        let offload_flops = std::cell::Cell::new(None);
        parse("HETBLAS_OFFLOAD_FLOPS", &|v| {
            match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x >= 0.0 => offload_flops.set(Some(x)),
                _ => return Err("not a number of flops (0 or more, such as 1e9)".into()),
            }
            Ok(())
        });
        let verbose = std::cell::Cell::new(false);
        parse("HETBLAS_VERBOSE", &|v| {
            match v {
                "1" => verbose.set(true),
                "0" => verbose.set(false),
                _ => return Err("expected 1 (on) or 0 (off)".into()),
            }
            Ok(())
        });
        let summary = std::cell::Cell::new(false);
        parse("HETBLAS_SUMMARY", &|v| {
            match v {
                "1" => summary.set(true),
                "0" => summary.set(false),
                _ => return Err("expected 1 (on) or 0 (off)".into()),
            }
            Ok(())
        });
        let trace = std::cell::RefCell::new(None);
        parse("HETBLAS_TRACE", &|v| {
            let dir = PathBuf::from(v);
            if !dir.is_dir() {
                return Err("not a directory (the drop-in library writes its traces there)".into());
            }
            *trace.borrow_mut() = Some(dir);
            Ok(())
        });
        let host_blas = match get("HETBLAS_CBLAS") {
            None => BlasLibrary::Search,
            Some(v) if v.to_string_lossy().trim().eq_ignore_ascii_case("rust") => BlasLibrary::Rust,
            // A path or a name for the loader; whether it loads, discovery says.
            Some(v) => BlasLibrary::Path(PathBuf::from(v)),
        };
        let profile = hetblas_core::profile::default_path_with(|k| get(k).map(PathBuf::from)).ok();
        let retired = RETIRED
            .iter()
            .filter(|(name, _)| get(name).is_some())
            .map(|(name, what)| format!("{name} is set but no longer read: {what}"))
            .collect();
        let settings = Settings {
            backends: backends.into_inner(),
            cuda_devices: cuda_devices.into_inner(),
            hip_devices: hip_devices.into_inner(),
            host_blas,
            profile,
            emulated: emulated.get(),
            faults: faults.into_inner(),
            offload_flops: offload_flops.get(),
            verbose: verbose.get(),
            summary: summary.get() || verbose.get(),
            trace: trace.into_inner(),
            retired,
        };
        (settings, errors)
    }

    /// The value `HETBLAS_CBLAS` was given, for messages (`None`: the search).
    pub fn host_blas_value(&self) -> Option<String> {
        match &self.host_blas {
            BlasLibrary::Search => None,
            BlasLibrary::Rust => Some("rust".into()),
            BlasLibrary::Path(p) => Some(p.display().to_string()),
        }
    }
}

/// [`Error::Setting`] for `variable`'s `value`.
pub fn setting_error(variable: &str, value: &str, reason: impl Into<String>) -> Error {
    Error::Setting {
        variable: variable.into(),
        value: value.into(),
        reason: reason.into(),
    }
}

/// The variable of the CUDA device list (the GPU layer names it in messages).
pub(crate) fn cuda_var() -> &'static str {
    <hetblas_cuda::Cuda as hetblas_gpu::GpuRuntime>::DEVICES_VAR
}

/// The variable of the HIP device list.
pub(crate) fn hip_var() -> &'static str {
    <hetblas_hip::Hip as hetblas_gpu::GpuRuntime>::DEVICES_VAR
}

fn parse_backends(v: &str) -> Result<Vec<String>, String> {
    let names: Vec<String> = v
        .split(',')
        .map(|s| s.trim().to_ascii_lowercase())
        .filter(|s| !s.is_empty())
        .collect();
    if names.is_empty() {
        return Err("names no backend".into());
    }
    if let Some(bad) = names.iter().find(|n| !BACKEND_NAMES.contains(&n.as_str())) {
        return Err(format!(
            "unknown backend {bad:?} (the backends are {})",
            BACKEND_NAMES.join(", ")
        ));
    }
    Ok(names)
}

fn parse_ordinals(v: &str) -> Result<Vec<i32>, String> {
    let ordinals = hetblas_core::device::parse_device_filter(v).map_err(|e| match e {
        Error::InvalidInput(why) => format!("{why}: not a list of GPU ordinals such as 0,2"),
        other => other.to_string(),
    })?;
    if ordinals.is_empty() {
        return Err("lists no GPU ordinal".into());
    }
    Ok(ordinals)
}

fn parse_emulated(v: &str) -> Result<usize, String> {
    let max = crate::MAX_EMULATED;
    match v.parse::<usize>() {
        Ok(n) if n <= max => Ok(n),
        Ok(n) => Err(format!("{n} emulated devices asked for; at most {max}")),
        Err(_) => Err(format!("not a count of emulated devices (0 to {max})")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(vars: &[(&str, &str)]) -> (Settings, Vec<Error>) {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::read(move |k| {
            vars.iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| OsString::from(v))
        })
    }

    #[test]
    fn an_empty_environment_is_the_default() {
        let (s, errors) = read(&[("HOME", "/h")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(
            s,
            Settings {
                profile: Some("/h/.cache/hetblas/profile.json".into()),
                ..Settings::default()
            }
        );
        // Empty values are unset.
        let (empty, errors) = read(&[
            ("HETBLAS_BACKENDS", ""),
            ("HETBLAS_CBLAS", ""),
            ("HETBLAS_VERBOSE", ""),
            ("HETBLAS_PIN", ""),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(empty, Settings::default());
    }

    #[test]
    fn each_variable_reads_into_its_field() {
        let dir = std::env::temp_dir();
        let dir = dir.to_str().unwrap();
        let (s, errors) = read(&[
            ("HETBLAS_BACKENDS", " CUDA, cpu "),
            ("HETBLAS_CUDA_DEVICES", "1,0"),
            ("HETBLAS_HIP_DEVICES", "2"),
            ("HETBLAS_CBLAS", "/opt/lib/libblis.so"),
            ("HETBLAS_PROFILE", "/p/profile.json"),
            ("HETBLAS_EMULATED", "3"),
            (
                "HETBLAS_FAULT",
                "dev=1,at=kernel:4;dev=any,at=alloc:2,kind=oom",
            ),
            ("HETBLAS_OFFLOAD_FLOPS", "1e9"),
            ("HETBLAS_VERBOSE", "1"),
            ("HETBLAS_TRACE", dir),
        ]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.backends, Some(vec!["cuda".into(), "cpu".into()]));
        assert_eq!(s.cuda_devices, Some(vec![1, 0]));
        assert_eq!(s.hip_devices, Some(vec![2]));
        assert_eq!(s.host_blas, BlasLibrary::Path("/opt/lib/libblis.so".into()));
        assert_eq!(s.profile, Some("/p/profile.json".into()));
        assert_eq!(s.emulated, 3);
        assert_eq!(s.faults.len(), 2);
        assert_eq!(s.offload_flops, Some(1e9));
        assert!(s.verbose);
        assert_eq!(s.trace, Some(dir.into()));
        assert!(s.retired.is_empty());
        let (rust, _) = read(&[("HETBLAS_CBLAS", "Rust")]);
        assert_eq!(rust.host_blas, BlasLibrary::Rust);
        let (emulated, errors) = read(&[("HETBLAS_BACKENDS", "emulated")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(emulated.backends, Some(vec!["emulated".into()]));
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable_and_the_value_and_the_default_stays() {
        for (var, value, why) in [
            ("HETBLAS_BACKENDS", "garbage", "unknown backend"),
            ("HETBLAS_BACKENDS", "cuda,gpu", "unknown backend \"gpu\""),
            ("HETBLAS_BACKENDS", ",", "names no backend"),
            ("HETBLAS_CUDA_DEVICES", "first", "ordinals"),
            ("HETBLAS_HIP_DEVICES", "-1", "ordinals"),
            ("HETBLAS_EMULATED", "x", "count"),
            ("HETBLAS_EMULATED", "65", "at most 64"),
            ("HETBLAS_FAULT", "garbage", "not key=value"),
            ("HETBLAS_FAULT", "dev=1,at=alloc:1,kind=panic", "allocation"),
            ("HETBLAS_OFFLOAD_FLOPS", "lots", "flops"),
            ("HETBLAS_OFFLOAD_FLOPS", "-1", "flops"),
            ("HETBLAS_VERBOSE", "yes", "expected 1"),
            (
                "HETBLAS_TRACE",
                "/nonexistent/hetblas-traces",
                "not a directory",
            ),
        ] {
            let (s, errors) = read(&[(var, value)]);
            assert_eq!(errors.len(), 1, "{var}={value}: {errors:?}");
            let e = &errors[0];
            assert!(matches!(e, Error::Setting { .. }), "{e:?}");
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("{var}={value:?}: ")) && text.contains(why),
                "{var}={value}: {text}"
            );
            assert_eq!(s, Settings::default(), "{var}={value}: the default stays");
        }
        // Several bad values: one error each, in a fixed order; from_env-style strictness
        // reports the first.
        let (_, errors) = read(&[("HETBLAS_VERBOSE", "yes"), ("HETBLAS_BACKENDS", "x")]);
        let vars: Vec<String> = errors
            .iter()
            .map(|e| match e {
                Error::Setting { variable, .. } => variable.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(vars, ["HETBLAS_BACKENDS", "HETBLAS_VERBOSE"]);
    }

    #[test]
    fn retired_variables_are_noted_not_read() {
        let (s, errors) = read(&[("HETBLAS_PIN", "xyz"), ("HETBLAS_FOLD_TAIL", "4")]);
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(s.retired.len(), 2, "{:?}", s.retired);
        assert!(s.retired[0].starts_with("HETBLAS_FOLD_TAIL is set but no longer read"));
        assert!(s.retired[0].contains("--fold-tail"), "{:?}", s.retired);
        assert!(s.retired[1].contains("pin_policy"), "{:?}", s.retired);
        // Every retired name is unique and none is a setting still read.
        let mut names: Vec<&str> = RETIRED.iter().map(|(n, _)| *n).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RETIRED.len());
        for live in [
            "HETBLAS_BACKENDS",
            "HETBLAS_CBLAS",
            "HETBLAS_FAULT",
            "HETBLAS_PROFILE",
        ] {
            assert!(!names.contains(&live), "{live}");
        }
    }
}
