"""The factorizations and solves against NumPy: Cholesky of Hermitian positive definite
matrices (both triangles, both memory orders), LU with partial pivoting of square and
rectangular matrices (SciPy's conventions: 0-based pivots, L and U in one array), and the
solves on 1-D and 2-D right-hand sides, on the host and on an emulated device. Checked by
backward error (a reconstruction within a bound per dtype), not by matching LAPACK's bits."""

import numpy as np
import pytest

import hetblas
from conftest import DTYPES, EPS, rand, wide


def spd(rng, n, dtype, order="C"):
    """A Hermitian positive definite matrix, well conditioned (diagonally dominant)."""
    x = wide(rand(rng, (n, n), dtype))
    h = x @ x.conj().T / n + n * np.eye(n)
    return np.array(h.astype(dtype), order=order)


def backward_ok(got, ref, n, dtype):
    """||got - ref||_max <= 64 n eps ||ref||_max."""
    err = np.abs(got - ref).max()
    bound = 64 * n * EPS[dtype] * max(np.abs(ref).max(), 1.0)
    assert err <= bound, f"error {err:.3e} above {bound:.3e}"


def unpack_lu(lu, piv):
    """P, L, U of SciPy-convention factors (rows interchanged in order)."""
    m, n = lu.shape
    k = min(m, n)
    lw = wide(lu)
    L = np.tril(lw, -1)[:, :k] + np.eye(m, k)
    U = np.triu(lw)[:k, :]
    perm = np.arange(m)
    for i, p in enumerate(piv):
        perm[i], perm[p] = perm[p], perm[i]
    return perm, L, U


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("order", ["C", "F"])
def test_cholesky(rng, dtype, lower, order):
    n = 157
    a = spd(rng, n, dtype, order)
    keep = a.copy()
    c = hetblas.cholesky(a, lower=lower)
    np.testing.assert_array_equal(a, keep)  # a copy was factored
    assert c.dtype == dtype and c.shape == (n, n)
    cw = wide(c)
    other = np.triu(cw, 1) if lower else np.tril(cw, -1)
    assert not other.any()
    rec = cw @ cw.conj().T if lower else cw.conj().T @ cw
    backward_ok(rec, wide(a), n, dtype)
    r = hetblas.last_report()
    assert r.routine == "potrf" and r.flops == pytest.approx(
        n**3 / 3 * (4 if np.iscomplexobj(a) else 1))


def test_cholesky_reads_one_triangle(rng):
    n = 64
    a = spd(rng, n, np.float64)
    junk = a.copy()
    junk[np.tril_indices(n, -1)] = np.nan
    np.testing.assert_allclose(hetblas.cholesky(junk), np.linalg.cholesky(a).T, rtol=1e-10,
                               atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(150, 150), (211, 97), (97, 211), (1, 1)])
def test_lu_factor(rng, dtype, shape):
    a = rand(rng, shape, dtype)
    lu, piv = hetblas.lu_factor(a)
    assert lu.shape == shape and piv.dtype == np.int32 and piv.shape == (min(shape),)
    assert (piv >= np.arange(min(shape))).all() and (piv < shape[0]).all()
    perm, L, U = unpack_lu(lu, piv)
    # Partial pivoting: no multiplier above one in magnitude; LAPACK picks complex pivots by
    # |re| + |im| (i?amax's measure), which bounds |l| by sqrt(2).
    bound = np.sqrt(2) if np.iscomplexobj(a) else 1.0
    assert np.abs(L).max() <= bound * (1 + 1e-5)
    backward_ok(L @ U, wide(a)[perm], max(shape), dtype)


def test_lu_factor_overwrite(rng):
    a = np.asfortranarray(rand(rng, (80, 80), np.float64))
    keep = a.copy()
    lu, piv = hetblas.lu_factor(a, overwrite_a=True)
    assert lu is a
    perm, L, U = unpack_lu(lu, piv)
    backward_ok(L @ U, keep[perm], 80, np.float64)
    c_ordered = rand(rng, (30, 30), np.float64)
    lu, _ = hetblas.lu_factor(c_ordered, overwrite_a=True)
    assert lu is not c_ordered  # C order: factored in a Fortran copy


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("assume_a", ["gen", "pos"])
@pytest.mark.parametrize("nrhs", [None, 1, 13])
def test_solve(rng, dtype, assume_a, nrhs):
    n = 143
    a = spd(rng, n, dtype) if assume_a == "pos" else rand(rng, (n, n), dtype) + \
        n * np.eye(n, dtype=dtype)
    b = rand(rng, (n,) if nrhs is None else (n, nrhs), dtype)
    keep_a, keep_b = a.copy(), b.copy()
    x = hetblas.solve(a, b, assume_a=assume_a)
    np.testing.assert_array_equal(a, keep_a)
    np.testing.assert_array_equal(b, keep_b)
    assert x.shape == b.shape and x.dtype == dtype
    backward_ok(wide(a) @ wide(x), wide(b), n, dtype)


def test_device_factorizations(rng):
    dev = [d.index for d in hetblas.devices() if d.kind == "emulated"][0]
    n = 120
    a = spd(rng, n, np.float64)
    c = hetblas.cholesky(hetblas.to_device(a, dev), lower=True)
    assert isinstance(c, hetblas.DeviceArray) and c.device == dev
    cw = c.numpy()
    backward_ok(cw @ cw.T, a, n, np.float64)
    g = rand(rng, (n, n), np.float64)
    lu, piv = hetblas.lu_factor(hetblas.to_device(g, dev))
    assert isinstance(lu, hetblas.DeviceArray) and lu.device == dev
    perm, L, U = unpack_lu(lu.numpy(), piv)
    backward_ok(L @ U, g[perm], n, np.float64)
