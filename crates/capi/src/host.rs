//! The host BLAS: a library loaded by path with `RTLD_DEEPBIND`, its Fortran symbols taken
//! through its own handle, once.
//!
//! Why the handle and DEEPBIND: hetblas exports `dgemm_` and `cblas_dgemm` itself. Looked up by
//! global name, the host's `dgemm_` would be ours and a forwarded call would recurse forever.
//! DEEPBIND makes the host library bind its *own* internal references (a `dgemm_` that calls
//! `cblas_dgemm`, a CBLAS that calls the Fortran symbol) to itself before the global scope, so a
//! library that calls itself by exported name does not come back into hetblas either.
//!
//! Only the Fortran (`sgemm_`) symbols are used: every BLAS library exports them with the same
//! ABI, and the CBLAS layer of hetblas is written over the Fortran one.

use crate::symbols::SYMBOLS;
use libloading::os::unix::Library;
use std::sync::OnceLock;

use hetblas_cpu::blas::CBLAS_CANDIDATES;

/// A loaded host BLAS: the handle (kept open for the process' life) and every symbol it has.
pub struct Host {
    _lib: Library,
    /// Symbol addresses indexed like [`SYMBOLS`]; 0 where the library lacks the routine.
    addrs: Vec<usize>,
    /// The file or name it was opened from.
    pub path: String,
}

impl std::fmt::Debug for Host {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Host").field("path", &self.path).finish()
    }
}

impl Host {
    /// The address of routine `sym` (an index into [`SYMBOLS`]), or `None`.
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

/// Marks this thread as inside a host BLAS call. A host routine that calls a BLAS symbol by
/// global name reaches hetblas again when DEEPBIND could not apply (the program had loaded that
/// library itself before hetblas opened it); such a nested call is answered by
/// hetblas-refblas instead of the host, which would call back again, forever.
pub struct InHost(());

impl InHost {
    /// Whether this thread is inside a host call.
    #[inline]
    pub fn active() -> bool {
        IN_HOST.with(|c| c.get())
    }
    /// Enters a host call (left when the value is dropped).
    #[inline]
    pub fn enter() -> InHost {
        IN_HOST.with(|c| c.set(true));
        InHost(())
    }
}

impl Drop for InHost {
    #[inline]
    fn drop(&mut self) {
        IN_HOST.with(|c| c.set(false));
    }
}

/// The host BLAS, loaded on first use; `None` when there is none (or `HETBLAS_CBLAS=rust`),
/// and every routine answers from the pure-Rust reference BLAS.
#[inline]
pub fn host() -> Option<&'static Host> {
    HOST.get_or_init(load).as_ref()
}

/// What the host BLAS is, for messages.
pub fn describe() -> String {
    match host() {
        Some(h) => h.path.clone(),
        None => "pure-Rust reference BLAS (hetblas-refblas)".into(),
    }
}

fn load() -> Option<Host> {
    match &crate::settings::settings().host_blas {
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
    let mut addrs = Vec::with_capacity(SYMBOLS.len());
    for name in SYMBOLS {
        if name.is_empty() {
            addrs.push(0);
            continue;
        }
        let sym = format!("{name}_\0");
        // SAFETY: only the address is taken here; it is called later with the prototype of the
        // reference BLAS routine of that name.
        let a = unsafe { lib.get::<*const ()>(sym.as_bytes()) }
            .map(|s| s.into_raw() as usize)
            .unwrap_or(0);
        addrs.push(a);
    }
    let dgemm = SYMBOLS.iter().position(|s| *s == "dgemm").map(|i| addrs[i]);
    match dgemm {
        None | Some(0) => return Err(format!("{path} has no dgemm_")),
        Some(a) if crate::xerbla::is_ours(a) => return Err(format!("{path} is hetblas itself")),
        _ => {}
    }
    Ok(Host {
        _lib: lib,
        addrs,
        path: path.to_string(),
    })
}
