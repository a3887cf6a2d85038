"""TRSM and TRMM against NumPy: both sides, triangles, every trans, unit diagonals, both memory
orders of a and b, every dtype; b kept unless overwrite_b."""

import itertools

import numpy as np
import pytest

import hetblas
from conftest import DTYPES, assert_close, rand, wide

COMPLEX = [np.complex64, np.complex128]


def triangular(rng, n, dtype, order, lower):
    """Well conditioned: a dominant diagonal, small entries elsewhere, garbage in the other
    triangle (it must not be read)."""
    a = rand(rng, (n, n), dtype) / n
    a[np.diag_indices(n)] = 2.0 + rng.uniform(0, 1, n)
    return np.array(a, order=order)


def op(t, trans):
    return {"N": t, "T": t.T, "C": t.conj().T}[trans]


@pytest.mark.parametrize("routine", ["trsm", "trmm"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("orders", ["CC", "CF", "FC", "FF"])
@pytest.mark.parametrize("side", ["left", "right"])
@pytest.mark.parametrize("lower,trans,unit",
                         list(itertools.product([False, True], "NTC", [False, True])))
def test_triangular(rng, routine, dtype, orders, side, lower, trans, unit):
    m, n = 33, 21
    k = m if side == "left" else n
    a = triangular(rng, k, dtype, orders[0], lower)
    b = rand(rng, (m, n), dtype, orders[1])
    b0 = b.copy()
    alpha = (0.75 - 0.5j) if dtype in COMPLEX else 0.75
    f = getattr(hetblas, routine)
    if dtype in COMPLEX and trans == "C" and orders[0] != orders[1]:
        with pytest.raises(ValueError, match="memory order"):
            f(a, b, alpha=alpha, side=side, lower=lower, trans=trans, unit_diagonal=unit)
        return
    x = f(a, b, alpha=alpha, side=side, lower=lower, trans=trans, unit_diagonal=unit)
    np.testing.assert_array_equal(b, b0)  # not overwritten
    assert type(x) is np.ndarray and x.shape == b.shape and x.dtype == dtype
    t = np.tril(wide(a)) if lower else np.triu(wide(a))
    if unit:
        np.fill_diagonal(t, 1.0)
    o = op(t, trans)
    if routine == "trsm":
        ref = (np.linalg.solve(o, alpha * wide(b)) if side == "left"
               else np.linalg.solve(o.T, alpha * wide(b).T).T)
        scale = np.full(ref.shape, np.abs(ref).max())
    else:
        ref = alpha * (o @ wide(b) if side == "left" else wide(b) @ o)
        scale = abs(alpha) * (np.abs(o) @ np.abs(wide(b)) if side == "left"
                              else np.abs(wide(b)) @ np.abs(o))
    assert_close(x, ref, scale, k, dtype)


def test_overwrite_b(rng):
    a = triangular(rng, 20, np.float64, "C", True)
    b = rand(rng, (20, 7), np.float64, "F")
    ref = np.linalg.solve(np.tril(a), b)
    x = hetblas.trsm(a, b, lower=True, overwrite_b=True)
    assert x is b
    assert_close(b, ref, np.full(ref.shape, np.abs(ref).max()), 20, np.float64)
