"""Bad input raises a clear Python exception, and nothing is computed."""

import numpy as np
import pytest

import hetblas


def test_wrong_dtypes():
    a = np.ones((4, 4))
    with pytest.raises(TypeError, match="int64 is not supported"):
        hetblas.matmul(np.ones((4, 4), dtype=np.int64), a)
    with pytest.raises(TypeError, match="float16"):
        hetblas.matmul(np.ones((4, 4), dtype=np.float16), a)
    with pytest.raises(TypeError, match="a is float64 and b is float32"):
        hetblas.matmul(a, np.ones((4, 4), dtype=np.float32))
    with pytest.raises(TypeError, match="native byte order"):
        hetblas.matmul(np.ones((4, 4), dtype=">f8"), a)
    with pytest.raises(TypeError, match="expected a NumPy array"):
        hetblas.matmul([[1.0]], [[2.0]])
    with pytest.raises(TypeError, match="complex"):
        hetblas.matmul(a, a, alpha=1j)


def test_shapes():
    with pytest.raises(ValueError, match=r"a's columns \(3\) must equal b's rows \(4\)"):
        hetblas.matmul(np.ones((2, 3)), np.ones((4, 5)))
    with pytest.raises(ValueError, match=r"out has shape \(2, 4\); a @ b is \(2, 5\)"):
        hetblas.matmul(np.ones((2, 3)), np.ones((3, 5)), out=np.ones((2, 4)))
    with pytest.raises(ValueError, match="expected a 2-D array, got 1-D"):
        hetblas.matmul(np.ones(3), np.ones((3, 3)))
    with pytest.raises(ValueError, match="got 3-D"):
        hetblas.matmul(np.ones((2, 3, 3)), np.ones((3, 3)))


def test_strides():
    a = np.ones((8, 8))
    with pytest.raises(ValueError, match="neither its rows nor its columns are contiguous"):
        hetblas.matmul(a[::2, ::2], np.ones((4, 4)))
    with pytest.raises(ValueError, match="negative strides"):
        hetblas.matmul(a[::-1], a)
    with pytest.raises(ValueError, match="ascontiguousarray"):
        hetblas.matmul(a, a, out=np.zeros((8, 16))[:, ::2])


def test_read_only_output():
    a = np.ones((4, 4))
    out = np.zeros((4, 4))
    out.flags.writeable = False
    with pytest.raises(ValueError, match="read-only"):
        hetblas.matmul(a, a, out=out)
    assert (out == 0).all()


def test_output_overlapping_an_input():
    a = np.ones((4, 4))
    with pytest.raises(ValueError, match="out shares memory with a"):
        hetblas.matmul(a, np.ones((4, 4)), out=a)
    big = np.ones((8, 8))
    with pytest.raises(ValueError, match="out shares memory with b"):
        hetblas.matmul(np.ones((4, 4)), big[:4, :4], out=big[2:6, 2:6])


def test_beta_needs_out():
    with pytest.raises(ValueError, match="beta != 0 needs out"):
        hetblas.matmul(np.ones((2, 2)), np.ones((2, 2)), beta=1.0)


def test_bad_devices():
    a = np.ones((4, 4))
    with pytest.raises(ValueError, match="not a device index"):
        hetblas.matmul(a, a, devices=[99])
    with pytest.raises(ValueError, match="no device 'cuda:7'"):
        hetblas.matmul(a, a, devices=["cuda:7"])
    with pytest.raises(TypeError):
        hetblas.matmul(a, a, devices=[1.5])


def test_routine_arguments():
    a = np.eye(4)
    with pytest.raises(ValueError, match="side='middle'"):
        hetblas.trsm(a, a, side="middle")
    with pytest.raises(ValueError, match="trans='X'"):
        hetblas.trsm(a, a, trans="X")
    with pytest.raises(TypeError, match="herk is for complex arrays; for float64 use syrk"):
        hetblas.herk(a)
    with pytest.raises(ValueError, match="must be"):
        hetblas.symm(np.ones((3, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match=r"a must be \(3, 3\)"):
        hetblas.trsm(np.ones((2, 2)), np.ones((3, 3)))


def test_factorization_errors():
    with pytest.raises(ValueError, match=r"a has shape \(3, 2\): it must be square"):
        hetblas.cholesky(np.ones((3, 2)))
    with pytest.raises(np.linalg.LinAlgError, match="2-th leading minor not positive definite"):
        hetblas.cholesky(np.diag([1.0, -1.0, 1.0]))
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        hetblas.solve(np.zeros((3, 3)), np.ones(3))
    with pytest.raises(np.linalg.LinAlgError, match="not positive definite"):
        hetblas.solve(-np.eye(3), np.ones(3), assume_a="pos")
    with pytest.raises(ValueError, match="b must have 3 rows"):
        hetblas.solve(np.eye(3), np.ones(4))
    with pytest.raises(TypeError, match="one dtype"):
        hetblas.solve(np.eye(3), np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError, match="assume_a='sym'"):
        hetblas.solve(np.eye(3), np.ones(3), assume_a="sym")
    with pytest.warns(RuntimeWarning, match="exactly zero"):
        hetblas.lu_factor(np.zeros((2, 2)))
    with pytest.raises(TypeError, match="complex128"):
        hetblas.cholesky(np.eye(3, dtype=np.int64))


def test_init_after_start():
    hetblas.devices()
    with pytest.raises(hetblas.HetblasError, match="already started"):
        hetblas.init(emulated=1)
