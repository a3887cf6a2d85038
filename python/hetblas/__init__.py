"""hetblas: one BLAS call on every GPU and the CPU of the node, from Python.

Explicit calls on NumPy arrays and on arrays that speak DLPack (CuPy arrays, PyTorch tensors,
on the host or a GPU), in any mix, computed where the operands live::

    import hetblas, numpy as np
    c = hetblas.matmul(a, b)                 # NumPy in, NumPy out, every useful device
    t = hetblas.matmul(x_cuda, y_cuda)        # torch CUDA tensors: computed on the GPU
    print(hetblas.last_report())              # where it ran, what crossed which link

Questions: :func:`devices`, :func:`backends`, :func:`profile_status`, :func:`predict`,
:func:`calibrate` (with a progress bar), ``with hetblas.trace("run.json"):``.

Whole programs: ``python -m hetblas run script.py`` (or ``hetblas-run script.py``) runs a
program with the bundled drop-in BLAS preloaded, so pip NumPy and SciPy inside it reach the
devices; ``python -m hetblas doctor`` says what was found and whether the preload took.

Settings (which backends, emulated devices, the profile) are the Runtime's own environment
variables (``HETBLAS_BACKENDS``, ``HETBLAS_EMULATED``, ``HETBLAS_PROFILE``, ...), or
:func:`init` before the first call.
"""

from __future__ import annotations

import os
from typing import List, Optional, Sequence, Union

from . import _native
from ._api import (cholesky, hemm, her2k, herk, lu_factor, matmul, solve, symm, syr2k, syrk,
                   trmm, trsm)
from ._native import DeviceArray, DeviceError, HetblasError
from ._progress import ProgressBar
from ._reports import (Backend, CalibrationReport, CallReport, Device, GemmRate, LinkRate,
                       Prediction)
from ._trace import last_report, trace

__version__ = _native.__version__

__all__ = [
    "matmul", "syrk", "herk", "syr2k", "her2k", "symm", "hemm", "trsm", "trmm",
    "cholesky", "lu_factor", "solve",
    "devices", "backends", "profile_status", "predict", "calibrate", "init",
    "to_device", "empty", "DeviceArray", "trace", "last_report", "dropin_library",
    "failed_devices", "reprobe",
    "Device", "Backend", "CallReport", "Prediction", "CalibrationReport", "LinkRate",
    "GemmRate", "HetblasError", "DeviceError",
]


def init(*, emulated: Optional[int] = None, backends: Optional[Sequence[str]] = None,
         cpu: bool = True, profile: bool = True) -> None:
    """Starts the runtime with explicit choices, before any other call (which would start it
    with the defaults): ``emulated`` host-emulated devices (for tests), only the ``backends``
    named (``"cuda"``, ``"hip"``, ``"cpu"``), without the CPU device, without loading the
    calibrated profile. Raises :class:`HetblasError` once the runtime has started."""
    _native.init(emulated=emulated, backends=list(backends) if backends is not None else None,
                 cpu=cpu, profile=profile)


def devices() -> List[Device]:
    """The devices hetblas found, in the order of the indices ``devices=[...]`` takes."""
    return [Device(**d) for d in _native.devices()]


def backends() -> List[Backend]:
    """Each backend's devices, or why it has none (library not found, no device, ...)."""
    return [Backend(**b) for b in _native.backends()]


def profile_status() -> str:
    """Whether a calibrated profile is in use, and from where (or why not)."""
    return _native.profile_status()


Location = Union[None, int, str]


def predict(m: int, n: int, k: int, dtype: str = "float64", *,
            where: Sequence[Location] = (None, None, None),
            beta_zero: bool = True) -> Optional[Prediction]:
    """What the calibrated model predicts for ``C (m x n) = A (m x k) @ B (k x n)``: the
    devices it would use and the seconds. ``where`` places A, B and C: ``None`` for host
    memory, a device index or label. ``None`` without a calibrated profile (see
    :func:`calibrate`)."""
    from ._api import _device_indices

    locs = [None if w is None else _device_indices(w)[0] for w in where]
    if len(locs) != 3:
        raise ValueError("where: three locations (A, B, C)")
    p = _native.predict(int(m), int(n), int(k), str(dtype), locs, beta_zero)
    if p is None:
        return None
    flops = 2.0 * m * n * k * (4 if str(dtype).startswith("complex") else 1)
    return Prediction(devices=list(p["devices"]), seconds=p["seconds"], flops=flops)


def calibrate(quick: bool = False, *, progress=True, save: bool = True,
              path: Optional[str] = None) -> CalibrationReport:
    """Measures the node (every link, every device's GEMM), puts the profile in use and saves
    it where later runs load it (``path``, default: the runtime's profile location) unless
    ``save`` is false. About a minute per GPU (``quick``: seconds). ``progress``: ``True`` for
    a bar (terminal or notebook), ``False`` for none, or a callable
    ``(done, total, stage, eta_seconds)``. Run it while nothing else uses hetblas."""
    bar = ProgressBar() if progress is True else None
    cb = bar if bar is not None else (progress if callable(progress) else None)
    try:
        r = _native.calibrate(quick=quick, progress=cb, path=path, save=save)
    finally:
        if bar is not None:
            bar.close()
    return CalibrationReport(
        path=r["path"], seconds=r["seconds"], created=r["created"],
        links=[LinkRate(**l) for l in r["links"]], gemm=[GemmRate(**g) for g in r["gemm"]])


def to_device(array, device: Union[int, str] = 0) -> DeviceArray:
    """Copies a host array (NumPy, or any DLPack array in host memory) to a new DeviceArray on
    ``device`` (index or label), kept there for later calls."""
    from ._api import _device_indices

    return _native.to_device(array, _device_indices(device)[0])


def empty(shape, dtype: str = "float64", device: Union[int, str] = 0,
          order: str = "C") -> DeviceArray:
    """An uninitialised DeviceArray of ``shape`` on ``device``."""
    from ._api import _device_indices
    import numpy as np

    rows, cols = shape
    return _native.empty(rows, cols, np.dtype(dtype).name, _device_indices(device)[0], order)


def failed_devices() -> List[int]:
    """Devices that failed during a call; calls leave them out until :func:`reprobe`."""
    return _native.failed_devices()


def reprobe() -> List[int]:
    """Probes the failed devices again; returns those still failed."""
    return _native.reprobe()


def dropin_library() -> str:
    """The path of the bundled drop-in BLAS (``libhetblas.so``) that ``python -m hetblas
    run`` preloads."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "libhetblas.so")
