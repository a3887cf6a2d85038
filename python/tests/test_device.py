"""Arrays in a device's memory: hetblas DeviceArrays and foreign DLPack arrays on the emulated
devices are computed where they live (no byte crosses to the host), results come back as the
caller's type, and a NumPy array times a device array moves only the host operand."""

import numpy as np
import pytest

import hetblas
from conftest import DTYPES, assert_close, rand, wide


def emulated():
    return [d.index for d in hetblas.devices() if d.kind == "emulated"]


class Foreign:
    """An array of a library hetblas does not know: only the DLPack protocol."""

    def __init__(self, inner):
        self.inner = inner

    def __dlpack__(self, **kw):
        return self.inner.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("order", ["C", "F"])
def test_round_trip(rng, dtype, order):
    x = rand(rng, (17, 9), dtype, order)
    d = hetblas.to_device(x, emulated()[0])
    assert d.shape == (17, 9) and d.dtype == dtype and d.device_label == "emulated:0"
    back = d.numpy()
    np.testing.assert_array_equal(back, x)
    np.testing.assert_array_equal(np.asarray(d.T), x.T)
    assert "emulated:0" in repr(d)


@pytest.mark.parametrize("dtype", DTYPES)
def test_device_operands_stay_on_the_device(rng, dtype):
    dev = emulated()[0]
    a, b = rand(rng, (120, 70), dtype), rand(rng, (70, 90), dtype, "F")
    da, db = hetblas.to_device(a, dev), hetblas.to_device(b, dev)
    dc = hetblas.matmul(da, db)
    assert isinstance(dc, hetblas.DeviceArray) and dc.device == dev
    r = hetblas.last_report()
    assert r.host_bytes == 0, r.transfers
    assert not any(x.startswith("cpu") for x in r.devices), r.devices
    assert_close(dc.numpy(), wide(a) @ wide(b), np.abs(wide(a)) @ np.abs(wide(b)), 70, dtype)


def test_numpy_times_device_array(rng):
    dev = emulated()[1]
    a, b = rand(rng, (150, 60), np.float64), rand(rng, (60, 80), np.float64)
    db = hetblas.to_device(b, dev)
    c = hetblas.matmul(a, db)
    assert isinstance(c, hetblas.DeviceArray) and c.device == dev
    r = hetblas.last_report()
    # A goes to the device; nothing comes back to the host: B is used where it is.
    assert r.host_bytes > 0 and r.to_host_bytes == 0, r.transfers
    assert_close(c.numpy(), a @ b, np.abs(a) @ np.abs(b), 60, np.float64)
    # A host output: only C comes back.
    out = np.zeros((150, 80))
    hetblas.matmul(a, db, out=out)
    r = hetblas.last_report()
    assert r.to_host_bytes <= out.nbytes * 2, r.transfers  # C (and no B tile) to the host
    assert_close(out, a @ b, np.abs(a) @ np.abs(b), 60, np.float64)


def test_foreign_dlpack_device_arrays(rng):
    dev = emulated()[0]
    a, b = rand(rng, (64, 48), np.complex128), rand(rng, (48, 40), np.complex128)
    fa, fb = Foreign(hetblas.to_device(a, dev)), Foreign(hetblas.to_device(b, dev))
    c = hetblas.matmul(fa, fb)
    assert isinstance(c, hetblas.DeviceArray)   # hetblas cannot allocate the foreign type
    assert hetblas.last_report().host_bytes == 0
    assert_close(c.numpy(), a @ b, np.abs(a) @ np.abs(b), 48, np.complex128)
    out = Foreign(hetblas.empty((64, 40), "complex128", dev))
    assert hetblas.matmul(fa, fb, out=out) is out
    assert_close(out.inner.numpy(), a @ b, np.abs(a) @ np.abs(b), 48, np.complex128)


def test_numpy_through_dlpack(rng):
    a, b = rand(rng, (30, 20), np.float32), rand(rng, (20, 10), np.float32, "F")
    c = hetblas.matmul(Foreign(a), Foreign(b))
    assert isinstance(c, np.ndarray)
    assert_close(c, wide(a) @ wide(b), np.abs(wide(a)) @ np.abs(wide(b)), 20, np.float32)
    ro = np.zeros((30, 10), np.float32)
    ro.flags.writeable = False
    try:
        capsule_flags_read_only = True
        ro.__dlpack__(max_version=(1, 0))
    except (TypeError, BufferError):
        capsule_flags_read_only = False
    if capsule_flags_read_only:
        with pytest.raises(ValueError, match="read-only"):
            hetblas.matmul(Foreign(a), Foreign(b), out=Foreign(ro))


def test_device_symmetric_and_triangular(rng):
    dev = emulated()[0]
    a = rand(rng, (40, 25), np.float64)
    da = hetblas.to_device(a, dev)
    c = hetblas.syrk(da, lower=True)
    assert isinstance(c, hetblas.DeviceArray)
    assert hetblas.last_report().host_bytes == 0
    got, ref = np.tril(c.numpy()), np.tril(a @ a.T)
    assert_close(got, ref, np.abs(a) @ np.abs(a).T, 25, np.float64)
    t = np.tril(rand(rng, (40, 40), np.float64)) / 40 + 3 * np.eye(40)
    b = rand(rng, (40, 9), np.float64)
    x = hetblas.trsm(hetblas.to_device(t, dev), hetblas.to_device(b, dev), lower=True)
    assert isinstance(x, hetblas.DeviceArray)
    ref = np.linalg.solve(t, b)
    assert_close(x.numpy(), ref, np.full(ref.shape, np.abs(ref).max()), 40, np.float64)


def test_dlpack_export_protocol():
    d = hetblas.to_device(np.ones((3, 4)), emulated()[0])
    assert d.__dlpack_device__() == (12, 0)
    cap = d.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(cap)
    assert "dltensor" in repr(d.__dlpack__())
    with pytest.raises(BufferError):
        d.__dlpack__(dl_device=(1, 0))
    with pytest.raises(ValueError):
        np.asarray(d, copy=False) if np.lib.NumpyVersion(np.__version__) >= "2.0.0" else \
            d.__array__(copy=False)


def test_bad_device_arguments():
    with pytest.raises(ValueError, match="there are"):
        hetblas.to_device(np.ones((2, 2)), 99)
    with pytest.raises(ValueError, match="already in a device's memory"):
        hetblas.to_device(hetblas.to_device(np.ones((2, 2)), emulated()[0]), emulated()[1])
