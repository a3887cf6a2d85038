"""Every BLAS name the installed NumPy and SciPy wheels import is exported by libhetblas.so.

pip's NumPy and SciPy bundle OpenBLAS under renamed symbols (scipy-openblas: `scipy_dgemm_`,
`scipy_cblas_dgemm64_`, ...), which a preloaded libhetblas.so must export to take the calls.
This reads the names the wheels' extension modules import (their dynamic symbol tables, with
`nm -D`), keeps those that are BLAS routines under any prefix or suffix (the routine names come
from Debian's reference BLAS, not from hetblas), adds the LAPACK routines hetblas routes, and
fails if libhetblas.so lacks one, or if no BLAS name was found at all (a layout change that
would leave the check empty).

usage: python wheel_names.py LIBHETBLAS [REFERENCE_BLAS]
"""

import importlib.util
import pathlib
import subprocess
import sys

# The LAPACK routines libhetblas.so exports (crates/capi/src/lapack.rs), in every precision.
ROUTED_LAPACK = {p + r for p in "sdcz" for r in ("potrf", "getrf", "potrs", "getrs", "posv", "gesv")}
# Error handling and character comparison: not routines a preload must take.
AUXILIARY = {"lsame", "xerbla", "xerbla_array", "cblas_xerbla"}
SUFFIXES = ("_64_", "64_", "_64", "_", "")


def symbols(path, which):
    out = subprocess.run(["nm", "-D", which, str(path)], capture_output=True, text=True, check=True)
    return {line.split()[-1] for line in out.stdout.splitlines() if line.strip()}


def routine_of(name, bases):
    """The base routine `name` is a form of (`scipy_cblas_dgemm64_` -> `cblas_dgemm`), or None."""
    for suffix in SUFFIXES:
        if suffix and not name.endswith(suffix):
            continue
        core = name[: len(name) - len(suffix)] if suffix else name
        for base in bases:
            if core == base or core.endswith("_" + base):
                return base
    return None


def main():
    lib = pathlib.Path(sys.argv[1])
    reference = pathlib.Path(
        sys.argv[2] if len(sys.argv) > 2 else "/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"
    )
    exported = symbols(lib, "--defined-only")
    bases = {
        n[:-1] if n.endswith("_") else n
        for n in symbols(reference, "--defined-only")
        if n[0].islower() and n.rstrip("_") not in AUXILIARY
    } | ROUTED_LAPACK
    if "dgemm" not in bases or "cblas_dgemm" not in bases:
        sys.exit(f"{reference} does not look like a reference BLAS with CBLAS")
    imported = {}
    for package in ("numpy", "scipy"):
        spec = importlib.util.find_spec(package)
        root = pathlib.Path(spec.origin).parent
        print(f"{package} from {root}")
        for ext in sorted(root.rglob("*.so")):
            for name in symbols(ext, "--undefined-only"):
                if routine_of(name, bases):
                    imported.setdefault(name, ext.relative_to(root.parent))
    if not any(routine_of(n, {"dgemm"}) for n in imported):
        sys.exit("no form of dgemm among the names the wheels import: the check found nothing")
    missing = sorted(n for n in imported if n not in exported)
    prefixes = sorted({n.split("_")[0] + "_" for n in imported if n.count("_") > 1})
    print(
        f"{len(imported)} BLAS and routed LAPACK names imported (prefixes: {', '.join(prefixes)}); "
        f"libhetblas.so exports {len(exported)} names"
    )
    if missing:
        for n in missing:
            print(f"  missing: {n} (imported by {imported[n]})")
        sys.exit(f"{len(missing)} names the wheels import are not exported by {lib}")
    print("every one is exported")


if __name__ == "__main__":
    main()
