"""SYRK, HERK, SYR2K, HER2K, SYMM, HEMM against NumPy: every dtype they take, both memory
orders of every operand, both triangles, trans and side; the triangle not computed is left as
it was; orders that would need a conjugate copy are refused."""

import itertools

import numpy as np
import pytest

import hetblas
from conftest import DTYPES, assert_close, rand, wide

COMPLEX = [np.complex64, np.complex128]
ORDERS = ["".join(p) for p in itertools.product("CF", repeat=3)]


def tri_mask(n, lower):
    return np.tril(np.ones((n, n), bool)) if lower else np.triu(np.ones((n, n), bool))


def check_triangle(out, ref, scale, c0, lower, k, dtype):
    mask = tri_mask(out.shape[0], lower)
    assert_close(np.where(mask, out, 0), np.where(mask, ref, 0), np.where(mask, scale, 1), k,
                 dtype)
    np.testing.assert_array_equal(out[~mask], c0[~mask])


@pytest.mark.parametrize("routine", ["syrk", "herk", "syr2k", "her2k"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("orders", ORDERS)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("trans", [False, True])
def test_rank_updates(rng, routine, dtype, orders, lower, trans):
    herm = routine.startswith("h")
    if herm and dtype not in COMPLEX:
        pytest.skip("complex only (refusal tested in test_errors)")
    two = routine.endswith("2k")
    n, k = 37, 23
    shape = (k, n) if trans else (n, k)
    a = rand(rng, shape, dtype, orders[0])
    b = rand(rng, shape, dtype, orders[1]) if two else None
    c0 = rand(rng, (n, n), dtype, orders[2])
    if herm:
        np.fill_diagonal(c0, c0.diagonal().real)
    alpha, beta = (0.5 - 0.25j, 1.5) if herm and two else (0.5, 1.5)
    if not herm and dtype in COMPLEX:
        alpha, beta = 0.5 - 0.25j, 1.5 + 0.5j
    out = c0.copy(order=orders[2])
    refused = (two and orders[0] != orders[1]) or (herm and orders[0] != orders[2])
    f = getattr(hetblas, routine)
    args = (a, b) if two else (a,)
    if refused:
        with pytest.raises(ValueError, match="memory order"):
            f(*args, out, alpha=alpha, beta=beta, lower=lower, trans=trans)
        np.testing.assert_array_equal(out, c0)
        return
    got = f(*args, out, alpha=alpha, beta=beta, lower=lower, trans=trans)
    assert got is out
    H = (lambda x: x.conj().T) if herm else (lambda x: x.T)
    # trans: the products of a's (conjugate) transpose, op(a) = a^T (a^H for herk, her2k).
    A = H(wide(a)) if trans else wide(a)
    B = (H(wide(b)) if trans else wide(b)) if two else None
    absA = np.abs(A)
    if two:
        alpha2 = np.conj(alpha) if herm else alpha
        ref = alpha * (A @ H(B)) + alpha2 * (B @ H(A)) + beta * wide(c0)
        scale = 2 * abs(alpha) * (absA @ np.abs(B).T) + abs(beta) * np.abs(wide(c0))
    else:
        ref = alpha * (A @ H(A)) + beta * wide(c0)
        scale = abs(alpha) * (absA @ absA.T) + abs(beta) * np.abs(wide(c0))
    check_triangle(out, ref, scale + abs(beta), c0, lower, k, dtype)
    if herm:
        assert (out.diagonal().imag == 0).all()


@pytest.mark.parametrize("routine", ["symm", "hemm"])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("orders", ORDERS)
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("side", ["left", "right"])
def test_multiply(rng, routine, dtype, orders, lower, side):
    herm = routine == "hemm"
    if herm and dtype not in COMPLEX:
        pytest.skip("complex only")
    m, n = 29, 41
    ka = m if side == "left" else n
    a = rand(rng, (ka, ka), dtype, orders[0])
    b = rand(rng, (m, n), dtype, orders[1])
    c0 = rand(rng, (m, n), dtype, orders[2])
    out = c0.copy(order=orders[2])
    alpha, beta = (0.5 - 0.25j, 2 + 1j) if dtype in COMPLEX else (0.5, 2.0)
    refused = orders[1] != orders[2] or (herm and orders[0] != orders[2])
    f = getattr(hetblas, routine)
    if refused:
        with pytest.raises(ValueError, match="memory order"):
            f(a, b, out, alpha=alpha, beta=beta, side=side, lower=lower)
        return
    f(a, b, out, alpha=alpha, beta=beta, side=side, lower=lower)
    # The matrix the stored triangle stands for.
    t = np.tril(wide(a)) if lower else np.triu(wide(a))
    d = np.diag(np.diag(t).real if herm else np.diag(t))
    strict = t - np.diag(np.diag(t))
    full = strict + (strict.conj().T if herm else strict.T) + d
    prod = full @ wide(b) if side == "left" else wide(b) @ full
    ref = alpha * prod + beta * wide(c0)
    absprod = (np.abs(full) @ np.abs(wide(b)) if side == "left"
               else np.abs(wide(b)) @ np.abs(full))
    assert_close(out, ref, abs(alpha) * absprod + abs(beta) * np.abs(wide(c0)), ka, dtype)


def test_new_outputs_of_rank_updates(rng):
    a = rand(rng, (30, 12), np.float64)
    c = hetblas.syrk(a, lower=True)
    assert c.shape == (30, 30)
    mask = tri_mask(30, True)
    assert_close(np.where(mask, c, 0), np.where(mask, a @ a.T, 0), np.abs(a) @ np.abs(a).T,
                 12, np.float64)
    assert (c[~mask] == 0).all()
    c = hetblas.syrk(a, trans=True)
    assert c.shape == (12, 12)
