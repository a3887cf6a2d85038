//! ScaLAPACK's `pdgemm_` / `psgemm_` (Fortran ABI), exported by `libhetblas_mpi.so`: a
//! ScaLAPACK program runs its PDGEMM calls through SUMMA and its ranks' node runtimes by
//! preloading the library (`mpirun -x LD_PRELOAD=.../libhetblas_mpi.so ./prog`).
//!
//! **Contexts.** The BLACS context in the descriptors is resolved through the BLACS the program
//! already uses (ScaLAPACK's own, found in the process with `dlsym`): `blacs_gridinfo_` gives the
//! grid's shape and this process's place, `blacs_pnum_` the MPI rank of every grid position. The
//! grid's communicator is then made once per context from those ranks (`MPI_Comm_create_group`,
//! collective over the grid only) and kept. The ranks `blacs_pnum_` returns are ranks of the
//! system context the grid was made from; that is `MPI_COMM_WORLD` for contexts from
//! `blacs_get(-1, 0, ctxt)`, the usual (and here the required) way. A process with no BLACS
//! gets an error message and no computation: no grid can be known without one.
//!
//! Errors are reported as PBLAS does (a message naming the routine and `INFO`) and the call
//! returns without touching C. Nothing unwinds across the C boundary.

use crate::desc::Descriptor;
use crate::error::{DistError, Result};
use crate::grid::ProcessGrid;
use crate::matrix::{DistMut, DistRef};
use crate::summa::{gemm_sub_in, SummaOptions, Workspace};
use hetblas::{Runtime, Scalar, Trans};
use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, Group, SimpleCommunicator};
use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

static CALLS: AtomicU64 = AtomicU64::new(0);
static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

/// A grid made for a BLACS context, with what BLACS said of it (a context number is reused
/// after `blacs_gridexit`, so the entry is checked against BLACS at every call).
struct KnownGrid {
    ranks: Vec<c_int>,
    /// (nprow, npcol, myrow, mycol)
    shape: [c_int; 4],
    /// Never dropped: freeing a communicator after `MPI_Finalize` (when thread-local storage
    /// is torn down) is an error, and the program's BLACS finalises MPI before that.
    grid: &'static ProcessGrid,
}

thread_local! {
    /// Grids made for BLACS contexts (MPI calls come from the thread that called pdgemm_).
    static GRIDS: RefCell<HashMap<c_int, KnownGrid>> = RefCell::new(HashMap::new());
    /// Panel buffers per element type, kept between calls so that the node runtime page-locks
    /// them once (see `Workspace`).
    static WORKSPACES: RefCell<HashMap<TypeId, Box<dyn Any>>> = RefCell::new(HashMap::new());
}

/// How many `pdgemm_` / `psgemm_` calls this library has served (a program can check, with
/// `dlsym`, that the preload took effect).
#[no_mangle]
pub extern "C" fn hetblas_mpi_pdgemm_calls() -> u64 {
    CALLS.load(Ordering::Relaxed)
}

type GridInfo = unsafe extern "C" fn(*const c_int, *mut c_int, *mut c_int, *mut c_int, *mut c_int);
type Pnum = unsafe extern "C" fn(*const c_int, *const c_int, *const c_int) -> c_int;

/// The grid of BLACS context `ictxt`, or `None` when this process is not in it.
fn grid_of(ictxt: c_int) -> Result<Option<&'static ProcessGrid>> {
    let no_blacs = |e: libloading::Error| {
        DistError::Grid(format!(
            "no BLACS in this process ({e}): pdgemm_ takes its grid from the program's BLACS"
        ))
    };
    let this = libloading::os::unix::Library::this();
    // SAFETY: the symbols are BLACS' Fortran entry points with these C signatures (every
    // argument by reference, ints of C int size as in the reference BLACS).
    let (gridinfo, pnum) = unsafe {
        (
            *this
                .get::<GridInfo>(b"blacs_gridinfo_\0")
                .map_err(no_blacs)?,
            *this.get::<Pnum>(b"blacs_pnum_\0").map_err(no_blacs)?,
        )
    };
    let (mut nprow, mut npcol, mut myrow, mut mycol) = (0, 0, 0, 0);
    // SAFETY: four valid out-pointers; BLACS returns -1 for a context this process is not in.
    unsafe { gridinfo(&ictxt, &mut nprow, &mut npcol, &mut myrow, &mut mycol) };
    if myrow < 0 || mycol < 0 || nprow <= 0 || npcol <= 0 {
        return Ok(None);
    }
    let mut ranks = Vec::with_capacity((nprow * npcol) as usize);
    for p in 0..nprow {
        for q in 0..npcol {
            // SAFETY: valid in-pointers; (p, q) is inside the grid.
            ranks.push(unsafe { pnum(&ictxt, &p, &q) });
        }
    }
    let cached = GRIDS.with(|g| {
        g.borrow()
            .get(&ictxt)
            .filter(|k| k.ranks == ranks && k.shape == [nprow, npcol, myrow, mycol])
            .map(|k| k.grid)
    });
    if let Some(grid) = cached {
        return Ok(Some(grid));
    }
    if !mpi::environment::is_initialized() {
        return Err(DistError::Grid("MPI is not initialised".into()));
    }
    let world = SimpleCommunicator::world();
    if ranks.iter().any(|&r| r < 0 || r >= world.size()) {
        return Err(DistError::Grid(format!(
            "BLACS context {ictxt} maps to ranks {ranks:?}, not all in MPI_COMM_WORLD"
        )));
    }
    let group = world.group().include(&ranks);
    let comm = world
        .split_by_subgroup(&group)
        .ok_or_else(|| DistError::Grid("this process is not in its grid's group".into()))?;
    let expected = myrow * npcol + mycol;
    if comm.rank() != expected {
        return Err(DistError::Grid(format!(
            "grid rank {} for BLACS position ({myrow}, {mycol}), expected {expected}",
            comm.rank()
        )));
    }
    let grid: &'static ProcessGrid = Box::leak(Box::new(ProcessGrid::from_grid_comm(
        comm,
        nprow as usize,
        npcol as usize,
    )?));
    GRIDS.with(|g| {
        g.borrow_mut().insert(
            ictxt,
            KnownGrid {
                ranks,
                shape: [nprow, npcol, myrow, mycol],
                grid,
            },
        )
    });
    Ok(Some(grid))
}

fn runtime() -> Result<&'static Runtime> {
    RUNTIME
        .get_or_init(|| Runtime::discover().map_err(|e| e.to_string()))
        .as_ref()
        .map_err(|e| DistError::Grid(format!("node runtime: {e}")))
}

/// The Fortran arguments of P?GEMM, by reference.
struct Args<T> {
    transa: *const c_char,
    transb: *const c_char,
    m: *const c_int,
    n: *const c_int,
    k: *const c_int,
    alpha: *const T,
    a: *const T,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *const T,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    beta: *const T,
    c: *mut T,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
}

/// # Safety
/// The pointers are P?GEMM's arguments as ScaLAPACK defines them: valid scalars, 9-entry
/// descriptors, and local arrays of at least `LLD * LOCc(N_)` elements for this process.
unsafe fn pgemm<T: Scalar + Equivalence + Default + 'static>(x: &Args<T>) -> Result<()> {
    // SAFETY: the caller passes valid pointers (function contract).
    let (desca, descb, descc) = unsafe {
        (
            &*(x.desca as *const [c_int; 9]),
            &*(x.descb as *const [c_int; 9]),
            &*(x.descc as *const [c_int; 9]),
        )
    };
    let ictxt = descc[1];
    let Some(grid) = grid_of(ictxt)? else {
        return Ok(()); // not in the grid: nothing to do, as in ScaLAPACK
    };
    let (nprow, npcol) = (grid.nprow(), grid.npcol());
    // SAFETY: scalar arguments by reference (function contract).
    let (ta, tb, m, n, k, ia, ja, ib, jb, ic, jc, alpha, beta) = unsafe {
        (
            *x.transa as u8,
            *x.transb as u8,
            *x.m,
            *x.n,
            *x.k,
            *x.ia,
            *x.ja,
            *x.ib,
            *x.jb,
            *x.ic,
            *x.jc,
            *x.alpha,
            *x.beta,
        )
    };
    let transa = Trans::from_blas_char(ta)
        .ok_or_else(|| DistError::arg(-1, format!("TRANSA = {:?}", ta as char)))?;
    let transb = Trans::from_blas_char(tb)
        .ok_or_else(|| DistError::arg(-2, format!("TRANSB = {:?}", tb as char)))?;
    let dim = |v: c_int, pos: i32, name: &str| {
        usize::try_from(v).map_err(|_| DistError::arg(-pos, format!("{name} = {v} < 0")))
    };
    let (m, n, k) = (dim(m, 3, "M")?, dim(n, 4, "N")?, dim(k, 5, "K")?);
    let start = |v: c_int, pos: i32, name: &str| {
        if v < 1 {
            Err(DistError::arg(-pos, format!("{name} = {v} < 1")))
        } else {
            Ok(v as usize - 1)
        }
    };
    let (ia, ja) = (start(ia, 8, "IA")?, start(ja, 9, "JA")?);
    let (ib, jb) = (start(ib, 12, "IB")?, start(jb, 13, "JB")?);
    let (ic, jc) = (start(ic, 17, "IC")?, start(jc, 18, "JC")?);
    let da = Descriptor::from_scalapack(desca, 10, nprow, npcol)?;
    let db = Descriptor::from_scalapack(descb, 14, nprow, npcol)?;
    let dc = Descriptor::from_scalapack(descc, 19, nprow, npcol)?;
    if da.ctxt != ictxt {
        return Err(DistError::arg(
            -1002,
            "DESCA's context differs from DESCC's",
        ));
    }
    if db.ctxt != ictxt {
        return Err(DistError::arg(
            -1402,
            "DESCB's context differs from DESCC's",
        ));
    }
    let local_len = |d: &Descriptor| {
        let lc = d.col_axis(npcol, grid.mycol()).count(d.n);
        d.lld * lc
    };
    // SAFETY: ScaLAPACK's contract: each local array holds LLD * LOCc(N_) elements (function
    // contract); A and B are only read, C is not aliased by them.
    let (a, b, c) = unsafe {
        (
            slice_or_empty(x.a, local_len(&da)),
            slice_or_empty(x.b, local_len(&db)),
            slice_or_empty_mut(x.c, local_len(&dc)),
        )
    };
    let rt = runtime()?;
    WORKSPACES.with(|w| {
        let mut w = w.borrow_mut();
        let ws = w
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Box::new(Workspace::<T>::new()))
            .downcast_mut::<Workspace<T>>()
            .ok_or_else(|| DistError::Grid("workspace of another type".into()))?;
        gemm_sub_in(
            rt,
            grid,
            transa,
            transb,
            m,
            n,
            k,
            alpha,
            DistRef {
                desc: da,
                local: a,
                i0: ia,
                j0: ja,
            },
            DistRef {
                desc: db,
                local: b,
                i0: ib,
                j0: jb,
            },
            beta,
            DistMut {
                desc: dc,
                local: c,
                i0: ic,
                j0: jc,
            },
            &SummaOptions::default(),
            ws,
        )
    })?;
    Ok(())
}

/// # Safety
/// `ptr` is valid for reads of `len` elements, or `len == 0`.
unsafe fn slice_or_empty<'a, T>(ptr: *const T, len: usize) -> &'a [T] {
    if len == 0 || ptr.is_null() {
        &[]
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts(ptr, len) }
    }
}

/// # Safety
/// `ptr` is valid for reads and writes of `len` elements, not aliased, or `len == 0`.
unsafe fn slice_or_empty_mut<'a, T>(ptr: *mut T, len: usize) -> &'a mut [T] {
    if len == 0 || ptr.is_null() {
        &mut []
    } else {
        // SAFETY: the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }
}

/// Runs one P?GEMM call: never unwinds, reports errors as PBLAS does.
fn entry<T: Scalar + Equivalence + Default + 'static>(routine: &str, args: Args<T>) {
    CALLS.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the pointers come from the Fortran caller, under ScaLAPACK's contract.
    let outcome =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { pgemm(&args) }));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(e)) => match e.info() {
            Some(info) => eprintln!(
                "{{ hetblas-mpi }} On entry to {routine} parameter number {} had an illegal \
                 value (INFO = {info}): {e}",
                if info <= -100 { -info / 100 } else { -info }
            ),
            None => eprintln!("{{ hetblas-mpi }} {routine} failed: {e}"),
        },
        Err(_) => eprintln!("{{ hetblas-mpi }} {routine}: internal panic (a hetblas bug)"),
    }
}

macro_rules! p_gemm {
    ($name:ident, $t:ty, $routine:literal) => {
        /// ScaLAPACK's P?GEMM (Fortran ABI; the hidden string lengths are not read).
        ///
        /// # Safety
        /// As ScaLAPACK's: valid pointers to the arguments, descriptors of 9 entries, local
        /// arrays of `LLD * LOCc(N_)` elements.
        #[no_mangle]
        #[allow(clippy::too_many_arguments)] // the PBLAS argument list
        pub unsafe extern "C" fn $name(
            transa: *const c_char,
            transb: *const c_char,
            m: *const c_int,
            n: *const c_int,
            k: *const c_int,
            alpha: *const $t,
            a: *const $t,
            ia: *const c_int,
            ja: *const c_int,
            desca: *const c_int,
            b: *const $t,
            ib: *const c_int,
            jb: *const c_int,
            descb: *const c_int,
            beta: *const $t,
            c: *mut $t,
            ic: *const c_int,
            jc: *const c_int,
            descc: *const c_int,
        ) {
            entry(
                $routine,
                Args {
                    transa,
                    transb,
                    m,
                    n,
                    k,
                    alpha,
                    a,
                    ia,
                    ja,
                    desca,
                    b,
                    ib,
                    jb,
                    descb,
                    beta,
                    c,
                    ic,
                    jc,
                    descc,
                },
            )
        }
    };
}

p_gemm!(pdgemm_, f64, "PDGEMM");
p_gemm!(psgemm_, f32, "PSGEMM");
