"""The routines: matrix products and the symmetric, Hermitian and triangular routines, on any
mix of NumPy arrays and DLPack arrays (CuPy, PyTorch, host or device), computed where the
operands live; the factorizations' place.
"""

from __future__ import annotations

import time
from typing import Any, Optional, Sequence, Union

from . import _arrays, _native, _trace
from ._reports import CallReport

DeviceSpec = Union[None, int, str, Sequence[Union[int, str]]]

_COMPLEX = ("complex64", "complex128")


def _device_indices(devices: DeviceSpec) -> Optional[list]:
    """Device indices from indices or labels (``"cuda:0"``); ``None`` lets hetblas choose."""
    if devices is None:
        return None
    if isinstance(devices, (int, str)):
        devices = [devices]
    labels = None
    out = []
    for d in devices:
        if isinstance(d, str):
            if labels is None:
                labels = {x["label"]: x["index"] for x in _native.devices()}
            if d not in labels:
                raise ValueError(f"devices: no device {d!r} (devices: {', '.join(labels)})")
            out.append(labels[d])
        elif isinstance(d, int) and not isinstance(d, bool) and d >= 0:
            out.append(d)
        else:
            raise TypeError(f"devices: {d!r} is neither a device index nor a label")
    return out


def _flops(dtype: str, real_flops: float) -> float:
    return real_flops * (4 if dtype in _COMPLEX else 1)


def _call(routine: str, shape: tuple, dtype: str, flops: float, native, *args) -> dict:
    """Runs ``native``, records its report (``hetblas.last_report()``, the trace) and returns
    the native dict (the factorizations read their ``info`` and pivots from it)."""
    started = time.perf_counter()
    r = native(*args, trace=_trace.tracing())
    report = CallReport(
        routine=routine, shape=shape, dtype=dtype, devices=list(r["devices"]),
        seconds=r["seconds"], flops=_flops(dtype, flops), tile=r["tile"],
        plan_cached=r["plan_cached"],
        transfers={k: tuple(v) for k, v in r["transfers"].items()},
        host_bytes=r["host_bytes"], to_host_bytes=r["to_host_bytes"],
        recovered=list(r["recovered"]), notes=list(r["notes"]),
        started=started, execute_start=r["execute_start"], trace_json=r["trace"])
    _trace.record(report)
    return r


def _dtype_of(*xs: Any) -> str:
    return _native.locate(xs[0])["dtype"]


def matmul(a: Any, b: Any, out: Any = None, *, alpha: complex = 1.0, beta: complex = 0.0,
           devices: DeviceSpec = None) -> Any:
    """``alpha * a @ b + beta * out`` on every useful device of the node; returns ``out``.

    ``a`` and ``b`` are 2-D arrays of one dtype (float32, float64, complex64, complex128):
    NumPy arrays, or arrays with ``__dlpack__`` (CuPy arrays, PyTorch tensors on the CPU or a
    GPU, hetblas DeviceArrays), in any mix. Arrays in a device's memory are computed where
    they are, never copied to the host: without ``devices`` such a call runs on the
    accelerators only. C- and Fortran-ordered arrays and views with one contiguous dimension
    are taken as they are (``a.T`` costs nothing); other strides raise ``ValueError``.

    ``out`` (needed for ``beta != 0``) receives the result; without it a new array is made, of
    the caller's type: beside the first operand in device memory (a torch tensor on its
    device, a CuPy array, a DeviceArray), else of ``a``'s library on the host.

    ``devices``: device indices or labels (``hetblas.devices()``) to use, else hetblas chooses.
    The GIL is released during the call; calls from several threads run concurrently.
    ``hetblas.last_report()`` tells where it ran and what crossed which link.
    """
    if out is None and beta != 0:
        raise ValueError("beta != 0 needs out (the array it scales)")
    _arrays.prepare([a, b, out])
    dtype = _dtype_of(a)
    if out is None:
        la, lb = _native.locate(a), _native.locate(b)
        out = _arrays.new_output([a, b], (la["shape"][0], lb["shape"][1]), la["dtype"])
    ia, ib = _native.locate(a)["shape"], _native.locate(b)["shape"]
    m, k, n = ia[0], ia[1], ib[1]
    _call("matmul", (m, n, k), dtype, 2.0 * m * n * k, _native.gemm, a, b, out,
          complex(alpha), complex(beta), _device_indices(devices))
    return out


def _sym(routine: str, a: Any, b: Any, out: Any, alpha, beta, lower: bool, trans: bool,
         side: str, devices: DeviceSpec) -> Any:
    if side not in ("left", "right"):
        raise ValueError(f"side={side!r}: 'left' or 'right'")
    if out is None and beta != 0:
        raise ValueError("beta != 0 needs out (the array it scales)")
    _arrays.prepare([a, b, out])
    la = _native.locate(a)
    if routine in ("symm", "hemm"):
        m, n = _native.locate(b)["shape"]
        out_shape, shape = (m, n), (m, n)
        flops = 2.0 * m * n * (m if side == "left" else n)
    else:
        n, k = la["shape"][::-1] if trans else la["shape"]
        out_shape, shape = (n, n), (n, k)
        flops = (2.0 if b is not None else 1.0) * n * n * k
    if out is None:
        out = _arrays.new_output([a, b], out_shape, la["dtype"], zero=True)
    _call(routine, shape, la["dtype"], flops, _native.sym, routine, a, b, out,
          complex(alpha), complex(beta), bool(lower), bool(trans), side == "left",
          _device_indices(devices))
    return out


def syrk(a: Any, out: Any = None, *, alpha: complex = 1.0, beta: complex = 0.0,
         lower: bool = False, trans: bool = False, devices: DeviceSpec = None) -> Any:
    """SYRK: ``out = alpha * a @ a.T + beta * out`` (``trans``: ``a.T @ a``), computing only
    the upper triangle of ``out`` (``lower``: the lower); the other is not touched (zeros in a
    new ``out``). Operands and devices as :func:`matmul`."""
    return _sym("syrk", a, None, out, alpha, beta, lower, trans, "left", devices)


def herk(a: Any, out: Any = None, *, alpha: float = 1.0, beta: float = 0.0,
         lower: bool = False, trans: bool = False, devices: DeviceSpec = None) -> Any:
    """HERK (complex arrays): ``out = alpha * a @ a.conj().T + beta * out`` (``trans``:
    ``a.conj().T @ a``), alpha and beta real, on one triangle as :func:`syrk`; its diagonal
    comes out real. ``a`` and ``out`` in one memory order."""
    return _sym("herk", a, None, out, alpha, beta, lower, trans, "left", devices)


def syr2k(a: Any, b: Any, out: Any = None, *, alpha: complex = 1.0, beta: complex = 0.0,
          lower: bool = False, trans: bool = False, devices: DeviceSpec = None) -> Any:
    """SYR2K: ``out = alpha * (a @ b.T + b @ a.T) + beta * out`` (``trans``: ``a.T @ b +
    b.T @ a``) on one triangle as :func:`syrk`; ``a`` and ``b`` of one shape and order."""
    return _sym("syr2k", a, b, out, alpha, beta, lower, trans, "left", devices)


def her2k(a: Any, b: Any, out: Any = None, *, alpha: complex = 1.0, beta: float = 0.0,
          lower: bool = False, trans: bool = False, devices: DeviceSpec = None) -> Any:
    """HER2K (complex arrays): ``out = alpha * a @ b^H + conj(alpha) * b @ a^H + beta * out``
    (``trans``: ``a^H @ b + conj(alpha) * b^H @ a``), beta real, on one triangle as
    :func:`syrk`; ``a``, ``b`` and ``out`` in one memory order."""
    return _sym("her2k", a, b, out, alpha, beta, lower, trans, "left", devices)


def symm(a: Any, b: Any, out: Any = None, *, alpha: complex = 1.0, beta: complex = 0.0,
         side: str = "left", lower: bool = False, devices: DeviceSpec = None) -> Any:
    """SYMM: ``out = alpha * a @ b + beta * out`` (``side="right"``: ``b @ a``) with ``a``
    symmetric, only its upper triangle read (``lower``: the lower). ``b`` and ``out`` of one
    shape and memory order."""
    return _sym("symm", a, b, out, alpha, beta, lower, False, side, devices)


def hemm(a: Any, b: Any, out: Any = None, *, alpha: complex = 1.0, beta: complex = 0.0,
         side: str = "left", lower: bool = False, devices: DeviceSpec = None) -> Any:
    """HEMM (complex arrays): as :func:`symm` with ``a`` Hermitian (the imaginary parts of
    its diagonal are not read); ``a``, ``b`` and ``out`` in one memory order."""
    return _sym("hemm", a, b, out, alpha, beta, lower, False, side, devices)


def _tri(routine: str, a: Any, b: Any, alpha, side: str, lower: bool, trans, unit: bool,
         overwrite_b: bool, devices: DeviceSpec) -> Any:
    if side not in ("left", "right"):
        raise ValueError(f"side={side!r}: 'left' or 'right'")
    t = {False: "N", True: "T", 0: "N", 1: "T", 2: "C"}.get(trans, trans)
    if isinstance(t, str):
        t = t.upper()
    if t not in ("N", "T", "C"):
        raise ValueError(f"trans={trans!r}: False/'N', True/'T' or 'C' (conjugate transpose)")
    _arrays.prepare([a, b])
    if not overwrite_b:
        b = _arrays.kind(b).copy(b)
    lb = _native.locate(b)
    m, n = lb["shape"]
    flops = (m * m * n) if side == "left" else (m * n * n)
    _call(routine, (m, n), lb["dtype"], float(flops), _native.tri, routine, a, b,
          complex(alpha), side == "left", bool(lower), t, bool(unit), _device_indices(devices))
    return b


def trsm(a: Any, b: Any, *, alpha: complex = 1.0, side: str = "left", lower: bool = False,
         trans: Union[bool, str] = False, unit_diagonal: bool = False,
         overwrite_b: bool = False, devices: DeviceSpec = None) -> Any:
    """TRSM: solves ``op(a) @ x = alpha * b`` (``side="right"``: ``x @ op(a) = alpha * b``)
    with ``a`` triangular (its upper triangle; ``lower``: the lower), ``op`` the identity,
    the transpose (``trans=True`` / ``"T"``) or the conjugate transpose (``"C"``), a unit
    diagonal not read with ``unit_diagonal``. Returns ``x``: in ``b`` itself with
    ``overwrite_b``, else in a copy of ``b`` of its type."""
    return _tri("trsm", a, b, alpha, side, lower, trans, unit_diagonal, overwrite_b, devices)


def trmm(a: Any, b: Any, *, alpha: complex = 1.0, side: str = "left", lower: bool = False,
         trans: Union[bool, str] = False, unit_diagonal: bool = False,
         overwrite_b: bool = False, devices: DeviceSpec = None) -> Any:
    """TRMM: ``alpha * op(a) @ b`` (``side="right"``: ``alpha * b @ op(a)``), ``a``
    triangular, arguments as :func:`trsm`."""
    return _tri("trmm", a, b, alpha, side, lower, trans, unit_diagonal, overwrite_b, devices)


# ---- The factorizations ------------------------------------------------------------------
# On a Fortran-ordered copy of ``a`` where it lives (the Runtime factors in place); the solves
# are POTRF/GETRF and two TRSMs, the row interchanges applied by the array's own library, so
# that device operands stay on their device. Conventions as SciPy's (scipy.linalg.cholesky,
# lu_factor, solve): 0-based pivots, LinAlgError for a matrix that is not positive definite
# or is singular.


def _square(x: Any, name: str, routine: str) -> int:
    shape = tuple(_native.locate(x)["shape"])
    if len(shape) != 2 or shape[0] != shape[1]:
        raise ValueError(f"{routine}: {name} has shape {shape}: it must be square")
    return shape[0]


def _factor_input(a: Any, overwrite_a: bool) -> Any:
    """``a`` itself when it may be overwritten and is Fortran-ordered, else a Fortran copy."""
    _arrays.prepare([a])
    la = _native.locate(a)
    fortran = _arrays.fortran_order(a) or min(la["shape"]) <= 1
    if overwrite_a and fortran and la["writable"]:
        return a
    c = _arrays.kind(a).fortran_copy(a)
    _arrays.prepare([c])
    return c


def _factor(routine: str, a: Any, lower: bool, devices: DeviceSpec) -> dict:
    la = _native.locate(a)
    m, n = la["shape"]
    mn = min(m, n)
    # LAPACK's counts: n^3/3 for POTRF, m n^2 - n^3/3 for GETRF with m >= n (in general
    # twice the multiplications m n mn - (m + n) mn^2 / 2 + mn^3 / 3).
    flops = (n ** 3 / 3.0) if routine == "potrf" else 2.0 * (m * n * mn - (m + n) * mn * mn
                                                             / 2.0 + mn ** 3 / 3.0)
    return _call(routine, (m, n), la["dtype"], flops, _native.factor, routine, a, bool(lower),
                 _device_indices(devices))


def _lin_alg_error(msg: str) -> Exception:
    import numpy as np

    return np.linalg.LinAlgError(msg)


def cholesky(a: Any, *, lower: bool = False, overwrite_a: bool = False,
             devices: DeviceSpec = None) -> Any:
    """Cholesky factorization (POTRF) of the Hermitian positive definite ``a``: returns ``c``
    with ``a = c^H @ c``, ``c`` upper triangular (``lower``: ``a = c @ c^H``, ``c`` lower), the
    other triangle zero, as ``scipy.linalg.cholesky``. Only ``a``'s upper (``lower``: lower)
    triangle is read. Raises ``numpy.linalg.LinAlgError`` when ``a`` is not positive definite.

    ``a`` is a square NumPy, CuPy or PyTorch array (host or device), factored where it lives
    on a Fortran-ordered copy (with ``overwrite_a`` and a Fortran-ordered ``a``, in ``a``
    itself); the result is of ``a``'s type, beside it. Devices as :func:`matmul`."""
    _square(a, "a", "cholesky")
    c = _factor_input(a, overwrite_a)
    r = _factor("potrf", c, lower, devices)
    if r["info"] > 0:
        raise _lin_alg_error(f"{r['info']}-th leading minor not positive definite")
    return _arrays.kind(c).triangle(c, lower)


def lu_factor(a: Any, *, overwrite_a: bool = False, devices: DeviceSpec = None) -> tuple:
    """LU factorization with partial pivoting (GETRF) of the ``m x n`` array ``a``: returns
    ``(lu, piv)`` as ``scipy.linalg.lu_factor``: ``lu`` holds U and the unit lower L (its
    diagonal not stored), ``piv`` (a NumPy int32 array, 0-based) says that row ``i`` was
    interchanged with row ``piv[i]``. A singular ``a`` (an exactly zero ``U[i, i]``) gives a
    ``LinAlgWarning``-like ``RuntimeWarning`` and the factors, as SciPy does.

    Operands, ``overwrite_a`` and devices as :func:`cholesky`."""
    la = _native.locate(a)
    if len(la["shape"]) != 2:
        raise ValueError(f"lu_factor: a has shape {tuple(la['shape'])}: it must be 2-D")
    lu = _factor_input(a, overwrite_a)
    r = _factor("getrf", lu, False, devices)
    if r["info"] > 0:
        import warnings

        warnings.warn(f"Diagonal number {r['info']} is exactly zero. Singular matrix.",
                      RuntimeWarning, stacklevel=2)
    import numpy as np

    return lu, np.asarray(r["ipiv"], dtype=np.int32) - 1


def _rhs(b: Any, n: int, overwrite_b: bool) -> tuple:
    """A Fortran-ordered 2-D right-hand side where ``b`` lives, and whether ``b`` was 1-D."""
    shape = tuple(getattr(b, "shape", ()))
    if len(shape) not in (1, 2) or shape[0] != n:
        raise ValueError(f"solve: b has shape {shape}; a is ({n}, {n}): b must have {n} rows")
    vector = len(shape) == 1
    return _factor_input(b.reshape(n, 1) if vector else b, overwrite_b), vector


def solve(a: Any, b: Any, *, assume_a: str = "gen", overwrite_a: bool = False,
          overwrite_b: bool = False, devices: DeviceSpec = None) -> Any:
    """Solves ``a @ x = b`` for square ``a``: LU with partial pivoting (GESV), or with
    ``assume_a="pos"`` Cholesky (POSV, ``a`` Hermitian positive definite, its upper triangle
    read), as ``scipy.linalg.solve``. ``b`` is 1-D or 2-D; ``x`` has its shape and type.
    Raises ``numpy.linalg.LinAlgError`` for a singular (or, with "pos", not positive
    definite) ``a``. Operands, ``overwrite_a``/``overwrite_b`` and devices as
    :func:`cholesky`; ``b`` on a device stays there (its row interchanges run in its own
    library)."""
    if assume_a not in ("gen", "pos"):
        raise ValueError(f"assume_a={assume_a!r}: 'gen' (LU) or 'pos' (Cholesky)")
    n = _square(a, "a", "solve")
    x, vector = _rhs(b, n, overwrite_b)
    if _dtype_of(a) != _dtype_of(x):
        raise TypeError(f"solve: a is {_dtype_of(a)} and b is {_dtype_of(x)}: hetblas "
                        "computes in one dtype; convert one first (x.astype(...))")
    f = _factor_input(a, overwrite_a)
    if assume_a == "pos":
        r = _factor("potrf", f, False, devices)
        if r["info"] > 0:
            raise _lin_alg_error(f"{r['info']}-th leading minor not positive definite")
        # A = U^H U: U^H y = b, then U x = y.
        trsm(f, x, lower=False, trans="C", overwrite_b=True, devices=devices)
        trsm(f, x, lower=False, overwrite_b=True, devices=devices)
    else:
        r = _factor("getrf", f, False, devices)
        if r["info"] > 0:
            raise _lin_alg_error("Matrix is singular.")
        import numpy as np

        perm = np.arange(n)
        for i, p in enumerate(np.asarray(r["ipiv"]) - 1):
            if p != i:
                perm[i], perm[p] = perm[p], perm[i]
        if (perm != np.arange(n)).any():
            _arrays.kind(x).permute_rows(x, perm)
        # P A = L U: L y = P b, then U x = y.
        trsm(f, x, lower=True, unit_diagonal=True, overwrite_b=True, devices=devices)
        trsm(f, x, lower=False, overwrite_b=True, devices=devices)
    return x.reshape(n) if vector else x
