"""``python -m hetblas``: run a program with the drop-in BLAS, check an installation.

    python -m hetblas run script.py [args...]     the program with libhetblas.so preloaded
    python -m hetblas run -m module [args...]     (anything python itself takes after it)
    hetblas-run script.py [args...]                the same, as a console script
    python -m hetblas doctor                       devices, host BLAS, profile, and whether
                                                   the preload takes effect
    python -m hetblas devices                      the devices and backends
    python -m hetblas calibrate [--quick]          measure the node, save the profile
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from typing import List, Optional

USAGE = __doc__


def _library() -> str:
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.join(here, "libhetblas.so")


def preload_env(env: Optional[dict] = None) -> dict:
    """``env`` (default: this process's) with the bundled libhetblas.so first in LD_PRELOAD."""
    env = dict(os.environ if env is None else env)
    lib = _library()
    rest = [p for p in env.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p and p != lib]
    env["LD_PRELOAD"] = ":".join([lib] + rest)
    return env


def run(args: List[str]) -> int:
    """Replaces this process by ``python ARGS...`` with the drop-in library preloaded."""
    if not args:
        print("usage: python -m hetblas run script.py [args...] | -m module [args...] | "
              "-c code [args...]", file=sys.stderr)
        return 2
    lib = _library()
    if not os.path.isfile(lib):
        print(f"hetblas: the drop-in library is missing ({lib}): this installation was built "
              "without it (python/build.sh builds it)", file=sys.stderr)
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, [sys.executable] + args, preload_env())
    return 0  # not reached


def run_main() -> None:
    """The ``hetblas-run`` console script."""
    sys.exit(run(sys.argv[1:]))


# -- doctor ------------------------------------------------------------------------------------

class _DlInfo(ctypes.Structure):
    _fields_ = [("dli_fname", ctypes.c_char_p), ("dli_fbase", ctypes.c_void_p),
                ("dli_sname", ctypes.c_char_p), ("dli_saddr", ctypes.c_void_p)]


# The CBLAS GEMM names NumPy wheels call, newest first (scipy-openblas renamed ILP64 and LP64,
# OpenBLAS's ILP64 suffix, the reference name).
_GEMM_NAMES = ("scipy_cblas_dgemm64_", "scipy_cblas_dgemm", "cblas_dgemm64_", "cblas_dgemm")


def symbol_owner(name: str) -> Optional[str]:
    """The file of the library that the process's global scope resolves ``name`` to (what a
    library loaded later binds to when it calls ``name``), or ``None``."""
    try:
        glob = ctypes.CDLL(None)
        addr = ctypes.cast(getattr(glob, name), ctypes.c_void_p).value
    except (AttributeError, OSError):
        return None
    info = _DlInfo()
    libc = ctypes.CDLL(None)
    if not libc.dladdr(ctypes.c_void_p(addr), ctypes.byref(info)) or not info.dli_fname:
        return None
    return os.path.realpath(info.dli_fname.decode())


def mapped_libraries() -> List[str]:
    """The shared libraries mapped into this process."""
    try:
        with open("/proc/self/maps") as f:
            paths = {line.split()[-1] for line in f if ".so" in line}
    except OSError:
        return []
    return sorted(p for p in paths if p.startswith("/"))


def _blas_libraries() -> List[str]:
    keys = ("blas", "openblas", "mkl", "blis", "accelerate", "flexiblas", "hetblas")
    return [p for p in mapped_libraries() if any(k in os.path.basename(p).lower() for k in keys)]


def _numpy_blas() -> str:
    try:
        import numpy as np

        cfg = np.show_config(mode="dicts")
        blas = cfg.get("Build Dependencies", {}).get("blas", {})
        return f"NumPy {np.__version__}: {blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception as e:  # older NumPy: no dict mode
        try:
            import numpy as np

            return f"NumPy {np.__version__} (BLAS not reported: {e})"
        except ImportError:
            return "NumPy not importable"


_CHILD_CHECK = (
    "import numpy as np\n"
    "a = np.ones((256, 256)); b = np.ones((256, 256))\n"
    "assert (a @ b)[0, 0] == 256\n"
)


def preload_here() -> dict:
    """Whether this process runs with the drop-in library preloaded and NumPy's BLAS calls
    resolve to it."""
    lib = os.path.realpath(_library())
    import numpy  # noqa: F401  (its BLAS library is loaded with it)

    owners = {n: symbol_owner(n) for n in _GEMM_NAMES}
    return {
        "requested": lib in [os.path.realpath(p) for p in
                             os.environ.get("LD_PRELOAD", "").replace(" ", ":").split(":") if p],
        "mapped": lib in mapped_libraries(),
        "resolves": {n: o for n, o in owners.items() if o is not None},
        "library": lib,
    }


def child_check(timeout: float = 120.0) -> str:
    """Runs a small NumPy product under ``python -m hetblas run`` with the drop-in's exit
    summary on, and returns the summary line (what the library saw)."""
    env = preload_env()
    env["HETBLAS_SUMMARY"] = "1"
    p = subprocess.run([sys.executable, "-c", _CHILD_CHECK], env=env, capture_output=True,
                       text=True, timeout=timeout)
    lines = [l for l in p.stderr.splitlines() if "hetblas summary" in l]
    if p.returncode != 0:
        return f"the check failed (exit {p.returncode}): {p.stderr.strip()[-300:]}"
    if not lines:
        return "no summary line: NumPy's BLAS calls did not reach libhetblas.so"
    return lines[-1]


def doctor(child: bool = True) -> int:
    import hetblas

    print(f"hetblas {hetblas.__version__} ({os.path.dirname(os.path.abspath(hetblas.__file__))})")
    lib = _library()
    if os.path.isfile(lib):
        print(f"drop-in library: {lib} ({os.path.getsize(lib) / 2**20:.1f} MiB)")
    else:
        print(f"drop-in library: MISSING ({lib})")
    print("devices:")
    for d in hetblas.devices():
        print(f"  {d}")
    print("backends:")
    for b in hetblas.backends():
        print(f"  {b}")
    print(f"profile: {hetblas.profile_status()}")
    print(f"host BLAS: {_numpy_blas()}")
    for p in _blas_libraries():
        print(f"  loaded: {p}")
    here = preload_here()
    if here["mapped"]:
        how = ", ".join(f"{n} -> {os.path.basename(o)}" for n, o in here["resolves"].items())
        took = any(o == here["library"] for o in here["resolves"].values())
        print(f"preload in this process: {'yes' if took else 'mapped, but NumPy does not bind to it'}"
              f" ({how or 'no CBLAS GEMM name resolves'})")
    else:
        print("preload in this process: no (run programs with `python -m hetblas run "
              "script.py` or `hetblas-run script.py`)")
    if child and os.path.isfile(lib):
        print(f"preload check (a NumPy product under `python -m hetblas run`): {child_check()}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(USAGE)
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "run":
        return run(rest)
    if cmd == "doctor":
        return doctor(child="--no-child" not in rest)
    if cmd == "devices":
        import hetblas

        for d in hetblas.devices():
            print(d)
        for b in hetblas.backends():
            print(b)
        print(f"profile: {hetblas.profile_status()}")
        return 0
    if cmd == "calibrate":
        import hetblas

        print(hetblas.calibrate(quick="--quick" in rest))
        return 0
    print(f"unknown command {cmd!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
