//! One fuzzed case, judged: the reference BLAS says whether the call is invalid and what its
//! `xerbla` reports; libhetblas.so must report exactly that (routine name, parameter number,
//! through its entry's handler) and touch no array, or, for a valid call, report nothing and
//! compute what the host BLAS computes: bit for bit where hetblas forwards the call as it came
//! (the Fortran entries), within the dtype's error bound elsewhere (CBLAS, which hetblas maps
//! onto the Fortran routines itself, and what hetblas computes on its own).

use super::call::Ret;
use super::libs::{addr, libs, take_report, Handler};
use super::values::{Api, Args, El, Kind, Rng, Val};
use std::collections::BTreeMap;
use std::ffi::c_void;

/// A typed call of one entry point.
pub type Caller<T> = unsafe fn(*const c_void, &mut Args<T>) -> Ret;

/// One symbol of one routine (see [`super::table`]).
pub struct Spec<T> {
    pub sym: &'static str,
    pub family: &'static str,
    pub kinds: &'static [Kind],
    /// The CBLAS entry is `cblas_<sym>_sub`, with the result through a trailing pointer.
    pub sub: bool,
    /// hetblas's Fortran entry forwards the call to the host BLAS unchanged.
    pub forwarded: bool,
    pub solve: bool,
    /// LP64 and ILP64 callers.
    pub fortran: [Caller<T>; 2],
    pub cblas: [Caller<T>; 2],
}

/// How a case ended, when it was right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Invalid, reported as the reference reports it; no array touched.
    Invalid,
    /// Valid, bit-identical to the host BLAS.
    Identical,
    /// Valid, within the dtype's error bound of the host BLAS.
    Bounded,
    /// Where the reference CBLAS is not an oracle (see [`reference_diverges`]): not compared,
    /// counted.
    Divergent,
}

/// Case counts.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub cases: usize,
    pub invalid: usize,
    pub identical: usize,
    pub bounded: usize,
    pub divergent: usize,
}

pub struct Ctx {
    /// Cases per symbol and entry point.
    pub cases: usize,
    /// Whether libhetblas.so forwards to the same host BLAS the test loaded (not
    /// `HETBLAS_CBLAS=rust` or another library).
    pub forwarding: bool,
    pub by_family: BTreeMap<&'static str, Tally>,
    pub by_api: BTreeMap<String, Tally>,
    pub wrong: Vec<String>,
}

impl Ctx {
    fn count(&mut self, family: &'static str, api: Api, o: Outcome) {
        for t in [
            self.by_family.entry(family).or_default(),
            self.by_api
                .entry(format!("{}{api:?}", super::libs::prefix()))
                .or_default(),
        ] {
            t.cases += 1;
            match o {
                Outcome::Invalid => t.invalid += 1,
                Outcome::Identical => t.identical += 1,
                Outcome::Bounded => t.bounded += 1,
                Outcome::Divergent => t.divergent += 1,
            }
        }
    }
}

/// The seed of the case stream of one symbol and entry point (FNV-1a of both names).
fn stream_seed(sym: &str, api: Api) -> u64 {
    let mut h = 0xcbf2_9ce4_8422_2325u64;
    for b in sym.bytes().chain(format!("{api:?}").bytes()) {
        h = (h ^ b as u64).wrapping_mul(0x0100_0000_01b3);
    }
    h | 1
}

/// Runs `ctx.cases` cases of `spec` through `api`.
pub fn fuzz<T: El>(ctx: &mut Ctx, spec: &Spec<T>, api: Api) {
    let mut stream = Rng(stream_seed(spec.sym, api));
    for _ in 0..ctx.cases {
        let seed = stream.next();
        let args = Args::<T>::random(&mut Rng(seed), spec.kinds, api);
        match case(spec, api, &args, ctx.forwarding) {
            Ok(o) => ctx.count(spec.family, api, o),
            Err(e) => ctx.wrong.push(format!(
                "{} through {api:?}, case seed {seed:#x}: {e}\n    arguments: {}",
                spec.sym,
                show(&args, api)
            )),
        }
    }
}

/// The arguments of a case as a reader wants them (buffers by index).
fn show<T: El>(a: &Args<T>, api: Api) -> String {
    a.kinds
        .iter()
        .zip(&a.vals)
        .filter(|(k, _)| api.cblas() || **k != Kind::Order)
        .map(|(k, v)| match v {
            Val::Char(c) if api.cblas() => format!(
                "{k:?}={} ({:?})",
                super::values::cblas_enum(*k, *c),
                *c as char
            ),
            Val::Char(c) => format!("{k:?}={:?}", *c as char),
            Val::Order(o) => format!("Order={o}"),
            Val::Int(x) => format!("{k:?}={x}"),
            Val::Scalar(s) => format!("{k:?}={s:?}"),
            Val::Real(x) => format!("{k:?}={x:?}"),
            Val::Buf(b) => format!("{k:?}=buf{b}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn names<T>(spec: &Spec<T>, api: Api) -> (String, String) {
    let sub = if spec.sub { "_sub" } else { "" };
    let s = spec.sym;
    match api {
        Api::Fortran => (format!("{s}_"), format!("{s}_")),
        Api::Fortran64 => (format!("{s}_64_"), format!("{s}_")),
        Api::Cblas => (format!("cblas_{s}{sub}"), format!("cblas_{s}{sub}")),
        Api::Cblas64 => (format!("cblas_{s}{sub}64_"), format!("cblas_{s}{sub}")),
    }
}

fn same_bits<T: El>(a: &[Vec<T>], b: &[Vec<T>]) -> bool {
    a.iter()
        .zip(b)
        .all(|(x, y)| x.iter().zip(y).all(|(p, q)| p.same_bits(*q)))
}

fn ret_bits(r: Ret) -> (u64, u64, i64) {
    match r {
        Ret::None => (0, 0, 0),
        Ret::Val(v, _) => (v.re.to_bits(), v.im.to_bits(), 0),
        Ret::Idx(i) => (0, 0, i),
    }
}

fn is_nan(v: hetblas_refblas::num_complex::Complex64) -> bool {
    v.re.is_nan() || v.im.is_nan()
}

/// One case; `Err` says what was wrong.
fn case<T: El>(
    spec: &Spec<T>,
    api: Api,
    args: &Args<T>,
    forwarding: bool,
) -> Result<Outcome, String> {
    let l = libs();
    let (hname, rname) = names(spec, api);
    let wide = api.wide() as usize;
    let callers = if api.cblas() {
        spec.cblas
    } else {
        spec.fortran
    };

    if reference_diverges(spec, api, args) {
        return Ok(Outcome::Divergent);
    }

    // 1. The reference: is the call invalid, and what does it report?
    let reference = if api.wide() {
        l.reference64.as_ref()
    } else {
        l.reference.as_ref()
    }
    .ok_or("no reference BLAS")?;
    let f = addr(reference, &rname)
        .or_else(|| super::standin::find(&rname, api.wide()))
        .ok_or_else(|| format!("the reference lacks {rname}"))?;
    take_report();
    // SAFETY: the reference's routine of this prototype (the ILP64 library's takes 64-bit
    // integers); the buffers hold every valid call of the generated sizes.
    unsafe { callers[wide](f, &mut args.clone()) };
    let rep = take_report();
    // The first report counts (the reference CBLAS reports a bad option, then passes it to
    // its Fortran routine, which reports again). A CBLAS call whose Fortran routine finds
    // the error reports through `xerbla_`; the
    // reference CBLAS's test programs turn that into `cblas_xerbla(info + 1, "cblas_<name>")`
    // (their F77_xerbla), which is what hetblas reports itself.
    let expected = (rep.calls >= 1).then(|| match rep.handler {
        Some(Handler::Xerbla) if api.cblas() => {
            (format!("cblas_{}", rep.name.to_lowercase()), rep.info + 1)
        }
        _ => (rep.name.clone(), rep.info),
    });

    // 2. libhetblas.so.
    let f = super::libs::hetblas_addr(&hname)
        .ok_or_else(|| format!("libhetblas.so lacks {}{hname}", super::libs::prefix()))?;
    let mut h = args.clone();
    // SAFETY: hetblas's entry of this prototype; buffers as above.
    let got = unsafe { callers[wide](f, &mut h) };
    let hrep = take_report();
    let handler = match api {
        Api::Fortran => Handler::Xerbla,
        Api::Fortran64 => Handler::Xerbla64,
        Api::Cblas | Api::Cblas64 => Handler::Cblas,
    };
    if let Some((name, info)) = expected {
        // The reference's row-major CGERC/ZGERC calls its GERU and reports under that name;
        // hetblas names the routine called.
        let alias = name.contains("geru") && spec.sym.contains("gerc");
        let same_name = hrep.name == name || (alias && hrep.name == format!("cblas_{}", spec.sym));
        if hrep.calls != 1 || !same_name || hrep.info != info || hrep.handler != Some(handler) {
            return Err(format!(
                "the reference reports {name} parameter {info}; libhetblas.so reported {} \
                 time(s), last {} parameter {} through {:?} (expected {handler:?})",
                hrep.calls, hrep.name, hrep.info, hrep.handler
            ));
        }
        if !same_bits(&h.bufs, &args.bufs) {
            return Err(format!("an invalid call ({name} {info}) wrote an array"));
        }
        return Ok(Outcome::Invalid);
    }
    if hrep.calls != 0 {
        return Err(format!(
            "a call the reference accepts was reported: {} parameter {} ({} time(s))",
            hrep.name, hrep.info, hrep.calls
        ));
    }

    // 3. The host BLAS computes the same call (LP64: the sizes of a valid call are small).
    let hostname = if api.cblas() {
        names(spec, Api::Cblas).0
    } else {
        names(spec, Api::Fortran).0
    };
    // A routine the host lacks gets the stand-in's values (GEMMT before OpenBLAS 0.3.22).
    let standin = super::standin::find(&hostname, false);
    let Some(host) = l.host.as_ref() else {
        let Some(f) = standin else {
            return Ok(Outcome::Bounded);
        };
        let mut o = args.clone();
        // SAFETY: the stand-in of this prototype; buffers as above.
        let want = unsafe { callers[0](f, &mut o) };
        take_report();
        within_bound(spec, args, &h.bufs, &o.bufs, got, want)?;
        return Ok(Outcome::Bounded);
    };
    // OpenBLAS has no cblas_scabs1 / cblas_dcabs1: the reference's answer there. The host's
    // own name of the routine, as libhetblas.so looks for it (GEMMT: `dgemmtr_`, `dgemmt_`).
    let f = super::standin::host_names(&hostname)
        .iter()
        .find_map(|name| addr(host, name))
        .or_else(|| l.reference.as_ref().and_then(|r| addr(r, &hostname)))
        .or(standin)
        .ok_or_else(|| format!("neither the host nor the reference has {hostname}"))?;
    let mut o = args.clone();
    // SAFETY: the host's LP64 routine of this prototype; buffers as above.
    let want = unsafe { callers[0](f, &mut o) };
    let orep = take_report();
    if orep.calls != 0 {
        return Err(format!(
            "the host BLAS reported {} parameter {} for a call the reference accepts",
            orep.name, orep.info
        ));
    }
    let identical = same_bits(&h.bufs, &o.bufs) && ret_bits(got) == ret_bits(want);
    if identical {
        return Ok(Outcome::Identical);
    }
    if forwarding && spec.forwarded && !api.cblas() {
        return Err(format!(
            "forwarded to the host BLAS, but not bit-identical to it: {}",
            first_difference(&h.bufs, &o.bufs, got, want)
        ));
    }
    within_bound(spec, args, &h.bufs, &o.bufs, got, want)?;
    Ok(Outcome::Bounded)
}

fn first_difference<T: El>(h: &[Vec<T>], o: &[Vec<T>], got: Ret, want: Ret) -> String {
    for (b, (x, y)) in h.iter().zip(o).enumerate() {
        if let Some(i) = x.iter().zip(y).position(|(p, q)| !p.same_bits(*q)) {
            return format!("buf{b}[{i}] = {:?}, host {:?}", x[i], y[i]);
        }
    }
    format!("result {got:?}, host {want:?}")
}

/// The dtype's error bound: `16 (L + 2) eps` times the largest magnitude involved, with `L`
/// the largest size argument; a triangular solve of entries in [0.5, 1) (diagonal included)
/// grows by at most 3 a row, so its bound has the factor `(L + 1) 3^L` more.
fn within_bound<T: El>(
    spec: &Spec<T>,
    args: &Args<T>,
    h: &[Vec<T>],
    o: &[Vec<T>],
    got: Ret,
    want: Ret,
) -> Result<(), String> {
    let l = args
        .kinds
        .iter()
        .zip(&args.vals)
        .filter(|(k, _)| matches!(k, Kind::Dim | Kind::Band))
        .map(|(_, v)| {
            if let Val::Int(x) = v {
                (*x).clamp(0, 8)
            } else {
                0
            }
        })
        .max()
        .unwrap_or(1) as f64;
    let mut factor = 16.0 * (l + 2.0);
    if spec.solve {
        factor *= (l + 1.0) * 3f64.powf(l);
    }
    let finite_max = |v: &[T]| {
        v.iter()
            .map(|x| x.c())
            .filter(|x| !is_nan(*x) && x.norm().is_finite())
            .fold(1.0f64, |m, x| m.max(x.norm()))
    };
    for (b, ((x, y), orig)) in h.iter().zip(o).zip(&args.bufs).enumerate() {
        let tol = factor * T::EPS * finite_max(y).max(finite_max(orig));
        for (i, (p, q)) in x.iter().zip(y).enumerate() {
            let (p, q) = (p.c(), q.c());
            let bad = if is_nan(p) || is_nan(q) {
                is_nan(p) != is_nan(q)
            } else {
                !((p - q).norm() <= tol || p == q)
            };
            if bad {
                return Err(format!(
                    "buf{b}[{i}] = {p}, host {q}, beyond the bound {tol:e}"
                ));
            }
        }
    }
    match (got, want) {
        (Ret::Val(g, eps), Ret::Val(w, _)) => {
            let tol = factor * eps * w.norm().max(l + 1.0);
            let ok = if is_nan(g) || is_nan(w) {
                is_nan(g) == is_nan(w)
            } else {
                (g - w).norm() <= tol || g == w
            };
            if !ok {
                return Err(format!("result {g}, host {w}, beyond the bound {tol:e}"));
            }
        }
        (g, w) if g != w => return Err(format!("result {g:?}, host {w:?}")),
        _ => {}
    }
    Ok(())
}

/// The row-major rank-k updates (SYRK, HERK, SYR2K, HER2K) of Debian's reference CBLAS (3.11)
/// differ from what hetblas does, and are partly undefined, in these cases:
/// - a bad Uplo: it reports parameter 3, or calls its Fortran routine with an uninitialised
///   UPLO (which then reports whatever that byte is);
/// - a complex type with Trans = T or C: it accepts ConjTrans for CSYRK/CSYR2K and Trans for
///   CHERK/CHER2K (mapping them as if real), which hetblas reports as parameter 3.
///
/// Such calls are counted as divergent and not compared.
fn reference_diverges<T: El>(spec: &Spec<T>, api: Api, args: &Args<T>) -> bool {
    let rank_k = ["syrk", "herk", "syr2k", "her2k"].contains(&spec.family);
    let row_major = args.vals.iter().any(|v| matches!(v, Val::Order(101)));
    if !(api.cblas() && rank_k && row_major) {
        return false;
    }
    args.kinds
        .iter()
        .zip(&args.vals)
        .any(|(k, v)| match (k, v) {
            (Kind::Uplo, Val::Char(c)) => !b"ULul".contains(c),
            (Kind::Trans, Val::Char(c)) => T::P >= 'c' && b"TCtc".contains(c),
            _ => false,
        })
}
