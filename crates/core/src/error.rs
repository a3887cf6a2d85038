//! The one error type of hetblas. Backends keep their own error enums and convert into this one,
//! carrying their native code and message; nothing in hetblas panics across the API.

use std::fmt;

/// What went wrong, in the few categories a caller can act on.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A BLAS argument is invalid. `param` is the 1-based position reference BLAS (`xerbla`) would
    /// report for the routine (for GEMM: transa 1, transb 2, m 3, n 4, k 5, lda 8, ldb 10, ldc 13).
    #[error("{routine}: parameter {param} ({name}) is invalid: {reason}")]
    InvalidArgument {
        routine: &'static str,
        param: u32,
        name: &'static str,
        reason: String,
    },
    /// An operand view or option does not fit what was asked (wrong slice length, bad device index,
    /// mismatched locations). Not a BLAS parameter error: the call never reached BLAS semantics.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A device (or the host) could not provide the memory the plan needs.
    #[error("out of memory on {device}: {detail}")]
    OutOfMemory { device: String, detail: String },
    /// The device or backend cannot do this (dtype, operation, placement).
    #[error("unsupported on {device}: {detail}")]
    Unsupported { device: String, detail: String },
    /// The backend library reported an error; `code` is the library's own status code.
    #[error("{backend} error {code} ({name}) in {call}: {message}")]
    Backend {
        backend: &'static str,
        call: String,
        code: i64,
        name: String,
        message: String,
    },
    /// A device stopped working (driver reset, device lost, worker thread died).
    #[error("device {device} lost: {detail}")]
    DeviceLost { device: String, detail: String },
    /// A backend is not available on this machine (library missing, no device, driver too old).
    #[error("backend {backend} unavailable: {reason}")]
    Unavailable {
        backend: &'static str,
        reason: String,
    },
    /// A setting (an environment variable, read by the `hetblas` crate) holds a value that
    /// cannot be used: the variable, the value as given, and why.
    #[error("{variable}={value:?}: {reason}")]
    Setting {
        variable: String,
        value: String,
        reason: String,
    },
    /// A machine profile or configuration file could not be read or does not match.
    #[error("profile: {0}")]
    Profile(String),
    /// An internal invariant failed. This is a bug in hetblas; the message says which.
    #[error("internal error (a hetblas bug): {0}")]
    Internal(String),
}

/// Locks `m`, taking its data even when another thread panicked holding it (for locks whose data
/// a panic leaves valid; the panic is reported where it happened).
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Result alias used throughout hetblas.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// The BLAS parameter number, for argument errors (what `xerbla` prints as INFO).
    pub fn blas_param(&self) -> Option<u32> {
        match self {
            Error::InvalidArgument { param, .. } => Some(*param),
            _ => None,
        }
    }

    /// Puts the device's label ("cuda:1") in an out-of-memory or device-lost error raised with
    /// less (a backend's name, "cuda"); one naming it already ("cpu:0 compute") passes as is.
    pub fn on_device(mut self, label: &str) -> Self {
        if let Error::OutOfMemory { device, .. } | Error::DeviceLost { device, .. } = &mut self {
            if !device.starts_with(label) {
                *device = label.to_string();
            }
        }
        self
    }

    pub fn internal(msg: impl fmt::Display) -> Self {
        Error::Internal(msg.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::Error;

    #[test]
    fn on_device_names_the_device() {
        let oom = Error::OutOfMemory {
            device: "cuda".into(),
            detail: "cuMemAlloc: out of memory".into(),
        };
        assert_eq!(
            oom.on_device("cuda:1"),
            Error::OutOfMemory {
                device: "cuda:1".into(),
                detail: "cuMemAlloc: out of memory".into(),
            }
        );
        let lost = Error::DeviceLost {
            device: "cpu:0 compute".into(),
            detail: "queue thread is gone".into(),
        };
        assert_eq!(lost.clone().on_device("cpu:0"), lost);
        let other = Error::InvalidInput("x".into());
        assert_eq!(other.clone().on_device("cuda:0"), other);
        assert!(Error::DeviceLost {
            device: "hip".into(),
            detail: "d".into()
        }
        .on_device("hip:0")
        .to_string()
        .contains("device hip:0 lost"));
    }
}
