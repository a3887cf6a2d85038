//! Errors of the distributed layer. Argument errors carry ScaLAPACK's `INFO` code
//! (`-(argument*100 + descriptor entry)` for a descriptor entry, `-argument` otherwise), which is
//! what `pdgemm_` reports through `PXERBLA`.

/// What went wrong in a distributed call.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DistError {
    /// A bad argument; `info` is ScaLAPACK's code for it.
    #[error("invalid argument (INFO = {info}): {reason}")]
    InvalidArgument { info: i32, reason: String },
    /// The process grid does not fit the communicator, or a context is unknown.
    #[error("process grid: {0}")]
    Grid(String),
    /// The node runtime failed on this rank's local product.
    #[error("local GEMM on this rank: {0}")]
    Local(#[from] hetblas::Error),
}

/// Result alias of this crate.
pub type Result<T, E = DistError> = std::result::Result<T, E>;

impl DistError {
    /// ScaLAPACK's `INFO` for argument errors.
    pub fn info(&self) -> Option<i32> {
        match self {
            DistError::InvalidArgument { info, .. } => Some(*info),
            _ => None,
        }
    }

    pub(crate) fn arg(info: i32, reason: impl Into<String>) -> Self {
        DistError::InvalidArgument {
            info,
            reason: reason.into(),
        }
    }
}
