"""NumPy and SciPy calls that reach BLAS and LAPACK, their results saved for comparison.

`python numpy_scipy.py OUT.npz` computes (seeded) products of every dtype, shape class and
transpose through `@` (NumPy's `scipy_cblas_?gemm64_`, `?syrk`, `?gemv`), `scipy.linalg.blas`
(`scipy_?gemm_`, `?syrk`, `?symm`, `?trsm`), and the factorizations and solves of
`numpy.linalg` and `scipy.linalg`; `python numpy_scipy.py --compare A.npz B.npz` checks that
two runs (with and without the preload) agree within each dtype's bound.
"""

import sys

import numpy as np

TOL = {np.float32: 2e-4, np.complex64: 2e-4, np.float64: 1e-10, np.complex128: 1e-10}
DTYPES = (np.float32, np.float64, np.complex64, np.complex128)
SHAPES = ((1, 1, 1), (7, 5, 3), (64, 64, 64), (300, 200, 100), (257, 513, 129))


def random(rng, shape, dt):
    x = rng.standard_normal(shape)
    if np.issubdtype(dt, np.complexfloating):
        x = x + 1j * rng.standard_normal(shape)
    return x.astype(dt)


def compute(path):
    import scipy.linalg as sl
    import scipy.linalg.blas as sb

    rng = np.random.default_rng(7)
    out = {}
    for dt in DTYPES:
        name = np.dtype(dt).name
        for m, n, k in SHAPES:
            a, b = random(rng, (m, k), dt), random(rng, (k, n), dt)
            out[f"matmul {name} {m}x{n}x{k}"] = a @ b
            out[f"matmul AT {name} {m}x{n}x{k}"] = np.ascontiguousarray(a.T).T @ b
            out[f"matmul BT {name} {m}x{n}x{k}"] = a @ np.asfortranarray(b)
            out[f"a aT {name} {m}x{k}"] = a @ a.T  # NumPy's syrk
            out[f"matvec {name} {m}x{k}"] = a @ b[:, 0]
            out[f"strided {name} {m}x{n}x{k}"] = a[::2] @ b
        s = random(rng, (200, 200), dt)
        spd = s @ s.conj().T + 200 * np.eye(200, dtype=dt)
        rhs = random(rng, (200, 3), dt)
        out[f"np solve {name}"] = np.linalg.solve(s, rhs)
        out[f"np inv {name}"] = np.linalg.inv(s)
        out[f"np cholesky {name}"] = np.linalg.cholesky(spd)
        out[f"np slogdet {name}"] = np.array(np.linalg.slogdet(s))
        out[f"np lstsq {name}"] = np.linalg.lstsq(s[:, :150], rhs, rcond=None)[0]
        out[f"np svdvals {name}"] = np.linalg.svd(s, compute_uv=False)
        out[f"np eigvalsh {name}"] = np.linalg.eigvalsh(spd)
        out[f"sl solve {name}"] = sl.solve(s, rhs)
        out[f"sl solve pos {name}"] = sl.solve(spd, rhs, assume_a="pos")
        lu, piv = sl.lu_factor(s)
        out[f"sl lu_solve {name}"] = sl.lu_solve((lu, piv), rhs)
        c = sl.cho_factor(spd)
        out[f"sl cho_solve {name}"] = sl.cho_solve(c, rhs)
        out[f"sl cholesky {name}"] = sl.cholesky(spd)
        out[f"sl solve_triangular {name}"] = sl.solve_triangular(np.triu(spd), rhs)
        p = sb.find_best_blas_type(dtype=dt)[0]
        gemm = getattr(sb, p + "gemm")
        x, y, z = random(rng, (150, 90), dt), random(rng, (150, 70), dt), random(rng, (90, 70), dt)
        out[f"blas gemm {name}"] = gemm(1.5, x, y, beta=0.5, c=z, trans_a=1)
        out[f"blas syrk {name}"] = getattr(sb, p + "syrk")(1.0, x)
        out[f"blas symm {name}"] = getattr(sb, p + "symm")(1.0, spd[:150, :150], y)
        out[f"blas trsm {name}"] = getattr(sb, p + "trsm")(1.0, np.triu(spd[:150, :150]), y)
    np.savez(path, **out)
    print(f"{len(out)} results in {path}")


def compare(a_path, b_path):
    a, b = np.load(a_path), np.load(b_path)
    if sorted(a.files) != sorted(b.files):
        sys.exit("the two runs computed different sets of results")
    bad = []
    for key in a.files:
        x, y = a[key], b[key]
        tol = TOL[x.dtype.type] * max(1, x.shape[-1] if x.ndim else 1) ** 0.5
        scale = np.linalg.norm(x) + np.finfo(np.float32).tiny
        err = np.linalg.norm(x - y) / scale
        if x.shape != y.shape or not err <= tol:
            bad.append(f"{key}: relative difference {err:.2e} (bound {tol:.1e})")
    for line in bad:
        print("  " + line)
    if bad:
        sys.exit(f"{len(bad)} of {len(a.files)} results differ")
    print(f"all {len(a.files)} results agree")


if __name__ == "__main__":
    if sys.argv[1] == "--compare":
        compare(sys.argv[2], sys.argv[3])
    else:
        compute(sys.argv[1])
