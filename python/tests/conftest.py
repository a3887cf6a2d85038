"""The suite runs on the CPU device and two host-emulated devices (with their own memory
spaces and copy links), so that multi-device plans, device operands and DLPack all run for
real on a machine without GPUs. The runtime is started once, before any test, without a
profile (calls then follow the built-in rules, the same on every machine)."""

import numpy as np
import pytest

import hetblas

hetblas.init(emulated=2, backends=["cpu"], profile=False)

DTYPES = [np.float32, np.float64, np.complex64, np.complex128]
EPS = {np.float32: np.finfo(np.float32).eps, np.float64: np.finfo(np.float64).eps,
       np.complex64: np.finfo(np.float32).eps, np.complex128: np.finfo(np.float64).eps}


def rand(rng, shape, dtype, order="C"):
    """Random values, never zeros (a missed product shows), in ``order``."""
    x = rng.uniform(0.5, 1.5, shape) * rng.choice([-1.0, 1.0], shape)
    if np.issubdtype(dtype, np.complexfloating):
        x = x + 1j * rng.uniform(0.5, 1.5, shape)
    return np.array(x.astype(dtype), order=order)


def wide(x):
    """The array in double precision (the reference's accumulation)."""
    return x.astype(np.complex128 if np.iscomplexobj(x) else np.float64)


def assert_close(got, ref, scale, k, dtype):
    """|got - ref| <= 16 k eps scale, elementwise (scale: the magnitudes summed)."""
    tol = 16 * max(k, 1) * EPS[dtype]
    err = np.abs(wide(np.asarray(got)) - ref)
    bad = err > tol * np.maximum(scale, np.finfo(np.float64).tiny)
    assert not bad.any(), (f"max error {err.max():.3e} vs bound "
                           f"{(tol * scale).max():.3e} at {np.argwhere(bad)[:3].tolist()}")


@pytest.fixture
def rng(request):
    return np.random.default_rng(abs(hash(request.node.name)) % 2**32)
