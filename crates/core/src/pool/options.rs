//! What a GEMM call may be told ([`GemmOptions`]) and what it reports ([`GemmReport`]). Both are
//! `#[non_exhaustive]`, so that options and report fields can be added without breaking callers:
//! options are built from `Default` with the builder methods, reports are only read.

use crate::exec::execute::Transfer;
use crate::exec::trace::Trace;
use crate::plan::tiling::Blocking;
use crate::plan::{CRegion, PlanStats};

/// Per-call choices; the defaults let hetblas decide.
///
/// ```
/// use hetblas_core::GemmOptions;
/// let opts = GemmOptions::default().devices([0, 1]).tile(2048).trace(true);
/// assert_eq!(opts.devices, Some(vec![0, 1]));
/// assert_eq!(opts.tile, Some(2048));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GemmOptions {
    /// Force a square tile size.
    pub tile: Option<usize>,
    /// Force tile sizes and group (takes precedence over `tile`).
    pub blocking: Option<Blocking>,
    /// Use exactly these devices (indices into [`crate::DevicePool::devices`]).
    pub devices: Option<Vec<usize>>,
    /// Record a timeline of every transfer and kernel.
    pub trace: bool,
    /// Use at most this many bytes of each device's memory for tiles (out-of-core below it).
    pub memory_limit: Option<u64>,
    /// Never forward a tile from a device that holds it (always fetch from the operand).
    pub no_peer_forwarding: bool,
    /// With C in host memory and beta != 0: `Some(true)` folds the products into C on the host
    /// ([`crate::fold`]), `Some(false)` sends C to the devices and adds it there, `None` lets the
    /// model decide (the command's `--host-fold on|off`).
    pub host_fold: Option<bool>,
    /// With host folds: how many C tiles of each device have their C sent instead of folded
    /// ([`crate::plan::DeviceSpec::fold_tail`]); `None` lets the model decide (the command's
    /// `--fold-tail N`).
    pub fold_tail: Option<usize>,
    /// What the device subset is chosen for: time (the default), energy or energy-delay
    /// product ([`crate::energy`]; the latter two need device powers in the profile).
    pub objective: crate::energy::Objective,
    /// Split K across the devices (partial products reduced on one device,
    /// [`crate::tuning::ksplit`]): `Some(true)` whenever two devices with their own memory can
    /// take part and C is in host memory, `Some(false)` never, `None` when the model predicts
    /// a gain.
    pub k_split: Option<bool>,
    /// Keep an undo log of C so that a call that fails on every device leaves C bit-identical
    /// (a host copy of C per call): `Some(true)` always, `Some(false)` never, `None` (default)
    /// only when no host CPU device can finish a failed call.
    pub preserve_c: Option<bool>,
    /// The part of C computed (all of it by default); the entries outside it are neither read
    /// nor written.
    pub c_region: CRegion,
}

/// Builder setters: `name(value)` sets the field `name` to `value.into()`.
macro_rules! setters {
    ($($name:ident: $arg:ty;)*) => {$(
        #[doc = concat!("Sets the `", stringify!($name), "` field.")]
        pub fn $name(mut self, $name: $arg) -> Self {
            self.$name = $name.into();
            self
        }
    )*};
}
pub(super) use setters;

impl GemmOptions {
    setters! {
        tile: impl Into<Option<usize>>;
        blocking: impl Into<Option<Blocking>>;
        trace: bool;
        memory_limit: impl Into<Option<u64>>;
        no_peer_forwarding: bool;
        host_fold: impl Into<Option<bool>>;
        fold_tail: impl Into<Option<usize>>;
        objective: crate::energy::Objective;
        c_region: impl Into<CRegion>;
        preserve_c: impl Into<Option<bool>>;
        k_split: impl Into<Option<bool>>;
    }

    /// Uses exactly these devices (indices into [`crate::DevicePool::devices`]).
    pub fn devices(mut self, devices: impl IntoIterator<Item = usize>) -> Self {
        self.devices = Some(devices.into_iter().collect());
        self
    }

    /// Uses these devices when `Some`, or lets the autotuner choose when `None`.
    pub fn device_list(mut self, devices: Option<Vec<usize>>) -> Self {
        self.devices = devices;
        self
    }

    /// The host fold mode asked for, and its unfolded tail (`None`s: the model).
    pub(crate) fn host_fold_mode(&self) -> crate::autotune::FoldRequest {
        crate::autotune::FoldRequest {
            on: self.host_fold,
            tail: self.fold_tail,
            staged: false,
        }
    }

    /// The blocking asked for: `blocking`, else a square `tile`.
    pub(crate) fn forced_blocking(&self) -> Option<Blocking> {
        self.blocking.or(self.tile.map(Blocking::square))
    }
}

/// What a GEMM call did.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct GemmReport {
    /// Devices that took part (labels).
    pub devices: Vec<String>,
    /// Tile sizes (tm, tn, tk); `None` for a quick return.
    pub tile: Option<(usize, usize, usize)>,
    /// What the pipeline model predicted for the call and for each square tile it weighed,
    /// where it chose the tiling (one device, a calibrated profile).
    pub prices: Option<crate::autotune::TilePrices>,
    /// The plan came from the cache.
    pub plan_cached: bool,
    pub planning_seconds: f64,
    /// Wall time of the whole call.
    pub seconds: f64,
    /// Seconds the call waited for other calls in flight: to enter beside them (or alone, to
    /// page-lock its host operands) and for device memory they held. Part of `seconds`.
    pub waited_seconds: f64,
    /// Seconds from the call's start to the start of its execution: the origin of `trace`'s
    /// times (of the last execution, when a recovered call ran several).
    pub execute_start: f64,
    /// Of `execute_start`: seconds taking the call's device and host workspaces (idle buffers
    /// reused, else allocated).
    pub workspace_seconds: f64,
    /// Of `execute_start`, beside `waited_seconds`: seconds checking that the host operands'
    /// cached page-locked registrations still hold (probe copies on the devices' links), or
    /// page-locking them.
    pub host_check_seconds: f64,
    /// Of `seconds`: page-locked staging buffers the links allocated during the call
    /// ([`crate::Link::staging_alloc_seconds`]; calls running beside this one may add theirs).
    pub staging_seconds: f64,
    pub stats: PlanStats,
    /// Share of C each device was given (whole tiles or a strip; see `stats.c_share`).
    pub weights: Vec<f64>,
    /// The balancer's continuous shares, before rounding to whole tiles or a strip.
    pub balancer_weights: Vec<f64>,
    /// Products were folded into host C on the host ([`crate::fold`]).
    pub host_fold: bool,
    /// With `host_fold`: how many C tiles of each device had their C sent instead
    /// ([`crate::plan::DeviceSpec::fold_tail`]).
    pub fold_tail: usize,
    pub transfers: Vec<Transfer>,
    pub trace: Option<Trace>,
    /// Devices that failed during the call, which it recovered from: their unfinished C tiles
    /// ran again on the devices left. Empty for a call that ran as planned.
    pub recovered: Vec<DeviceFault>,
    /// The plan that ran (for the simulator: [`crate::sim`]); `None` for a quick return.
    pub plan: Option<std::sync::Arc<crate::plan::Plan>>,
    /// K extent per device (in `devices` order) when K was split across the devices
    /// ([`crate::tuning::ksplit`]); empty when C was split (the usual plan).
    pub k_split: Vec<usize>,
    /// The choices a caller may want to know of, one line each: a device asked for that was
    /// given no work because the model predicted it would slow the call ("cpu:0: no tiles,
    /// predicted to slow the call"), a K-split and its predicted gain, folds priced below
    /// their calibrated rate; those of a re-run after a device fault begin "re-run after a
    /// device fault: ".
    pub notes: Vec<String>,
}

/// A device that failed during a call (see [`GemmReport::recovered`]).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DeviceFault {
    /// Its label (`cuda:1`).
    pub device: String,
    /// Its index in [`crate::DevicePool::devices`].
    pub index: usize,
    /// What it failed with.
    pub error: crate::Error,
    /// C tiles that were not final when it failed and ran again (of every device that took
    /// part, since a device that needed the failed one's tiles stops too).
    pub tiles_rerun: usize,
    /// Of those, tiles already written back in part (a write-back in pieces,
    /// [`crate::plan::Task::pieces`]): only their columns not yet final ran again.
    pub tiles_in_part: usize,
}

impl std::fmt::Display for DeviceFault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} failed ({}); {} output tiles ran again on the devices left",
            self.device, self.error, self.tiles_rerun
        )?;
        if self.tiles_in_part > 0 {
            write!(
                f,
                " ({} of them only in the columns not yet written back)",
                self.tiles_in_part
            )?;
        }
        Ok(())
    }
}
