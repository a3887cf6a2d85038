//! Calling an entry point with an [`Args`]: the Fortran ABI (every argument by address, then
//! the hidden character lengths) and the CBLAS one (by value, typed per routine by
//! [`cblas_caller!`]).

use super::values::{cblas_enum, Args, El, Int, Kind, Val};
use hetblas_refblas::num_complex::{Complex32 as C32, Complex64 as C64};
use std::ffi::{c_int, c_void};

/// A routine's result, comparable across the types it comes in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Ret {
    /// A subroutine.
    None,
    /// A floating-point value (real ones with a zero imaginary part) and its type's epsilon.
    Val(C64, f64),
    /// An index (IAMAX).
    Idx(i64),
}

pub trait IntoRet: Copy {
    fn into_ret(self) -> Ret;
}
impl IntoRet for () {
    fn into_ret(self) -> Ret {
        Ret::None
    }
}
impl IntoRet for f32 {
    fn into_ret(self) -> Ret {
        Ret::Val(C64::new(self as f64, 0.0), f32::EPSILON as f64)
    }
}
impl IntoRet for f64 {
    fn into_ret(self) -> Ret {
        Ret::Val(C64::new(self, 0.0), f64::EPSILON)
    }
}
impl IntoRet for C32 {
    fn into_ret(self) -> Ret {
        Ret::Val(
            C64::new(self.re as f64, self.im as f64),
            f32::EPSILON as f64,
        )
    }
}
impl IntoRet for C64 {
    fn into_ret(self) -> Ret {
        Ret::Val(self, f64::EPSILON)
    }
}
impl IntoRet for i32 {
    fn into_ret(self) -> Ret {
        Ret::Idx(self as i64)
    }
}
impl IntoRet for i64 {
    fn into_ret(self) -> Ret {
        Ret::Idx(self)
    }
}
impl IntoRet for usize {
    fn into_ret(self) -> Ret {
        Ret::Idx(self as i64)
    }
}

/// Calls `f` with the pointers `p` followed by four hidden character lengths of 1 (the
/// gfortran convention; a callee with fewer character arguments reads fewer).
macro_rules! by_arity {
    ($f:ident, $p:ident, $R:ty; $($n:literal: $($i:literal)*;)*) => {
        match $p.len() {
            $($n => {
                // SAFETY: the caller's: `f` takes `n` pointer arguments (and the lengths).
                let f = unsafe {
                    std::mem::transmute::<
                        *const c_void,
                        unsafe extern "C" fn($(by_arity!(@ptr $i),)* usize, usize, usize, usize) -> $R,
                    >($f)
                };
                // SAFETY: as above; the pointers are valid for the call.
                unsafe { f($($p[$i],)* 1, 1, 1, 1) }
            })*
            n => panic!("no Fortran routine takes {n} arguments"),
        }
    };
    (@ptr $i:literal) => { *const c_void };
}

/// Calls the Fortran entry `f` (integers of type `I`, result of type `R`) with `a`.
///
/// # Safety
/// `f` is a Fortran BLAS routine whose arguments are `a.kinds` (less the CBLAS order) and
/// whose result is `R`; the buffers are large enough for the call (see [`super::values::BUF`]).
pub unsafe fn fortran<T: El, I: Int, R: IntoRet>(f: *const c_void, a: &mut Args<T>) -> Ret {
    let ints: Vec<I> = a
        .vals
        .iter()
        .map(|v| I::of(if let Val::Int(x) = v { *x } else { 0 }))
        .collect();
    let reals: Vec<T::Re> = a
        .vals
        .iter()
        .map(|v| T::re(if let Val::Real(x) = v { *x } else { 0.0 }))
        .collect();
    let bufs: Vec<*mut T> = a.bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    let p: Vec<*const c_void> = a
        .vals
        .iter()
        .enumerate()
        .filter_map(|(i, v)| {
            Some(match v {
                Val::Order(_) => return None,
                Val::Char(c) => (c as *const u8).cast(),
                Val::Int(_) => (&ints[i] as *const I).cast(),
                Val::Scalar(s) => (s as *const T).cast(),
                Val::Real(_) => (&reals[i] as *const T::Re).cast(),
                Val::Buf(b) => bufs[*b].cast_const().cast(),
            })
        })
        .collect();
    by_arity!(f, p, R;
        1: 0; 2: 0 1; 3: 0 1 2; 4: 0 1 2 3; 5: 0 1 2 3 4; 6: 0 1 2 3 4 5; 7: 0 1 2 3 4 5 6;
        8: 0 1 2 3 4 5 6 7; 9: 0 1 2 3 4 5 6 7 8; 10: 0 1 2 3 4 5 6 7 8 9;
        11: 0 1 2 3 4 5 6 7 8 9 10; 12: 0 1 2 3 4 5 6 7 8 9 10 11;
        13: 0 1 2 3 4 5 6 7 8 9 10 11 12;
    )
    .into_ret()
}

/// The CBLAS type of an argument of kind `$k`.
macro_rules! cty {
    (Order, $T:ty, $I:ty) => { c_int };
    (Trans, $T:ty, $I:ty) => { c_int };
    (Uplo, $T:ty, $I:ty) => { c_int };
    (Diag, $T:ty, $I:ty) => { c_int };
    (Side, $T:ty, $I:ty) => { c_int };
    (Dim, $T:ty, $I:ty) => { $I };
    (Band, $T:ty, $I:ty) => { $I };
    (Ld, $T:ty, $I:ty) => { $I };
    (Inc, $T:ty, $I:ty) => { $I };
    (Scalar, $T:ty, $I:ty) => { <$T as El>::Arg };
    (Real, $T:ty, $I:ty) => { <$T as El>::Re };
    (In, $T:ty, $I:ty) => { *mut $T };
    (Out, $T:ty, $I:ty) => { *mut $T };
    (Param, $T:ty, $I:ty) => { *mut $T };
}

/// The CBLAS value of one argument.
pub trait CArg<T: El, I: Int> {
    fn enumeration(&self, kind: Kind) -> c_int;
    fn int(&self) -> I;
    fn scalar(&self) -> T::Arg;
    fn real(&self) -> T::Re;
    fn buf(&self, bufs: &[*mut T]) -> *mut T;
}
impl<T: El, I: Int> CArg<T, I> for Val<T> {
    fn enumeration(&self, kind: Kind) -> c_int {
        match *self {
            Val::Order(o) => o,
            Val::Char(c) => cblas_enum(kind, c),
            _ => unreachable!("not an enumeration: {self:?}"),
        }
    }
    fn int(&self) -> I {
        match *self {
            Val::Int(x) => I::of(x),
            _ => unreachable!("not an integer: {self:?}"),
        }
    }
    fn scalar(&self) -> T::Arg {
        match self {
            Val::Scalar(s) => T::arg(s),
            _ => unreachable!("not a scalar: {self:?}"),
        }
    }
    fn real(&self) -> T::Re {
        match *self {
            Val::Real(x) => T::re(x),
            _ => unreachable!("not a real scalar: {self:?}"),
        }
    }
    fn buf(&self, bufs: &[*mut T]) -> *mut T {
        match *self {
            Val::Buf(b) => bufs[b],
            _ => unreachable!("not an array: {self:?}"),
        }
    }
}

/// A CBLAS argument's value from the next (kind, value) pair of `$it`.
macro_rules! carg {
    ($k:ident, $T:ty, $I:ty, $it:ident, $bufs:ident) => {
        carg!(@ $k, $it.next().expect("an argument per kind"), $T, $I, $bufs)
    };
    (@ Order, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@enum $v, $T, $I) };
    (@ Trans, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@enum $v, $T, $I) };
    (@ Uplo, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@enum $v, $T, $I) };
    (@ Diag, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@enum $v, $T, $I) };
    (@ Side, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@enum $v, $T, $I) };
    (@ Dim, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@int $v, $T, $I) };
    (@ Band, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@int $v, $T, $I) };
    (@ Ld, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@int $v, $T, $I) };
    (@ Inc, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@int $v, $T, $I) };
    (@ Scalar, $v:expr, $T:ty, $I:ty, $b:ident) => {{
        let (_, v) = $v;
        <Val<$T> as CArg<$T, $I>>::scalar(v)
    }};
    (@ Real, $v:expr, $T:ty, $I:ty, $b:ident) => {{
        let (_, v) = $v;
        <Val<$T> as CArg<$T, $I>>::real(v)
    }};
    (@ In, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@buf $v, $T, $I, $b) };
    (@ Out, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@buf $v, $T, $I, $b) };
    (@ Param, $v:expr, $T:ty, $I:ty, $b:ident) => { carg!(@buf $v, $T, $I, $b) };
    (@enum $v:expr, $T:ty, $I:ty) => {{
        let (k, v) = $v;
        <Val<$T> as CArg<$T, $I>>::enumeration(v, *k)
    }};
    (@int $v:expr, $T:ty, $I:ty) => {{
        let (_, v) = $v;
        <Val<$T> as CArg<$T, $I>>::int(v)
    }};
    (@buf $v:expr, $T:ty, $I:ty, $b:ident) => {{
        let (_, v) = $v;
        <Val<$T> as CArg<$T, $I>>::buf(v, &$b)
    }};
}

/// A generic function calling a CBLAS routine whose arguments are `$k...` and whose result
/// is `R` (or, with `sub`, `R` written through a trailing pointer: `cblas_zdotu_sub`).
macro_rules! cblas_caller {
    ($name:ident, ($($k:ident)*)) => {
        /// # Safety
        /// `f` is the CBLAS routine of these arguments, integer type `I` and result `R`; the
        /// buffers are large enough for the call.
        pub unsafe fn $name<T: El, I: Int, R: IntoRet>(f: *const c_void, a: &mut Args<T>) -> Ret {
            let bufs: Vec<*mut T> = a.bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
            let mut it = a.kinds.iter().zip(a.vals.iter());
            // SAFETY: the caller's.
            let f = unsafe {
                std::mem::transmute::<*const c_void, unsafe extern "C" fn($(cty!($k, T, I)),*) -> R>(f)
            };
            // SAFETY: as above; the pointers are valid for the call.
            unsafe { f($(carg!($k, T, I, it, bufs)),*) }.into_ret()
        }
    };
    (sub $name:ident, ($($k:ident)*)) => {
        /// # Safety
        /// `f` is the CBLAS `_sub` routine of these arguments and integer type `I`.
        pub unsafe fn $name<T: El, I: Int, R: El + IntoRet>(f: *const c_void, a: &mut Args<T>) -> Ret {
            let bufs: Vec<*mut T> = a.bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
            let mut it = a.kinds.iter().zip(a.vals.iter());
            let mut out = R::make(f64::NAN, f64::NAN);
            // SAFETY: the caller's.
            let f = unsafe {
                std::mem::transmute::<*const c_void, unsafe extern "C" fn($(cty!($k, T, I),)* *mut R)>(f)
            };
            // SAFETY: as above; the pointers are valid for the call.
            unsafe { f($(carg!($k, T, I, it, bufs),)* &mut out) };
            out.into_ret()
        }
    };
}
