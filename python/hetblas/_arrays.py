"""The caller's array libraries: making outputs of the caller's type where the operands are,
copying, and waiting for a device array's pending work.

hetblas imports none of them: an array's library is found from its type's module (numpy,
torch, cupy, hetblas's own DeviceArray), so that ``import hetblas`` needs only NumPy.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence, Tuple

import numpy as np

from . import _native


def _module(x: Any) -> str:
    return type(x).__module__.split(".")[0]


def is_numpy(x: Any) -> bool:
    return isinstance(x, np.ndarray)


def fortran_order(x: Any) -> bool:
    """Whether ``x`` is Fortran-ordered and not C-ordered (then outputs follow it)."""
    strides = getattr(x, "strides", None)
    shape = getattr(x, "shape", None)
    if strides is None or shape is None or len(shape) != 2:
        return False
    if callable(strides):  # torch: a method, in elements
        strides = strides()
    return shape[0] > 1 and shape[1] > 1 and strides[0] < strides[1]


class Kind:
    """One array library: how to make, copy and synchronise its arrays."""

    name = "generic"

    def empty(self, like: Any, shape: Tuple[int, int], dtype: str, device: Optional[int],
              order: str, zero: bool) -> Any:
        """A new array of the library's type beside ``like``."""
        if device is None:
            return (np.zeros if zero else np.empty)(shape, dtype=dtype, order=order)
        if zero:
            return _native.to_device(np.zeros(shape, dtype=dtype, order=order), device)
        return _native.empty(shape[0], shape[1], dtype, device, order)

    def copy(self, x: Any) -> Any:
        raise TypeError(
            f"hetblas cannot copy a {type(x).__name__}: pass overwrite_b=True, or a copy")

    def sync(self, x: Any) -> None:
        """Waits for work the library has queued on the array (nothing by default: such
        arrays must be ready when passed)."""

    def fortran_copy(self, x: Any) -> Any:
        """A Fortran-ordered copy of ``x`` beside it (the factorizations work in place)."""
        raise TypeError(f"hetblas cannot copy a {type(x).__name__}: pass overwrite_a=True "
                        "with a Fortran-ordered array, or a NumPy, CuPy or PyTorch array")

    def triangle(self, x: Any, lower: bool) -> Any:
        """``x`` with the other triangle zeroed (a new array or ``x`` itself)."""
        raise TypeError(f"hetblas cannot zero a triangle of a {type(x).__name__}")

    def permute_rows(self, x: Any, perm: np.ndarray) -> None:
        """``x[:] = x[perm]`` in place, where ``x`` is."""
        raise TypeError(f"hetblas cannot permute the rows of a {type(x).__name__}")


class NumpyKind(Kind):
    name = "numpy"

    def copy(self, x: Any) -> Any:
        return np.array(x, order="K", copy=True)

    def fortran_copy(self, x):
        return np.array(x, order="F", copy=True)

    def triangle(self, x, lower):
        return np.tril(x) if lower else np.triu(x)

    def permute_rows(self, x, perm):
        x[...] = x[perm]


class DeviceArrayKind(Kind):
    name = "hetblas"

    def copy(self, x: Any) -> Any:
        # No device-to-device copy in the Runtime's API: through the host (the host array
        # keeps the device array's order, and so does the copy).
        return _native.to_device(x.numpy(), x.device)

    # The Runtime's API has no device-side copy or elementwise kernels: these go through the
    # host (a DeviceArray is hetblas's own; CuPy and PyTorch arrays stay on their device).
    def fortran_copy(self, x):
        return _native.to_device(np.asfortranarray(x.numpy()), x.device)

    def triangle(self, x, lower):
        h = x.numpy()
        return _native.to_device(np.asfortranarray(np.tril(h) if lower else np.triu(h)),
                                 x.device)

    def permute_rows(self, x, perm):
        raise TypeError("hetblas.solve on a DeviceArray right-hand side: pass b as a NumPy, "
                        "CuPy or PyTorch array")


class TorchKind(Kind):
    name = "torch"

    def empty(self, like, shape, dtype, device, order, zero):
        import torch

        make = torch.zeros if zero else torch.empty
        if order == "F":
            return make(shape[::-1], dtype=like.dtype, device=like.device).T
        return make(shape, dtype=like.dtype, device=like.device)

    def copy(self, x):
        import torch

        return x.clone(memory_format=torch.preserve_format)

    def fortran_copy(self, x):
        import torch

        return x.T.clone(memory_format=torch.contiguous_format).T

    def triangle(self, x, lower):
        return x.tril() if lower else x.triu()

    def permute_rows(self, x, perm):
        import torch

        x.copy_(x.index_select(0, torch.as_tensor(perm, device=x.device)))

    def sync(self, x):
        if x.device.type == "cuda":  # CUDA and HIP builds alike
            import torch

            torch.cuda.current_stream(x.device).synchronize()


class CupyKind(Kind):
    name = "cupy"

    def empty(self, like, shape, dtype, device, order, zero):
        import cupy

        with like.device:
            return (cupy.zeros if zero else cupy.empty)(shape, dtype=like.dtype, order=order)

    def copy(self, x):
        return x.copy(order="A")

    def fortran_copy(self, x):
        return x.copy(order="F")

    def triangle(self, x, lower):
        import cupy

        return cupy.tril(x) if lower else cupy.triu(x)

    def permute_rows(self, x, perm):
        import cupy

        with x.device:
            x[...] = x[cupy.asarray(perm)]

    def sync(self, x):
        import cupy

        with x.device:
            cupy.cuda.get_current_stream().synchronize()


_KINDS = {"numpy": NumpyKind(), "torch": TorchKind(), "cupy": CupyKind()}
_GENERIC = Kind()
_DEVICE_ARRAY = DeviceArrayKind()


def kind(x: Any) -> Kind:
    if isinstance(x, _native.DeviceArray):
        return _DEVICE_ARRAY
    if is_numpy(x):
        return _KINDS["numpy"]
    return _KINDS.get(_module(x), _GENERIC)


def locate(x: Any) -> dict:
    """Where ``x`` is: ``{"device": None or index, "dtype", "shape", "writable"}``."""
    return _native.locate(x)


def prepare(arrays: Sequence[Any]) -> None:
    """Waits for the libraries' pending work on device arrays before hetblas reads them."""
    for x in arrays:
        if x is not None and not is_numpy(x):
            kind(x).sync(x)


def new_output(operands: Sequence[Any], shape: Tuple[int, int], dtype: str,
               zero: bool = False) -> Any:
    """The output of a call on ``operands``, of the caller's type: beside the first operand in
    a device's memory (of its library, or a DeviceArray for a library hetblas cannot allocate
    in), else of the first operand's library in host memory (NumPy for unknown ones)."""
    where = [(x, locate(x)) for x in operands if x is not None]
    on_device = [(x, w) for x, w in where if w["device"] is not None]
    like, info = on_device[0] if on_device else where[0]
    order = "F" if all(fortran_order(x) for x, _ in where) else "C"
    k = kind(like)
    if info["device"] is None and k is _GENERIC:
        k = _KINDS["numpy"]
    return k.empty(like, shape, dtype, info["device"], order, zero)
