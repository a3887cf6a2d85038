//! The macros that turn one definition per routine into its generic Rust implementation and
//! its Fortran entry points (LP64 `dgemm_`, ILP64 `dgemm_64_`, for every precision).
//!
//! A routine is written once as its argument list in Fortran order, each argument tagged with
//! its kind:
//! - `c`: a character option (`u8` inside; `*const c_char` in the ABI; hidden lengths unread),
//! - `i`: an integer (`i64` inside; `*const i32` or `*const i64` in the ABI),
//! - `v`: a scalar of the routine's type (by value inside, by reference in the ABI),
//! - `r`: a real scalar of the routine's precision (HERK's alpha, CSSCAL's alpha, ...),
//! - `p` / `m`: an array read / written.
//!
//! The generated implementation checks the arguments (the reference's own order and parameter
//! numbers, from hetblas-refblas), gives the call to the device path where the routine has one,
//! then calls the host BLAS through its handle (ints narrowed to 32 bits; a call whose ints do
//! not fit goes to refblas) or, with no host BLAS, hetblas-refblas.

/// The type of an argument inside hetblas.
macro_rules! rty {
    (c, $T:ty) => { u8 };
    (i, $T:ty) => { i64 };
    (v, $T:ty) => { $T };
    (r, $T:ty) => { <$T as hetblas_refblas::Scalar>::Real };
    (p, $T:ty) => { *const $T };
    (m, $T:ty) => { *mut $T };
    (q, $T:ty) => { *mut <$T as hetblas_refblas::Scalar>::Real };
}

/// The type of an argument in the Fortran ABI, with integer type `$I`.
macro_rules! fty {
    (c, $T:ty, $I:ty) => { *const std::ffi::c_char };
    (i, $T:ty, $I:ty) => { *const $I };
    (v, $T:ty, $I:ty) => { *const $T };
    (r, $T:ty, $I:ty) => { *const <$T as hetblas_refblas::Scalar>::Real };
    (p, $T:ty, $I:ty) => { *const $T };
    (m, $T:ty, $I:ty) => { *mut $T };
}

/// A Fortran argument read into its inside value (integers widened to i64).
macro_rules! fval {
    (c, $x:ident) => {
        *$x as u8
    };
    (i, $x:ident) => {
        *$x as i64
    };
    (v, $x:ident) => {
        *$x
    };
    (r, $x:ident) => {
        *$x
    };
    (p, $x:ident) => {
        $x
    };
    (m, $x:ident) => {
        $x
    };
}

/// The type of an argument in the host's Fortran ABI, with integer type `$I` (i32 for an LP64
/// host, i64 for the `scipy_..._64_` one).
macro_rules! hty {
    (c, $T:ty, $I:ty) => { *const u8 };
    (i, $T:ty, $I:ty) => { *const $I };
    (v, $T:ty, $I:ty) => { *const $T };
    (r, $T:ty, $I:ty) => { *const <$T as hetblas_refblas::Scalar>::Real };
    (p, $T:ty, $I:ty) => { *const $T };
    (m, $T:ty, $I:ty) => { *mut $T };
    (q, $T:ty, $I:ty) => { *mut <$T as hetblas_refblas::Scalar>::Real };
}

/// An inside value passed to the host's Fortran ABI with integer type `$I` (by reference to a
/// temporary that lives until the end of the call statement; for an LP64 host the integers
/// were checked to fit by `fits!`).
macro_rules! harg {
    (c, $x:ident, $I:ty) => {
        &$x as *const u8
    };
    (i, $x:ident, $I:ty) => {
        &($x as $I) as *const $I
    };
    (v, $x:ident, $I:ty) => {
        &$x as *const _
    };
    (r, $x:ident, $I:ty) => {
        &$x as *const _
    };
    (p, $x:ident, $I:ty) => {
        $x
    };
    (m, $x:ident, $I:ty) => {
        $x
    };
    (q, $x:ident, $I:ty) => {
        $x
    };
}

/// The type of an argument in the CBLAS ABI, with integer type `$I` (`e`: an enumeration;
/// `q`: a real array, `crotg`'s c). Reals and arrays pass as they are inside (`rty!`).
macro_rules! cty {
    (e, $T:ty, $I:ty) => {
        std::ffi::c_int
    };
    (i, $T:ty, $I:ty) => {
        $I
    };
    (v, $T:ty, $I:ty) => {
        <$T as crate::elem::Elem>::CScalar
    };
    ($k:ident, $T:ty, $I:ty) => {
        rty!($k, $T)
    };
}

/// A CBLAS argument read into its inside value (integers widened to i64; a complex scalar
/// read through its pointer, so only inside `unsafe`).
macro_rules! cval {
    (e, $T:ty, $x:ident) => {
        $x
    };
    (i, $T:ty, $x:ident) => {
        $x as i64
    };
    (v, $T:ty, $x:ident) => {
        <$T as crate::elem::Elem>::cscalar($x)
    };
    ($k:ident, $T:ty, $x:ident) => {
        $x
    };
}

/// The C prototypes of one CBLAS table line (`cblas!`, `cblas1!`), one per exported name, for
/// the header test ([`crate::header`]): `[sym T, ..] (args) [return kind] [swaps] [doc lines]`.
/// Per-line lists come as single token trees: a macro cannot repeat a line's arguments inside
/// the repetition over its names.
#[cfg(test)]
macro_rules! c_decls {
    ([$($sym:ident $T:ty),+] $args:tt $ret:tt $swaps:tt $doc:tt) => {
        &[$(crate::header::Decl {
            name: concat!("cblas_", stringify!($sym)),
            ty: <$T as crate::elem::Elem>::IDX,
            ret: stringify! $ret,
            args: c_decls!(@args $args),
            swaps: &$swaps,
            doc: &$doc,
        }),+]
    };
    (@args ($($k:ident $a:ident),* $(,)?)) => {
        &[$((stringify!($k), stringify!($a))),*]
    };
}

/// Whether an inside value fits the host's LP64 ABI.
macro_rules! fits {
    (i, $x:ident) => {
        i32::try_from($x).is_ok()
    };
    ($k:ident, $x:ident) => {
        true
    };
}

/// Calls host symbol `$sym` (a [`crate::symbols::Sym`]) for type `$T` with the given arguments
/// on the host of the current call's name family ([`crate::host::current`]) when it has the
/// routine and, for an LP64 host, the integers fit, outside any other host call of the thread
/// ([`crate::host::outside_host`]); evaluates to `Some(result)` or `None`.
macro_rules! call_host {
    // An index result (I?AMAX): the host's integer, widened to i64.
    (@index $T:ty, $sym:expr; $($k:ident $a:ident),*) => {{
        let host = crate::host::current();
        let addr = host.and_then(|h| h.addr(crate::symbols::index::<$T>($sym)).map(|a| (a, h.ilp64)));
        match addr {
            Some((addr, true)) => {
                crate::host::outside_host(|| call_host!(@call addr, i64, $T, i64; $($k $a),*))
            }
            Some((addr, false)) if $(fits!($k, $a) &&)* true => crate::host::outside_host(|| {
                i64::from(call_host!(@call addr, i32, $T, i32; $($k $a),*))
            }),
            _ => None,
        }
    }};
    // The call itself, integers of type `$I`: the caller runs it inside
    // [`crate::host::outside_host`].
    (@call $addr:ident, $I:ty, $T:ty, $ret:ty; $($k:ident $a:ident),*) => {{
        // SAFETY: `addr` is the host library's routine of this name for this type; its
        // prototype is the reference BLAS one written here (all by reference, integers of the
        // host's width, four hidden character lengths at the end, which callees with fewer
        // character arguments ignore). The caller's arguments passed the reference checks, so
        // the host never reports an error in our place.
        let f = unsafe {
            std::mem::transmute::<
                usize,
                unsafe extern "C" fn($(hty!($k, $T, $I)),*, usize, usize, usize, usize) -> $ret,
            >($addr)
        };
        // SAFETY: as above; the pointers are the caller's, under the BLAS contract.
        unsafe { f($(harg!($k, $a, $I)),*, 1, 1, 1, 1) }
    }};
    ($T:ty, $sym:expr, $ret:ty; $($k:ident $a:ident),*) => {{
        let host = crate::host::current();
        let addr = host.and_then(|h| h.addr(crate::symbols::index::<$T>($sym)).map(|a| (a, h.ilp64)));
        match addr {
            Some((addr, true)) => {
                crate::host::outside_host(|| call_host!(@call addr, i64, $T, $ret; $($k $a),*))
            }
            Some((addr, false)) if $(fits!($k, $a) &&)* true => {
                crate::host::outside_host(|| call_host!(@call addr, i32, $T, $ret; $($k $a),*))
            }
            _ => None,
        }
    }};
}

/// An exported entry point of `family`: marks the thread as in a call of that family (whose
/// host the call goes to when it stays on the host), counts it for the summary, and catches a
/// panic ([`guard`]). Never inlined: an entry point's fast path ([`crate::small`]) stays a few
/// instructions that do not set up this bookkeeping first.
#[inline(never)]
pub(crate) fn entry<R: Default>(
    family: crate::family::Family,
    name: &str,
    f: impl FnOnce() -> R,
) -> R {
    let _family = crate::family::Entered::new(family);
    let _counted = crate::summary::Counted::new(family, false);
    guard(name, f)
}

/// A LAPACK entry point ([`crate::lapack`]): as [`entry`], counted as LAPACK.
#[inline]
pub(crate) fn entry_lapack(family: crate::family::Family, name: &str, f: impl FnOnce()) {
    let _family = crate::family::Entered::new(family);
    let _counted = crate::summary::Counted::new(family, true);
    guard(name, f)
}

/// Catches a panic at an entry point: nothing unwinds into C or Fortran.
pub(crate) fn guard<R: Default>(name: &str, f: impl FnOnce() -> R) -> R {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("hetblas: internal error (panic) in {name}; the call did nothing further");
            R::default()
        }
    }
}

/// The routine table (`routines.rs`): each line is a [`subroutine!`] or a [`function!`], and
/// the table as a whole gives the host symbols ([`crate::symbols`]): routine `x`'s row is
/// `Sym::X`, its names for type `T` are those its line lists with `T`, in order (the first
/// the host library has is taken). One table, so a routine is named once; the host's address
/// table is indexed by `Sym` and the type.
macro_rules! routines {
    ($($kind:ident ! ($($line:tt)*);)*) => {
        $($kind!($($line)*);)*
        routines!(@symbols $(($($line)*))*);
    };
    (@symbols $(($name:ident [$($sym:ident $T:ty),+] $($rest:tt)*))*) => {
        paste::paste! {
            /// A routine whose host symbol hetblas may call: one per line of the table.
            #[allow(clippy::upper_case_acronyms)] // reason: named as the BLAS routines are
            #[derive(Debug, Clone, Copy, PartialEq, Eq)]
            #[repr(usize)]
            pub enum Sym { $([<$name:upper>]),* }
        }

        /// Each routine's host names (without the trailing `_`), in [`Sym`] order, each with its
        /// type's column ([`crate::elem::Elem::IDX`]).
        pub static SYMBOLS: &[&[(usize, &str)]] = &[
            $(&[$((<$T as crate::elem::Elem>::IDX, stringify!($sym))),+]),*
        ];
    };
}

/// A Level 1 function's line in the routine table: only its host symbols. Its implementation
/// and entries are in `functions.rs` (a returned value, mixed types: not the subroutine form).
macro_rules! function {
    ($($line:tt)*) => {};
}

/// One BLAS subroutine: its generic implementation (in the calling module) and its Fortran
/// entries for each `symbol type` pair, LP64 and ILP64.
///
/// `check(..)` names the arguments the reference checks (hetblas-refblas's `<name>_check`);
/// `offload(module::hook)` names the function (under `crate::`) that may take the call to a
/// device: generic over the element type, with the routine's own argument list, returning a
/// [`crate::route::Outcome`]. A type without a device path answers `Outcome::Host(None)` at
/// the hook's top (complex GEMM: [`crate::offload::gemm`]).
macro_rules! subroutine {
    (
        $name:ident [$($sym:ident $T:ty),+]
        $(bound($bound:path))?
        $(check($($chk:ident),*))?
        $(checkt($($chkt:ident),*))?
        $(offload($($hook:ident)::+))?
        ($($args:tt)*)
    ) => {
        subroutine!(@fn $name [$($bound)?] [$(($($chk),*))?] [$(($($chkt),*))?]
            [$($($hook)::+)?] ($($args)*) ($($args)*));
        subroutine!(@entries $name ($($args)*) [$($sym $T),+]);
    };
    // The device hook's outcome: returns from the routine when the devices computed it.
    (@hook $T:ident [$($hook:ident)::+] ($($k:ident $a:ident),* $(,)?)) => {
        // SAFETY: the arguments passed the reference checks; the caller upholds the array
        // contract.
        match unsafe { crate::$($hook)::+::<$T>($($a),*) } {
            crate::route::Outcome::Done => return Ok(()),
            crate::route::Outcome::Host(pending) => pending,
        }
    };
    (@hook $T:ident [] $args:tt) => {
        None
    };
    (@entries $name:ident $args:tt [$($sym:ident $T:ty),+]) => {
        paste::paste! {
            $(
                fortran_entry!($name, [<$sym _>], $sym, $T, crate::abi::LpInt, Reference; $args);
                #[cfg(not(feature = "ilp64"))]
                fortran_entry!($name, [<$sym _64_>], $sym, $T, i64, Reference; $args);
                fortran_entry!($name, [<scipy_ $sym _>], $sym, $T, i32, ScipyLp64; $args);
                fortran_entry!($name, [<scipy_ $sym _64_>], $sym, $T, i64, ScipyIlp64; $args);
            )+
        }
    };
    (
        @fn $name:ident [$($bound:path)?] [$(($($chk:ident),*))?] [$(($($chkt:ident),*))?]
        [$($hook:tt)*] $args:tt ($($k:ident $a:ident),* $(,)?)
    ) => {
        paste::paste! {
            #[doc = concat!("The reference BLAS `", stringify!($name), "`, checked, then on the \
                device, host or pure-Rust path. `Err(p)`: parameter `p` is invalid.")]
            ///
            /// # Safety
            /// The arrays satisfy the reference BLAS contract for the given dimensions.
            #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
            pub unsafe fn $name<T: crate::elem::Elem $(+ $bound)?>($($a: rty!($k, T)),*) -> Result<(), i32> {
                $(
                    let info = hetblas_refblas::[<$name _check>]($($chk),*);
                    if info != 0 {
                        return Err(info);
                    }
                )?
                $(
                    let info = hetblas_refblas::[<$name _check>]::<T>($($chkt),*);
                    if info != 0 {
                        return Err(info);
                    }
                )?
                // A call the device path considered and left to the host: its host time is
                // measured for the routing ([`crate::measured`]).
                let pending: Option<crate::measured::Pending> =
                    subroutine!(@hook T [$($hook)*] $args);
                crate::measured::Pending::timed(pending, || {
                    if call_host!(T, crate::symbols::Sym::[<$name:upper>], (); $($k $a),*)
                        .is_none()
                    {
                        // SAFETY: checked above; the caller upholds the array contract.
                        unsafe { hetblas_refblas::$name::<T>($($a),*) };
                    }
                });
                Ok(())
            }
        }
    };
}

/// The entry points' fast path ([`crate::small`]): GEMM's small calls go to the host before the
/// entry's bookkeeping; every other routine expands to nothing.
macro_rules! fast_path {
    (fortran gemm, $fam:ident, $T:ty; ($($k:ident $a:ident),* $(,)?)) => {
        // SAFETY: the Fortran caller passes valid references (the BLAS contract).
        if unsafe { crate::small::gemm::<$T>(crate::family::Family::$fam, $(fval!($k, $a)),*) } {
            return;
        }
    };
    (cblas gemm, $fam:ident, $T:ty; ($($k:ident $a:ident),* $(,)?)) => {
        // SAFETY: the CBLAS contract.
        if unsafe {
            crate::small::cblas_gemm::<$T>(crate::family::Family::$fam, $(cval!($k, $T, $a)),*)
        } {
            return;
        }
    };
    ($($other:tt)*) => {};
}

/// One Fortran entry point of name family `$fam` ([`crate::family::Family`]): read the
/// arguments, run the implementation, report a bad argument through `xerbla_`.
macro_rules! fortran_entry {
    ($name:ident, $export:ident, $sym:ident, $T:ty, $I:ty, $fam:ident;
     ($($k:ident $a:ident),* $(,)?)) => {
        paste::paste! {
            #[doc = concat!("Fortran `", stringify!([<$sym:upper>]), "`.")]
            ///
            /// # Safety
            /// The reference BLAS contract.
            #[no_mangle]
            #[allow(clippy::too_many_arguments)] // reason: the BLAS routine's own argument list
            pub unsafe extern "C" fn $export($($a: fty!($k, $T, $I)),*) {
                fast_path!(fortran $name, $fam, $T; ($($k $a),*));
                crate::abi::entry(crate::family::Family::$fam, stringify!($export), || {
                    // SAFETY: the Fortran caller passes valid references (the BLAS contract).
                    let r = unsafe { $name::<$T>($(fval!($k, $a)),*) };
                    if let Err(info) = r {
                        crate::xerbla::report::<$I>(stringify!([<$sym:upper>]), info);
                    }
                })
            }
        }
    };
}

/// The integer type of the unsuffixed symbols.
#[cfg(not(feature = "ilp64"))]
pub type LpInt = i32;
/// The integer type of the unsuffixed symbols.
#[cfg(feature = "ilp64")]
pub type LpInt = i64;
