"""cuSOLVER's POTRF/GETRF on random data already in GPU memory (the ceiling of
`scripts/gpu/compare.sh --routine potrf|getrf`), through CuPy: CUDA events, a warm-up, the median
of REPS, residuals on three columns.

    python3 cusolver_ceiling.py REPS ROUTINE:DTYPE:N ...
"""
import sys, cupy as cp, numpy as np
import cupyx.scipy.linalg as cl
reps = int(sys.argv[1])
for case in sys.argv[2:]:
    routine, dtype, n = case.split(":")
    n = int(n)
    dt = {"f64": cp.float64, "f32": cp.float32, "c64": cp.complex128, "c32": cp.complex64}[dtype]
    rng = cp.random.default_rng(7)
    a = rng.uniform(-1, 1, (n, n), dtype=cp.float64)
    if dt in (cp.complex128, cp.complex64):
        a = a + 1j * rng.uniform(-1, 1, (n, n), dtype=cp.float64)
    a = a.astype(dt)
    if routine == "potrf":
        a = (a + a.conj().T) / 2
        a += (n + 1) * cp.eye(n, dtype=dt)
    a = cp.asfortranarray(a)
    cp.cuda.Device().synchronize()
    times = []
    for r in range(reps + 1):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        if routine == "potrf":
            f = cp.linalg.cholesky(a)
        else:
            lu, piv = cl.lu_factor(a, overwrite_a=False, check_finite=False)
        e.record(); e.synchronize()
        if r:
            times.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
    # Residuals on a few columns.
    cols = [0, n // 3, n - 1]
    if routine == "potrf":
        res = max(float(cp.abs(f @ f[j].conj() - a[:, j]).sum() / cp.abs(a[:, j]).sum()) for j in cols)
        flops = n ** 3 / 3
    else:
        l = cp.tril(lu, -1) + cp.eye(n, dtype=dt)
        u = cp.triu(lu)
        p = cp.asnumpy(piv)
        pn = np.arange(n)
        for i in range(n):
            pn[i], pn[p[i]] = pn[p[i]], pn[i]
        pa = a[cp.asarray(pn)]
        res = max(float(cp.abs(l @ u[:, j] - pa[:, j]).sum() / cp.abs(a[:, j]).sum()) for j in cols)
        flops = 2 * n ** 3 / 3
    if dt in (cp.complex128, cp.complex64):
        flops *= 4
    t = sorted(times)[len(times) // 2]
    print(f"ceiling {routine} {dtype} n={n}: cuSOLVER (A on the GPU) median {t:.4f} s, "
          f"{flops / t / 1e12:.2f} TFLOP/s, residual {res:.2e}")
    del a
    cp.get_default_memory_pool().free_all_blocks()
