//! The host BLAS: where a call that stays on the host goes, per name family
//! ([`crate::family`]).
//!
//! - Reference names (`dgemm_`, `cblas_dgemm`, ...): a library loaded by path with
//!   `RTLD_DEEPBIND`, its Fortran symbols taken through its own handle, once. Why the handle
//!   and DEEPBIND: hetblas exports `dgemm_` and `cblas_dgemm` itself. Looked up by global name,
//!   the host's `dgemm_` would be ours and a forwarded call would recurse forever. DEEPBIND
//!   makes the host library bind its *own* internal references (a `dgemm_` that calls
//!   `cblas_dgemm`, a CBLAS that calls the Fortran symbol) to itself before the global scope,
//!   so a library that calls itself by exported name does not come back into hetblas either.
//! - `scipy_` names: the loaded library that defines the same names (the wheel's own
//!   scipy-openblas, found through its handle: [`crate::loaded::defining`]), called with its
//!   own integer width, so a call hetblas keeps on the host runs exactly as it did without
//!   hetblas. Without such a library (a program calling `scipy_` names of hetblas directly)
//!   they go to the reference names' host.
//!
//! Only the Fortran (`sgemm_`) symbols are used: every BLAS library exports them with the same
//! ABI, and the CBLAS layer of hetblas is written over the Fortran one.

use crate::family::Family;
use crate::settings::settings;
use crate::symbols::SYMBOLS;
use libloading::os::unix::Library;
use std::sync::OnceLock;

use hetblas_cpu::blas::CBLAS_CANDIDATES;

/// A loaded host BLAS: the handle (kept open for the process' life) and every symbol it has.
pub struct Host {
    lib: Library,
    /// Symbol addresses indexed by [`crate::symbols::index`]; 0 where the library lacks the
    /// routine.
    addrs: Vec<usize>,
    /// The file or name it was opened from.
    pub path: String,
    /// Its integers are 64-bit (the `scipy_..._64_` symbols).
    pub ilp64: bool,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("path", &self.path).finish()
    }
}

impl Host {
    /// Any symbol of this library, by name (a LAPACK routine of a BLAS library that has
    /// them), when it is not hetblas's own.
    pub fn symbol(&self, name: &str) -> Option<usize> {
        let sym = format!("{name}\0");
        // SAFETY: only the address is taken; the caller calls it with its own prototype.
        unsafe { self.lib.get::<*const ()>(sym.as_bytes()) }
            .ok()
            .map(|s| s.into_raw() as usize)
            .filter(|&a| a != 0 && !crate::xerbla::is_ours(a))
    }

    /// The address of routine `sym` (from [`crate::symbols::index`]), or `None`.
    #[inline]
    pub fn addr(&self, sym: usize) -> Option<usize> {
        match self.addrs[sym] {
            0 => None,
            a => Some(a),
        }
    }
}

static HOST: OnceLock<Option<Host>> = OnceLock::new();

thread_local! {
    static IN_HOST: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The host BLAS of the reference names, loaded on first use; `None` when there is none (or
/// `HETBLAS_CBLAS=rust`), and every routine answers from the pure-Rust reference BLAS.
#[inline]
pub fn host() -> Option<&'static Host> {
    HOST.get_or_init(load).as_ref()
}

/// The host of the `scipy_` families: the loaded library that defines their names, looked for
/// on the family's first host call (the library that calls a `scipy_` name has loaded the one
/// that defines it by then).
fn wheel(family: Family) -> Option<&'static Host> {
    wheel_cell(family)?
        .get_or_init(|| {
            let found = crate::loaded::defining(&family.host_symbol("dgemm"))?;
            let lib = found.lib?;
            let addrs = resolve(&lib, family);
            if crate::offload::verbose() {
                eprintln!(
                    "hetblas: host BLAS of the {}: {} (the library that defines them)",
                    family.describe(),
                    found.path
                );
            }
            Some(Host {
                lib,
                addrs,
                path: found.path,
                ilp64: family.host_ilp64(),
            })
        })
        .as_ref()
}

/// The `scipy_` families' hosts, once looked for.
static WHEELS: [OnceLock<Option<Host>>; 2] = [OnceLock::new(), OnceLock::new()];

fn wheel_cell(family: Family) -> Option<&'static OnceLock<Option<Host>>> {
    match family {
        Family::Reference => None,
        Family::ScipyLp64 => Some(&WHEELS[0]),
        Family::ScipyIlp64 => Some(&WHEELS[1]),
    }
}

/// The host of `family`'s calls: the wheel's library for the `scipy_` names when one defines
/// them, else the reference names' host; `None` with `HETBLAS_CBLAS=rust` (hetblas-refblas).
#[inline]
pub fn for_family(family: Family) -> Option<&'static Host> {
    match family {
        Family::Reference => host(),
        _ if settings().host_blas == hetblas::BlasLibrary::Rust => None,
        f => wheel(f).or_else(host),
    }
}

/// [`for_family`] when its first call has loaded it, without loading anything: `None` before
/// then (and where it is the pure-Rust reference BLAS).
#[inline(always)]
pub fn loaded_for(family: Family) -> Option<&'static Host> {
    let reference = || HOST.get()?.as_ref();
    match family {
        Family::Reference => reference(),
        _ if crate::settings::read_already()?.host_blas == hetblas::BlasLibrary::Rust => None,
        f => match wheel_cell(f)?.get()? {
            Some(h) => Some(h),
            None => reference(),
        },
    }
}

/// Runs `call` (a host BLAS call) with this thread marked as inside one, or returns `None` when
/// it is inside one already (or its thread-locals are gone). A host routine that calls a BLAS
/// symbol by global name reaches hetblas again when DEEPBIND could not apply (the program had
/// loaded that library itself before hetblas opened it); such a nested call is answered by
/// hetblas-refblas instead of the host, which would call back again, forever. One thread-local
/// access for the check, the mark and its removal.
#[inline]
pub fn outside_host<R>(call: impl FnOnce() -> R) -> Option<R> {
    IN_HOST
        .try_with(|c| {
            if c.replace(true) {
                return None;
            }
            struct Unmark<'a>(&'a std::cell::Cell<bool>);
            impl Drop for Unmark<'_> {
                fn drop(&mut self) {
                    self.0.set(false);
                }
            }
            let _unmark = Unmark(c);
            Some(call())
        })
        .ok()
        .flatten()
}

/// The host of the call this thread is in ([`crate::family::current`]).
#[inline]
pub fn current() -> Option<&'static Host> {
    for_family(crate::family::current())
}

/// The host BLAS libraries in use, for the summary.
pub fn in_use() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(h) = HOST.get().and_then(Option::as_ref) {
        out.push(h.path.clone());
    }
    for f in [Family::ScipyLp64, Family::ScipyIlp64] {
        if let Some(h) = wheel_cell(f)
            .and_then(OnceLock::get)
            .and_then(Option::as_ref)
        {
            out.push(format!("{} ({})", h.path, f.describe()));
        }
    }
    out
}

/// What the host BLAS is, for messages.
pub fn describe() -> String {
    match host() {
        Some(h) => h.path.clone(),
        None => "pure-Rust reference BLAS (hetblas-refblas)".into(),
    }
}

fn load() -> Option<Host> {
    match &settings().host_blas {
        hetblas::BlasLibrary::Rust => None,
        hetblas::BlasLibrary::Path(p) => match open(&p.to_string_lossy()) {
            Ok(h) => Some(h),
            Err(e) => {
                // The user named a library: say loudly that it could not be used.
                let e = hetblas::settings::setting_error(
                    "HETBLAS_CBLAS",
                    &p.display().to_string(),
                    format!("the host BLAS cannot be used: {e}"),
                );
                eprintln!("hetblas: {e}; using the pure-Rust reference BLAS");
                None
            }
        },
        hetblas::BlasLibrary::Search => CBLAS_CANDIDATES.iter().find_map(|name| open(name).ok()),
    }
}

/// Every routine's address in `lib` under `family`'s names, four per routine (S, D, C, Z; 0
/// where it has none; the first it has of a routine's alternative names for the type).
fn resolve(lib: &Library, family: Family) -> Vec<usize> {
    SYMBOLS
        .iter()
        .flat_map(|names| (0..4).map(move |idx| (names, idx)))
        .map(|(names, idx)| {
            names
                .iter()
                .filter(|&&(t, _)| t == idx)
                .find_map(|&(_, name)| {
                    let sym = format!("{}\0", family.host_symbol(name));
                    // SAFETY: only the address is taken here; it is called later with the
                    // prototype of the reference BLAS routine of that name (and the family's
                    // integer width).
                    unsafe { lib.get::<*const ()>(sym.as_bytes()) }
                        .ok()
                        .map(|s| s.into_raw() as usize)
                        .filter(|&a| a != 0 && !crate::xerbla::is_ours(a))
                })
                .unwrap_or(0)
        })
        .collect()
}

/// Opens `path` with DEEPBIND and resolves every routine it has. Refuses a library without
/// `dgemm_`, and refuses hetblas itself (registered as `libblas.so.3`, it would be found here).
fn open(path: &str) -> Result<Host, String> {
    let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_DEEPBIND;
    // libloading says only "dlopen failed"; dlerror's reason is the source.
    // SAFETY: loading a BLAS library runs its initialisers, which is what any BLAS user does;
    // the path is one the user or the system's library list named.
    let lib = unsafe { Library::open(Some(path), flags) }.map_err(|e| {
        std::error::Error::source(&e).map_or_else(|| e.to_string(), |s| s.to_string())
    })?;
    // SAFETY: only the address is compared.
    let dgemm = unsafe { lib.get::<*const ()>(b"dgemm_\0") }.map(|s| s.into_raw() as usize);
    match dgemm {
        Err(_) | Ok(0) => return Err(format!("{path} has no dgemm_")),
        Ok(a) if crate::xerbla::is_ours(a) => return Err(format!("{path} is hetblas itself")),
        _ => {}
    }
    let addrs = resolve(&lib, Family::Reference);
    Ok(Host {
        lib,
        addrs,
        path: path.to_string(),
        ilp64: false,
    })
}
