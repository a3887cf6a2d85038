//! An optional measurement for the factorizations, outside [`super::calibrate`]'s phases: the
//! time of a panel op (POTRF of an `n x n` tile, GETRF of an `m x n` panel) on a device.
//!
//! A factorization overwrites its operand, so each repetition first writes the same random
//! input (for POTRF, positive definite) over the working tile; only the op is timed.

use super::gemm::HostData;
use super::stats::{measure_until_confident, time_on_queue};
use super::CalibrationOptions;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::factor_kernel::{FactorOp, GetrfTile, InfoCell, PotrfTile, RawPivots};
use crate::link::Link;
use crate::memory::{Buffer, RawTile};
use crate::problem::blas_flags::Uplo;
use crate::scalar::DType;

/// One measured panel shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PanelTime {
    pub op: FactorOp,
    pub dtype: DType,
    /// Rows and columns of the tile (`m == n` for POTRF).
    pub m: usize,
    pub n: usize,
    /// Mean seconds of one op, and the half-width of its 95% confidence interval.
    pub seconds: f64,
    pub half_width: f64,
    pub reps: usize,
}

impl PanelTime {
    /// The rate the measurement implies (real flops as LAPACK counts them, per second).
    pub fn flops_per_sec(&self) -> f64 {
        let tile = RawTile {
            space: crate::memory::MemorySpace::HOST,
            addr: 0,
            rows: self.m,
            cols: self.n,
            ld: self.m.max(1),
            dtype: self.dtype,
        };
        let flops = match self.op {
            FactorOp::Potrf => PotrfTile {
                uplo: Uplo::Lower,
                a: tile,
            }
            .flops(),
            _ => GetrfTile {
                a: tile,
                ipiv: RawPivots {
                    space: tile.space,
                    addr: 0,
                    len: self.m.min(self.n),
                },
            }
            .flops(),
        };
        flops / self.seconds.max(f64::MIN_POSITIVE)
    }
}

/// Times `op` (POTRF or GETRF) in `dtype` on `device`'s first compute queue for each `(m, n)`
/// of `shapes`, initialising the operand through `h2d` (`None` in host memory). Empty shapes
/// are skipped; a shape the device has no memory for ends the list early.
///
/// # Errors
/// `Unsupported` when the device lacks the op in `dtype`, has no compute queue, or has its own
/// memory and no `h2d`; `InvalidInput` for LASWP (not a panel op) or a non-square POTRF shape;
/// backend errors, and an op that reports `info != 0` on its well-conditioned input.
pub fn measure_panels(
    device: &dyn Device,
    h2d: Option<&dyn Link>,
    op: FactorOp,
    dtype: DType,
    shapes: &[(usize, usize)],
    opts: &CalibrationOptions,
) -> Result<Vec<PanelTime>> {
    let label = device.info().label();
    if op == FactorOp::Laswp {
        return Err(Error::InvalidInput("laswp is not a panel op".into()));
    }
    let unsupported = |detail: &str| Error::Unsupported {
        device: label.clone(),
        detail: detail.into(),
    };
    if !device.kernel().supports_factor(op, dtype) {
        return Err(unsupported(&format!(
            "{}{} tiles",
            dtype.blas_prefix(),
            op.name()
        )));
    }
    let queue = device
        .compute_queues()
        .first()
        .cloned()
        .ok_or_else(|| unsupported("no compute queue"))?;
    let space = device.space();
    if !space.is_host() && h2d.is_none() {
        return Err(unsupported("no host link to initialise panels"));
    }
    let mut out = Vec::new();
    for &(m, n) in shapes {
        if op == FactorOp::Potrf && m != n {
            return Err(Error::InvalidInput(format!("potrf of a {m}x{n} tile")));
        }
        if m == 0 || n == 0 {
            continue;
        }
        let input = panel_input(op, dtype, m, n);
        let pristine = RawTile {
            space: crate::memory::MemorySpace::HOST,
            addr: input.addr(),
            rows: m,
            cols: n,
            ld: m,
            dtype,
        };
        let bytes = m * n * dtype.size();
        let k = m.min(n);
        // The working tile and pivots, in the device's memory (host memory for the CPU).
        let (work, pivots): (Box<dyn Buffer>, Box<dyn Buffer>) =
            match (device.allocate(bytes), device.allocate(4 * k)) {
                (Ok(w), Ok(p)) => (w, p),
                (Err(Error::OutOfMemory { .. }), _) | (_, Err(Error::OutOfMemory { .. })) => break,
                (Err(e), _) | (_, Err(e)) => return Err(e),
            };
        let tile = RawTile {
            space,
            addr: work.addr(),
            ..pristine
        };
        let ipiv = RawPivots {
            space,
            addr: pivots.addr(),
            len: k,
        };
        let restore = || -> Result<()> {
            match h2d {
                Some(link) if !space.is_host() => {
                    link.copy(&pristine, &tile)?;
                    link.queue().synchronize()
                }
                _ => {
                    // SAFETY: both are host allocations of `bytes` (the input vector and the
                    // device's host buffer), distinct, and no queued op uses the work tile
                    // (the last one was synchronised by `time_on_queue`).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            pristine.addr as *const u8,
                            tile.addr as *mut u8,
                            bytes,
                        )
                    };
                    Ok(())
                }
            }
        };
        let info = InfoCell::new();
        let kernel = device.kernel();
        let result = measure_until_confident(opts, &mut || {
            restore()?;
            info.reset();
            let s = time_on_queue(&queue, &mut || match op {
                // SAFETY: the working tile and pivots are this device's allocations, alive
                // until the end of this shape's measurement, after the queue is synchronised
                // (time_on_queue synchronises it), and used by nothing else.
                FactorOp::Potrf => unsafe {
                    kernel.potrf(
                        &queue,
                        &PotrfTile {
                            uplo: Uplo::Lower,
                            a: tile,
                        },
                        &info,
                    )
                },
                // SAFETY: as above.
                _ => unsafe { kernel.getrf(&queue, &GetrfTile { a: tile, ipiv }, &info) },
            })?;
            match info.get() {
                Some(0) => Ok(s),
                other => Err(Error::internal(format!(
                    "{label}: {}{} of a well-conditioned {m}x{n} tile gave info {other:?}",
                    dtype.blas_prefix(),
                    op.name()
                ))),
            }
        });
        // Nothing may still run on the buffers when they are dropped.
        let sync = queue.synchronize();
        let m_ = result?;
        sync?;
        drop((work, pivots, input));
        out.push(PanelTime {
            op,
            dtype,
            m,
            n,
            seconds: m_.mean,
            half_width: m_.half_width,
            reps: m_.reps,
        });
    }
    Ok(out)
}

/// Random input of the op: for POTRF, a diagonal of `2 n` (real) over entries of modulus
/// below `sqrt 2`, so the lower triangle is Hermitian positive definite whatever the rest.
fn panel_input(op: FactorOp, dtype: DType, m: usize, n: usize) -> HostData {
    let mut data = HostData::new(dtype, m * n, 7);
    if op == FactorOp::Potrf {
        let per = dtype.size() / dtype.real().size();
        let diag = 2.0 * n as f64;
        for i in 0..n {
            let re = (i + i * m) * per;
            // The diagonal is real: its imaginary part (if any) is zero.
            match &mut data {
                HostData::F64(v) => v[re..re + per].copy_from_slice(&[diag, 0.0][..per]),
                HostData::F32(v) => v[re..re + per].copy_from_slice(&[diag as f32, 0.0][..per]),
            }
        }
    }
    data
}
