//! Fault injection: make a device fail at its n-th kernel, copy or allocation, or lose it, so
//! that the executor's recovery can be tested. A backend that supports it (the emulated devices,
//! the GPU layer) holds one [`FaultInjector`] per device and calls [`FaultInjector::check`]
//! before issuing each operation; it is armed through [`FaultInjector::arm`], or at discovery
//! with the runtime's faults (`HETBLAS_FAULT`, parsed by [`FaultSpec::parse_list`]):
//!
//! ```text
//! dev=1,at=kernel:4,kind=error        device index 1, its 4th kernel fails
//! dev=cuda:1,at=copy:10,kind=lost     cuda:1 is lost at its 10th copy
//! dev=0,at=kernel:2,kind=panic;dev=2,at=copy:1,kind=oom
//! dev=any,at=alloc:1                  every device's first allocation fails
//! ```
//!
//! - `dev`: a device index (in every backend that injects faults), a label, or `any`.
//! - `at`: `kernel:N`, `copy:N` or `alloc:N`, 1-based, counted per device since armed (a copy
//!   counts for the non-host end of its link, a peer copy's destination).
//! - `kind`: `error` (default), `lost`, `oom`, `panic` or `async` ([`FaultKind`]); an
//!   allocation, on the caller's thread, fails with `error`, `lost` or `oom` only.
//!
//! Faults other than `async` are raised at issue, before anything is queued, so operations
//! issued before complete normally: what the executor must recover from. Unarmed,
//! [`FaultInjector::check`] costs one relaxed atomic load.

use crate::error::{lock, Error, Result};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

/// What a fault interrupts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultOp {
    /// A tile kernel (gemm, add).
    Kernel,
    /// A copy over a link.
    Copy,
    /// An allocation of device memory.
    Alloc,
}

impl FaultOp {
    const ALL: [FaultOp; 3] = [FaultOp::Kernel, FaultOp::Copy, FaultOp::Alloc];
    fn name(self) -> &'static str {
        ["kernel", "copy", "alloc"][self as usize]
    }
}

/// How the device fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The operation fails with a backend error.
    Error,
    /// The device is lost: this and every later operation fails.
    Lost,
    /// The operation fails out of memory.
    Oom,
    /// The backend panics while issuing the operation.
    Panic,
    /// The operation is issued, then fails on its queue (later work on it, and work waiting for
    /// it, is skipped). Backends that cannot defer a failure (the GPU layer) fail at issue.
    Async,
}

/// Which device a fault is for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum FaultDevice {
    /// Device index `n` of any backend that injects faults.
    Index(usize),
    /// The device with this label (`cuda:1`).
    Label(String),
    /// Every device (`dev=any`), each counting its own operations.
    Any,
}

/// One fault: device, operation, when, how.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct FaultSpec {
    pub device: FaultDevice,
    pub op: FaultOp,
    /// 1-based count of `op` on the device at which the fault happens.
    pub at: u64,
    pub kind: FaultKind,
}

impl FaultSpec {
    /// A fault of `kind` at the `at`-th `op` of device index `device`.
    pub fn new(device: usize, op: FaultOp, at: u64, kind: FaultKind) -> FaultSpec {
        FaultSpec {
            device: FaultDevice::Index(device),
            op,
            at,
            kind,
        }
    }

    /// Parses a list of faults separated by `;` (`HETBLAS_FAULT`, the command's `--fault`).
    pub fn parse_list(text: &str) -> Result<Vec<FaultSpec>> {
        text.split(';')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(FaultSpec::parse)
            .collect()
    }

    /// Parses one fault, `dev=1,at=kernel:4,kind=error`; `InvalidInput` naming what is not
    /// understood.
    pub fn parse(text: &str) -> Result<FaultSpec> {
        let bad = |why: &str| Error::InvalidInput(format!("fault \"{text}\": {why}"));
        let (mut device, mut at, mut kind) = (None, None, FaultKind::Error);
        for part in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (k, v) = part
                .split_once('=')
                .ok_or_else(|| bad(&format!("\"{part}\" is not key=value")))?;
            match k.trim() {
                "dev" | "device" => {
                    let v = v.trim();
                    device = Some(match v.parse::<usize>() {
                        Ok(i) => FaultDevice::Index(i),
                        Err(_) if v == "any" => FaultDevice::Any,
                        Err(_) if v.contains(':') => FaultDevice::Label(v.to_string()),
                        Err(_) => return Err(bad(&format!("device \"{v}\""))),
                    });
                }
                "at" => {
                    let (op, n) = v
                        .trim()
                        .split_once(':')
                        .ok_or_else(|| bad("at must be kernel:N, copy:N or alloc:N"))?;
                    let op = FaultOp::ALL
                        .into_iter()
                        .find(|o| o.name() == op)
                        .ok_or_else(|| bad(&format!("operation \"{op}\"")))?;
                    let n: u64 = n
                        .parse()
                        .ok()
                        .filter(|&n| n > 0)
                        .ok_or_else(|| bad(&format!("count \"{n}\" (1, 2, ...)")))?;
                    at = Some((op, n));
                }
                "kind" => {
                    kind = match v.trim() {
                        "error" => FaultKind::Error,
                        "lost" => FaultKind::Lost,
                        "oom" => FaultKind::Oom,
                        "panic" => FaultKind::Panic,
                        "async" => FaultKind::Async,
                        o => return Err(bad(&format!("kind \"{o}\""))),
                    }
                }
                o => return Err(bad(&format!("unknown key \"{o}\""))),
            }
        }
        let device = device.ok_or_else(|| bad("no dev="))?;
        let (op, at) = at.ok_or_else(|| bad("no at="))?;
        if op == FaultOp::Alloc && matches!(kind, FaultKind::Panic | FaultKind::Async) {
            return Err(bad("an allocation fails with kind error, lost or oom"));
        }
        Ok(FaultSpec {
            device,
            op,
            at,
            kind,
        })
    }

    /// Whether this fault is for the device with `label` and index `index`.
    pub fn matches(&self, label: &str, index: usize) -> bool {
        match &self.device {
            FaultDevice::Index(i) => *i == index,
            FaultDevice::Label(l) => l == label,
            FaultDevice::Any => true,
        }
    }
}

/// One device's injector: counts its kernels and copies and fails the ones armed.
#[derive(Debug)]
pub struct FaultInjector {
    label: String,
    armed: AtomicBool,
    lost: AtomicBool,
    /// Operations counted since armed, by [`FaultOp`].
    counts: [AtomicU64; 3],
    specs: Mutex<Vec<FaultSpec>>,
}

impl FaultInjector {
    /// An unarmed injector for the device `label`.
    pub fn new(label: impl Into<String>) -> FaultInjector {
        FaultInjector {
            label: label.into(),
            armed: AtomicBool::new(false),
            lost: AtomicBool::new(false),
            counts: Default::default(),
            specs: Mutex::new(Vec::new()),
        }
    }

    /// Arms those of `faults` that are for this device, index `index` of its backend (if any).
    pub fn arm_matching(&self, index: usize, faults: &[FaultSpec]) {
        let mine: Vec<FaultSpec> = faults
            .iter()
            .filter(|s| s.matches(&self.label, index))
            .cloned()
            .collect();
        if !mine.is_empty() {
            tracing::warn!(device = %self.label, faults = ?mine, "fault injection armed");
            self.arm(mine);
        }
    }

    /// Arms `faults` (replacing any armed before) and restarts the counts; the device is no
    /// longer lost. The device field of each spec is not checked: they are for this device.
    pub fn arm(&self, faults: impl IntoIterator<Item = FaultSpec>) {
        let mut g = lock(&self.specs);
        *g = faults.into_iter().collect();
        for c in &self.counts {
            c.store(0, Ordering::SeqCst);
        }
        self.lost.store(false, Ordering::SeqCst);
        self.armed.store(!g.is_empty(), Ordering::SeqCst);
    }

    /// Removes every fault; a lost device works again.
    pub fn disarm(&self) {
        self.arm(Vec::new());
    }

    /// Kernels and copies counted since the injector was armed (those refused because the
    /// device was lost are not counted).
    pub fn counts(&self) -> (u64, u64) {
        let n = |op: FaultOp| self.counts[op as usize].load(Ordering::SeqCst);
        (n(FaultOp::Kernel), n(FaultOp::Copy))
    }

    /// `DeviceLost` once an injected loss happened (for allocations and probes).
    pub fn alive(&self) -> Result<()> {
        if self.lost.load(Ordering::Relaxed) {
            return Err(self.lost_error());
        }
        Ok(())
    }

    fn lost_error(&self) -> Error {
        Error::DeviceLost {
            device: self.label.clone(),
            detail: "lost (injected fault)".into(),
        }
    }

    /// Called before issuing an `op`: the injected error when a fault is armed for this one
    /// (`Backend`, `DeviceLost` then and after, `OutOfMemory`), or a panic for kind panic.
    pub fn check(&self, op: FaultOp) -> Result<()> {
        self.check_queued(op)?.map_or(Ok(()), Err)
    }

    /// [`FaultInjector::check`] for a backend that can fail an operation on its queue:
    /// `Ok(Some(error))` for an `async` fault, which the operation returns when it runs.
    pub fn check_queued(&self, op: FaultOp) -> Result<Option<Error>> {
        if !self.armed.load(Ordering::Relaxed) {
            return Ok(None);
        }
        self.alive()?;
        let n = self.counts[op as usize].fetch_add(1, Ordering::SeqCst) + 1;
        let kind = {
            let g = lock(&self.specs);
            match g.iter().find(|s| s.op == op && s.at == n) {
                Some(s) => s.kind,
                None => return Ok(None),
            }
        };
        let what = op.name();
        tracing::warn!(device = %self.label, "injected fault: {kind:?} at {what} {n}");
        let backend_error = |message: &str| Error::Backend {
            backend: "fault-injection",
            call: format!("{what} {n} on {}", self.label),
            code: -1,
            name: "INJECTED_FAULT".into(),
            message: message.into(),
        };
        match kind {
            // An allocation is on the caller's thread: it cannot be deferred nor panic.
            FaultKind::Error | FaultKind::Async | FaultKind::Panic if op == FaultOp::Alloc => {
                Err(backend_error("injected fault"))
            }
            FaultKind::Error => Err(backend_error("injected fault")),
            FaultKind::Async => Ok(Some(backend_error("injected fault, raised on the queue"))),
            FaultKind::Lost => {
                self.lost.store(true, Ordering::SeqCst);
                Err(self.lost_error())
            }
            FaultKind::Oom => Err(Error::OutOfMemory {
                device: self.label.clone(),
                detail: format!("injected fault at {what} {n}"),
            }),
            FaultKind::Panic => panic!("injected panic at {what} {n} on {}", self.label),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_forms() {
        let v =
            FaultSpec::parse_list("dev=1,at=kernel:4,kind=error; dev=cuda:1,at=copy:10,kind=lost")
                .unwrap();
        assert_eq!(
            v[0],
            FaultSpec::new(1, FaultOp::Kernel, 4, FaultKind::Error)
        );
        assert_eq!(v[1].device, FaultDevice::Label("cuda:1".into()));
        assert_eq!(
            (v[1].op, v[1].at, v[1].kind),
            (FaultOp::Copy, 10, FaultKind::Lost)
        );
        assert_eq!(
            FaultSpec::parse("dev=0,at=copy:1").unwrap().kind,
            FaultKind::Error
        );
        for bad in [
            "dev=1",
            "at=kernel:1",
            "dev=1,at=kernel:0",
            "dev=x,at=kernel:1",
            "dev=1,at=gemm:1",
            "dev=1,at=kernel:1,kind=melt",
            "dev=1,at=kernel:1,when=now",
            "dev=1,at=alloc:1,kind=panic",
            "dev=1,at=alloc:1,kind=async",
        ] {
            assert!(FaultSpec::parse(bad).is_err(), "{bad} accepted");
        }
        assert!(FaultSpec::parse_list("").unwrap().is_empty());
        let any = FaultSpec::parse("dev=any,at=alloc:2,kind=oom").unwrap();
        assert_eq!(any.device, FaultDevice::Any);
        assert_eq!((any.op, any.at), (FaultOp::Alloc, 2));
        assert!(any.matches("cuda:3", 3) && any.matches("emulated:0", 0));
    }

    #[test]
    fn fails_the_nth_allocation_without_counting_kernels_or_copies() {
        let inj = FaultInjector::new("cuda:0");
        inj.arm([FaultSpec::new(0, FaultOp::Alloc, 2, FaultKind::Error)]);
        assert!(inj.check(FaultOp::Alloc).is_ok());
        assert!(inj.check(FaultOp::Kernel).is_ok() && inj.check(FaultOp::Copy).is_ok());
        assert!(matches!(
            inj.check(FaultOp::Alloc),
            Err(Error::Backend { .. })
        ));
        assert!(inj.check(FaultOp::Alloc).is_ok());
        inj.arm([FaultSpec::new(0, FaultOp::Alloc, 1, FaultKind::Lost)]);
        assert!(matches!(
            inj.check(FaultOp::Alloc),
            Err(Error::DeviceLost { .. })
        ));
        assert!(inj.check(FaultOp::Kernel).is_err());
    }

    #[test]
    fn fails_the_nth_operation_and_a_lost_device_stays_lost() {
        let inj = FaultInjector::new("emulated:0");
        assert!(inj.check(FaultOp::Kernel).is_ok());
        inj.arm([FaultSpec::new(0, FaultOp::Kernel, 3, FaultKind::Error)]);
        assert!(inj.check(FaultOp::Copy).is_ok());
        assert!(inj.check(FaultOp::Kernel).is_ok());
        assert!(inj.check(FaultOp::Kernel).is_ok());
        assert!(matches!(
            inj.check(FaultOp::Kernel),
            Err(Error::Backend { .. })
        ));
        assert!(inj.check(FaultOp::Kernel).is_ok());
        inj.arm([FaultSpec::new(0, FaultOp::Copy, 1, FaultKind::Lost)]);
        assert!(matches!(
            inj.check(FaultOp::Copy),
            Err(Error::DeviceLost { .. })
        ));
        assert!(inj.check(FaultOp::Kernel).is_err());
        assert!(inj.alive().is_err());
        inj.arm([FaultSpec::new(0, FaultOp::Copy, 1, FaultKind::Oom)]);
        assert!(matches!(
            inj.check(FaultOp::Copy),
            Err(Error::OutOfMemory { .. })
        ));
        inj.arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Async)]);
        assert!(matches!(
            inj.check_queued(FaultOp::Kernel),
            Ok(Some(Error::Backend { .. }))
        ));
        assert!(matches!(inj.check_queued(FaultOp::Kernel), Ok(None)));
        inj.arm([FaultSpec::new(0, FaultOp::Kernel, 1, FaultKind::Panic)]);
        let r = std::panic::catch_unwind(|| inj.check(FaultOp::Kernel));
        assert!(r.is_err());
        inj.disarm();
        assert!(inj.check(FaultOp::Kernel).is_ok() && inj.alive().is_ok());
    }
}
