"""hetblas.matmul against NumPy with double-precision accumulation: every dtype, every memory
order of a, b and out, views, odd and empty shapes, alpha and beta."""

import numpy as np
import pytest

import hetblas
from conftest import DTYPES, assert_close, rand, wide

SHAPES = [(37, 53, 29), (1, 7, 5), (64, 1, 64), (5, 64, 1), (130, 70, 90)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("orders", ["CCC", "CFC", "FCF", "FFF", "CCF", "FFC"])
@pytest.mark.parametrize("m,n,k", SHAPES)
def test_matmul_matches_numpy(rng, dtype, orders, m, n, k):
    a = rand(rng, (m, k), dtype, orders[0])
    b = rand(rng, (k, n), dtype, orders[1])
    out = np.zeros((m, n), dtype=dtype, order=orders[2])
    got = hetblas.matmul(a, b, out=out)
    assert got is out
    ref = wide(a) @ wide(b)
    assert_close(out, ref, np.abs(wide(a)) @ np.abs(wide(b)), k, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_new_output_is_numpy_of_the_dtype(rng, dtype):
    a, b = rand(rng, (33, 20), dtype), rand(rng, (20, 41), dtype)
    c = hetblas.matmul(a, b)
    assert isinstance(c, np.ndarray) and c.dtype == dtype and c.shape == (33, 41)
    assert_close(c, wide(a) @ wide(b), np.abs(wide(a)) @ np.abs(wide(b)), 20, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_alpha_beta(rng, dtype):
    complex_ = np.issubdtype(dtype, np.complexfloating)
    alpha, beta = (0.75 - 0.5j, -1.25 + 0.25j) if complex_ else (0.75, -1.25)
    a, b = rand(rng, (40, 24), dtype), rand(rng, (24, 31), dtype, "F")
    c0 = rand(rng, (40, 31), dtype)
    c = c0.copy()
    hetblas.matmul(a, b, out=c, alpha=alpha, beta=beta)
    ref = alpha * (wide(a) @ wide(b)) + beta * wide(c0)
    scale = abs(alpha) * (np.abs(wide(a)) @ np.abs(wide(b))) + abs(beta) * np.abs(wide(c0))
    assert_close(c, ref, scale, 24, dtype)


def test_beta_zero_does_not_read_out(rng):
    a, b = rand(rng, (20, 10), np.float64), rand(rng, (10, 30), np.float64)
    c = np.full((20, 30), np.nan)
    hetblas.matmul(a, b, out=c)
    assert np.isfinite(c).all()
    assert_close(c, a @ b, np.abs(a) @ np.abs(b), 10, np.float64)


def test_views_and_transposes(rng):
    big = rand(rng, (60, 80), np.float64)
    a = big[5:45, 3:30]          # rows and columns of a larger C array: ld 80
    b = rand(rng, (50, 27), np.float64, "F")[:, :].T  # (27, 50), a transpose view
    out_big = np.zeros((70, 90))
    out = out_big[2:42, 10:60]   # an output view inside a larger array
    hetblas.matmul(a, b, out=out)
    assert_close(out, a @ b, np.abs(a) @ np.abs(b), 27, np.float64)
    assert (out_big[:2] == 0).all() and (out_big[:, :10] == 0).all()  # outside untouched


@pytest.mark.parametrize("m,n,k", [(0, 5, 3), (4, 0, 3), (4, 5, 0), (0, 0, 0)])
def test_empty(m, n, k):
    a, b = np.ones((m, k)), np.ones((k, n))
    c = hetblas.matmul(a, b)
    assert c.shape == (m, n)
    np.testing.assert_array_equal(c, np.zeros((m, n)))
    c = np.full((m, n), 2.0)
    hetblas.matmul(a, b, out=c, beta=0.5)   # k == 0: out = beta * out
    np.testing.assert_array_equal(c, np.full((m, n), 1.0))


def test_devices_choice(rng):
    a, b = rand(rng, (300, 200), np.float64), rand(rng, (200, 250), np.float64)
    labels = [d.label for d in hetblas.devices()]
    for chosen in (["emulated:0"], [labels.index("emulated:1")], ["cpu:0", "emulated:0"]):
        c = hetblas.matmul(a, b, devices=chosen)
        assert_close(c, a @ b, np.abs(a) @ np.abs(b), 200, np.float64)
        used = set(hetblas.last_report().devices)
        names = {labels[x] if isinstance(x, int) else x for x in chosen}
        assert used <= names, (used, names)


def test_report_of_a_host_call(rng):
    a, b = rand(rng, (256, 256), np.float64), rand(rng, (256, 256), np.float64)
    hetblas.matmul(a, b)
    r = hetblas.last_report()
    assert r.routine == "matmul" and r.shape == (256, 256, 256) and r.dtype == "float64"
    assert r.flops == 2 * 256**3 and r.seconds > 0 and r.devices
    emulated = [d for d in r.devices if d.startswith("emulated")]
    if emulated:  # host operands reach an emulated device over its host link
        assert r.host_bytes > 0
