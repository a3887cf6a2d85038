//! The row-interchange kernel (`kernels/laswp.cu`, shipped as the PTX beside it): one launch
//! per LASWP tile where cuSOLVER's `?laswp` costs about 0.4 ms per 512 pivots (it
//! evidently interchanges pivot by pivot). Loaded once per device context, on the first
//! factorization there; when the driver refuses the module (a driver older than the PTX), the
//! tiles stay on cuSOLVER's `?laswp` and a warning says so once.
//!
//! The PTX is generated, not written: `scripts/gen-ptx.py` (NVRTC 12.0 from PyPI, compute_70,
//! PTX ISA 8.0, which every CUDA 12 driver can JIT). Edit the `.cu`, run the script, commit both.

use crate::driver::check;
use cudarc::driver::sys;
use hetblas_core::{LaswpTile, Result};
use std::ffi::c_void;
use std::sync::atomic::{AtomicBool, Ordering};

/// The module's text, NUL-terminated as `cuModuleLoadData` reads it.
pub(crate) const PTX: &str = concat!(include_str!("../kernels/laswp.ptx"), "\0");

/// The entry points by element size (4: f32, 8: f64 and c32, 16: c64).
pub(crate) const ENTRIES: [(usize, &str); 3] = [
    (4, "hetblas_laswp_4"),
    (8, "hetblas_laswp_8"),
    (16, "hetblas_laswp_16"),
];

/// Threads per block (`THREADS` in the `.cu`; its `__launch_bounds__` makes it the most a
/// launch may use).
pub(crate) const THREADS: u32 = 256;
/// Columns a block takes at a time (`COLS` in the `.cu`).
const COLS: usize = 4;
/// The most blocks of one launch. Each block finds a round's permutation itself (a few
/// microseconds), so more blocks than the GPU holds at once would repeat that for nothing;
/// the kernel's grid-stride loop covers every column with fewer.
const MAX_BLOCKS: usize = 1024;

/// Blocks for a tile of `cols` columns (at least one).
pub(crate) fn grid(cols: usize) -> u32 {
    cols.div_ceil(COLS).clamp(1, MAX_BLOCKS) as u32
}

/// The kernel's functions in one context (plain handles: valid while the module is loaded).
#[derive(Debug, Clone, Copy)]
pub(crate) struct LaswpFns([sys::CUfunction; 3]);

// SAFETY: function handles of a loaded module may be launched from any thread.
unsafe impl Send for LaswpFns {}
// SAFETY: as above; never mutated.
unsafe impl Sync for LaswpFns {}

/// The module loaded in one context, unloaded when dropped (with that context pushed).
#[derive(Debug)]
pub(crate) struct LaswpModule {
    module: sys::CUmodule,
    ctx: sys::CUcontext,
    pub(crate) fns: LaswpFns,
}

// SAFETY: module and context handles may be used from any thread.
unsafe impl Send for LaswpModule {}
// SAFETY: as above; never mutated.
unsafe impl Sync for LaswpModule {}

impl LaswpModule {
    /// Loads the PTX into `ctx`, which is current on this thread (the driver compiles it for
    /// the device).
    ///
    /// # Errors
    /// The driver's refusal (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION` on a driver older than the
    /// PTX, for instance), typed as every driver error.
    pub(crate) fn load(ctx: sys::CUcontext) -> Result<LaswpModule> {
        let mut module = std::ptr::null_mut();
        // SAFETY: PTX is a NUL-terminated image; writes one module handle, unloaded in Drop.
        let r = unsafe { sys::cuModuleLoadData(&mut module, PTX.as_ptr() as *const c_void) };
        check(r, "cuModuleLoadData(laswp.ptx)")?;
        // Owned from here: an error below unloads it (Drop).
        let mut m = LaswpModule {
            module,
            ctx,
            fns: LaswpFns([std::ptr::null_mut(); 3]),
        };
        for (f, (_, name)) in m.fns.0.iter_mut().zip(ENTRIES) {
            let c = std::ffi::CString::new(name).expect("entry names have no NUL");
            // SAFETY: a loaded module; writes one function handle.
            let r = unsafe { sys::cuModuleGetFunction(f, module, c.as_ptr()) };
            check(r, "cuModuleGetFunction")?;
        }
        // `m` itself is returned: a copy made with `..m` left `m` to be dropped here, which
        // unloaded the module under the handles (CUDA_ERROR_INVALID_HANDLE at launch).
        Ok(m)
    }
}

impl Drop for LaswpModule {
    fn drop(&mut self) {
        // SAFETY: the context is retained by the `Context` that owns this module (dropped
        // before the release); push/pop leave the thread's current context as it was.
        unsafe {
            if sys::cuCtxPushCurrent_v2(self.ctx) == sys::CUresult::CUDA_SUCCESS {
                sys::cuModuleUnload(self.module);
                let mut popped = std::ptr::null_mut();
                sys::cuCtxPopCurrent_v2(&mut popped);
            }
        }
    }
}

/// Says once per process that a context runs LASWP on cuSOLVER, and why.
pub(crate) fn warn_fallback(ordinal: i32, why: &hetblas_core::Error) {
    static SAID: AtomicBool = AtomicBool::new(false);
    if !SAID.swap(true, Ordering::Relaxed) {
        tracing::warn!(
            "CUDA device {ordinal}: the row-interchange kernel did not load ({why}); \
             LASWP tiles run on cuSOLVER's ?laswp, one pivot at a time"
        );
    }
}

/// The kernel arguments of one tile, in the entry points' order and C types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Args {
    pub a: u64,
    pub lda: i64,
    pub rows: i32,
    pub cols: i32,
    pub k1: i32,
    pub k2: i32,
    pub ipiv: u64,
}

impl Args {
    /// The arguments of `op` (checked, with work, dimensions within 32 bits), or `None` when
    /// its elements are not aligned for the kernel's moves (then cuSOLVER's `?laswp` takes it).
    pub(crate) fn of(op: &LaswpTile) -> Option<(usize, Args)> {
        let size = op.dtype().size();
        let align = size.min(8) as u64;
        if !op.a.addr.is_multiple_of(align) || !op.ipiv.addr.is_multiple_of(4) {
            return None;
        }
        let entry = ENTRIES.iter().position(|&(s, _)| s == size)?;
        Some((
            entry,
            Args {
                a: op.a.addr,
                lda: op.a.ld as i64,
                rows: op.a.rows as i32,
                cols: op.a.cols as i32,
                k1: op.k1 as i32,
                k2: op.k2 as i32,
                ipiv: op.ipiv.addr,
            },
        ))
    }

    /// Pointers to each argument, as `cuLaunchKernel`'s `kernelParams` (valid while `self`).
    pub(crate) fn params(&mut self) -> [*mut c_void; 7] {
        [
            (&mut self.a as *mut u64).cast(),
            (&mut self.lda as *mut i64).cast(),
            (&mut self.rows as *mut i32).cast(),
            (&mut self.cols as *mut i32).cast(),
            (&mut self.k1 as *mut i32).cast(),
            (&mut self.k2 as *mut i32).cast(),
            (&mut self.ipiv as *mut u64).cast(),
        ]
    }
}

/// Launches the interchanges of `op` on `stream`; `Ok(false)` when the tile is not one for
/// the kernel (misaligned elements), and nothing was issued.
///
/// # Safety
/// The GPU layer's contract for `GpuRuntime::laswp`; `fns` belong to the module loaded in the
/// context of `stream`, which is current.
pub(crate) unsafe fn launch(fns: LaswpFns, stream: sys::CUstream, op: &LaswpTile) -> Result<bool> {
    let Some((entry, mut args)) = Args::of(op) else {
        return Ok(false);
    };
    let mut params = args.params();
    // SAFETY: caller contract; `params` points at live arguments of the entry's types
    // (checked against the PTX by the unit tests), read by the driver before it returns.
    let r = unsafe {
        sys::cuLaunchKernel(
            fns.0[entry],
            grid(op.a.cols),
            1,
            1,
            THREADS,
            1,
            1,
            0,
            stream,
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    };
    check(r, "cuLaunchKernel(laswp)").map(|()| true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetblas_core::{DType, MemorySpace, RawPivots, RawTile};

    /// The `.param` types of `entry` in the PTX, in order.
    fn ptx_params(entry: &str) -> Vec<String> {
        let start = PTX
            .find(&format!(".entry {entry}("))
            .unwrap_or_else(|| panic!("{entry} is not in laswp.ptx"));
        let body = &PTX[start..];
        let end = body.find(')').expect("the parameter list ends");
        body[..end]
            .lines()
            .filter_map(|l| l.trim().strip_prefix(".param ."))
            .map(|l| l.split_whitespace().next().unwrap_or("").to_string())
            .collect()
    }

    #[test]
    fn the_ptx_has_every_entry_with_the_arguments_we_pack() {
        let mut args = Args {
            a: 0,
            lda: 0,
            rows: 0,
            cols: 0,
            k1: 0,
            k2: 0,
            ipiv: 0,
        };
        let sizes = [8, 8, 4, 4, 4, 4, 8];
        assert_eq!(args.params().len(), sizes.len());
        for (_, entry) in ENTRIES {
            let want: Vec<String> = sizes.iter().map(|s| format!("u{}", 8 * s)).collect();
            assert_eq!(ptx_params(entry), want, "{entry}");
        }
        assert!(
            PTX.contains(&format!(".maxntid {THREADS}, 1, 1")),
            "the PTX's block size"
        );
        // A driver of CUDA 12.0 reads PTX ISA 8.0 and older.
        let version = PTX
            .lines()
            .find_map(|l| l.strip_prefix(".version "))
            .expect("a .version line");
        assert_eq!(version.trim(), "8.0");
        assert!(PTX.ends_with('\0') && !PTX[..PTX.len() - 1].contains('\0'));
    }

    #[test]
    fn params_point_at_the_arguments_in_order() {
        let mut args = Args {
            a: 0x1000,
            lda: 1 << 33,
            rows: 7,
            cols: -2,
            k1: 3,
            k2: 5,
            ipiv: 0x2000,
        };
        let p = args.params();
        // SAFETY: each pointer points at the field of the type read.
        unsafe {
            assert_eq!(*(p[0] as *const u64), 0x1000);
            assert_eq!(*(p[1] as *const i64), 1 << 33);
            assert_eq!(*(p[2] as *const i32), 7);
            assert_eq!(*(p[3] as *const i32), -2);
            assert_eq!(*(p[4] as *const i32), 3);
            assert_eq!(*(p[5] as *const i32), 5);
            assert_eq!(*(p[6] as *const u64), 0x2000);
        }
    }

    #[test]
    fn the_grid_covers_the_columns_within_its_cap() {
        assert_eq!(grid(0), 1);
        assert_eq!(grid(1), 1);
        assert_eq!(grid(4), 1);
        assert_eq!(grid(5), 2);
        assert_eq!(grid(512), 128);
        assert_eq!(grid(1 << 20), MAX_BLOCKS as u32);
    }

    fn tile(dtype: DType, addr: u64) -> LaswpTile {
        let space = MemorySpace::HOST;
        LaswpTile {
            a: RawTile {
                space,
                addr,
                rows: 100,
                cols: 30,
                ld: 101,
                dtype,
            },
            k1: 2,
            k2: 40,
            ipiv: RawPivots {
                space,
                addr: 0x8000,
                len: 50,
            },
        }
    }

    #[test]
    fn each_dtype_takes_the_entry_of_its_size_and_misaligned_tiles_none() {
        for (dtype, entry) in [
            (DType::F32, 0),
            (DType::F64, 1),
            (DType::C32, 1),
            (DType::C64, 2),
        ] {
            let (e, args) = Args::of(&tile(dtype, 0x10000)).expect("aligned");
            assert_eq!(e, entry, "{dtype}");
            assert_eq!(ENTRIES[e].0, dtype.size());
            assert_eq!(
                (args.lda, args.rows, args.cols, args.k1, args.k2),
                (101, 100, 30, 2, 40)
            );
            assert_eq!((args.a, args.ipiv), (0x10000, 0x8000));
        }
        assert!(Args::of(&tile(DType::F64, 0x10004)).is_none());
        assert!(Args::of(&tile(DType::C64, 0x10004)).is_none());
        assert!(Args::of(&tile(DType::C64, 0x10008)).is_some());
        assert!(Args::of(&tile(DType::F32, 0x10002)).is_none());
    }
}
