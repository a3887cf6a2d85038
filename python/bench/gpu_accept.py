"""The Python package's acceptance measurements on a GPU machine (issue 55), run by
scripts/gpu/python.sh. Each step prints one human line per result and appends a JSON record
to --json.

    python gpu_accept.py numpy  --size N --reps R [--trace FILE]
    python gpu_accept.py torch  --size N --reps R [--trace FILE]
    python gpu_accept.py cupy   --size N --reps R [--trace FILE]
    python gpu_accept.py mixed  --size N [--trace FILE]
    python gpu_accept.py plain  --size N --reps R      (a @ b with pip NumPy: run it under
                                                        `python -m hetblas run` and without)
    python gpu_accept.py factor --size N --reps R      (cholesky, lu_factor, solve on NumPy,
                                                        PyTorch CUDA and CuPy arrays against
                                                        their libraries' own, checked)

Times are medians of R calls after one warm-up, on random data (Hopper's power, and so its
clock, depends on the data); device timings synchronise the device before stopping the clock.
"""

import argparse
import json
import statistics
import sys
import time


def median_time(fn, reps, sync=lambda: None):
    fn()
    sync()
    ts = []
    for _ in range(reps):
        sync()
        t = time.perf_counter()
        fn()
        sync()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts), ts


def emit(args, rec):
    rec["size"] = args.size
    line = rec.pop("line")
    print(line, flush=True)
    if args.json:
        with open(args.json, "a") as f:
            f.write(json.dumps(rec) + "\n")


def tflops(n, t):
    return 2.0 * n ** 3 / t / 1e12


def step_numpy(args):
    import numpy as np
    import hetblas

    n = args.size
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = np.empty((n, n))
    t_out, _ = median_time(lambda: hetblas.matmul(a, b, out=c), args.reps)
    r = hetblas.last_report()
    t_new, _ = median_time(lambda: hetblas.matmul(a, b), args.reps)
    i = rng.integers(0, n, 64)
    j = rng.integers(0, n, 64)
    ref = np.einsum("ik,ki->i", a[i, :], b[:, j])
    err = float(np.max(np.abs(c[i, j] - ref) / (np.abs(a[i, :]) @ np.abs(b[:, j])).diagonal()))
    if args.trace:
        with hetblas.trace(args.trace):
            hetblas.matmul(a, b, out=c)
    emit(args, {"step": "numpy", "seconds_out": t_out, "tflops_out": tflops(n, t_out),
                "seconds_new": t_new, "tflops_new": tflops(n, t_new), "devices": r.devices,
                "host_bytes": r.host_bytes, "max_rel_err": err,
                "line": f"numpy f64 n={n}: hetblas.matmul(a, b, out=c) {tflops(n, t_out):.2f} "
                        f"TFLOP/s, fresh output {tflops(n, t_new):.2f} TFLOP/s on {r.devices}; "
                        f"sampled rel err {err:.1e}"})


def device_step(args, lib):
    import hetblas

    n = args.size
    if lib == "torch":
        import torch

        torch.manual_seed(1)
        a = torch.randn(n, n, dtype=torch.float64, device="cuda")
        b = torch.randn(n, n, dtype=torch.float64, device="cuda")
        c, ref = torch.empty_like(a), torch.empty_like(a)
        sync = torch.cuda.synchronize
        theirs = lambda: torch.matmul(a, b, out=ref)  # noqa: E731
        diff = lambda: float(((c - ref).abs().max() / ref.abs().max()).item())  # noqa: E731
    else:
        import cupy

        rs = cupy.random.RandomState(1)
        a, b = rs.standard_normal((n, n)), rs.standard_normal((n, n))
        c, ref = cupy.empty_like(a), cupy.empty_like(a)
        sync = cupy.cuda.Device().synchronize
        theirs = lambda: cupy.matmul(a, b, out=ref)  # noqa: E731
        diff = lambda: float((abs(c - ref).max() / abs(ref).max()).get())  # noqa: E731
    # Alternate the two so that clocks and temperature treat them alike.
    t_theirs, t_ours = [], []
    for _ in range(args.rounds):
        t_theirs.append(median_time(theirs, args.reps, sync)[0])
        t_ours.append(median_time(lambda: hetblas.matmul(a, b, out=c), args.reps, sync)[0])
    r = hetblas.last_report()
    t_new, _ = median_time(lambda: hetblas.matmul(a, b), args.reps, sync)
    r_new = hetblas.last_report()
    fresh = hetblas.matmul(a, b)
    kind = type(fresh).__module__.split(".")[0]
    if args.trace:
        with hetblas.trace(args.trace):
            hetblas.matmul(a, b, out=c)
    sync()
    tt, to = min(t_theirs), min(t_ours)
    emit(args, {"step": lib, "seconds_theirs": tt, "seconds_ours": to, "seconds_new": t_new,
                "ratio": to / tt, "devices": r.devices, "host_bytes": r.host_bytes,
                "host_bytes_new": r_new.host_bytes, "result_type": kind,
                "max_rel_diff": diff(),
                "line": f"{lib} f64 n={n}: {lib}.matmul {tflops(n, tt):.2f} TFLOP/s, "
                        f"hetblas.matmul(out=) {tflops(n, to):.2f} TFLOP/s "
                        f"(time ratio {to / tt:.3f}; within 5%: {to / tt <= 1.05}), fresh output "
                        f"{tflops(n, t_new):.2f} TFLOP/s as {kind}; devices {r.devices}; bytes "
                        f"via the host: {r.host_bytes} (fresh: {r_new.host_bytes}); "
                        f"max rel diff {diff():.1e}"})


def step_mixed(args):
    import numpy as np
    import torch
    import hetblas

    n = args.size
    rng = np.random.default_rng(2)
    a = rng.standard_normal((n, n))
    torch.manual_seed(2)
    b = torch.randn(n, n, dtype=torch.float64, device="cuda")
    hetblas.matmul(a, b)  # warm-up
    torch.cuda.synchronize()
    t = time.perf_counter()
    c = hetblas.matmul(a, b)
    torch.cuda.synchronize()
    dt = time.perf_counter() - t
    r = hetblas.last_report()
    ref = torch.matmul(torch.from_numpy(a).cuda(), b)
    err = float(((c - ref).abs().max() / ref.abs().max()).item())
    if args.trace:
        with hetblas.trace(args.trace):
            hetblas.matmul(a, b)
    emit(args, {"step": "mixed", "seconds": dt, "result_type": type(c).__module__,
                "result_device": str(c.device), "host_bytes": r.host_bytes,
                "to_host_bytes": r.to_host_bytes, "a_bytes": a.nbytes, "devices": r.devices,
                "max_rel_diff": err,
                "line": f"numpy a (host) @ torch b (cuda) n={n}: {tflops(n, dt):.2f} TFLOP/s, "
                        f"result {type(c).__name__} on {c.device}; to the device "
                        f"{(r.host_bytes - r.to_host_bytes) / 1e9:.2f} GB (A is "
                        f"{a.nbytes / 1e9:.2f} GB), back to the host {r.to_host_bytes} bytes "
                        f"(B stays on the GPU: 0 expected); devices {r.devices}; max rel diff "
                        f"{err:.1e}"})


def step_plain(args):
    import numpy as np

    n = args.size
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((n, n))
    c = np.empty((n, n))
    t_out, _ = median_time(lambda: np.matmul(a, b, out=c), args.reps)
    t_new, _ = median_time(lambda: a @ b, args.reps)
    emit(args, {"step": "plain", "label": args.label, "seconds_out": t_out,
                "seconds_new": t_new,
                "line": f"pip NumPy {np.__version__} a @ b n={n} ({args.label}): "
                        f"{tflops(n, t_new):.2f} TFLOP/s, out= {tflops(n, t_out):.2f} TFLOP/s"})


def step_factor(args):
    """hetblas.cholesky / lu_factor / solve on each array library the machine has, against
    that library's own factorization (torch.linalg, CuPy's cuSOLVER, NumPy's LAPACK), each
    result checked by its residual."""
    import numpy as np
    import hetblas

    n = args.size
    rng = np.random.default_rng(2)
    g = rng.standard_normal((n, n))
    spd = g @ g.T / n + n * np.eye(n)
    rhs = rng.standard_normal((n, 4))
    libs = [("numpy", lambda x: x, lambda x: x, lambda: None)]
    try:
        import torch

        libs.append(("torch", lambda x: torch.from_numpy(x).cuda(), lambda x: x.cpu().numpy(),
                     torch.cuda.synchronize))
    except ImportError:
        pass
    try:
        import cupy

        libs.append(("cupy", cupy.asarray, cupy.asnumpy, cupy.cuda.Device().synchronize))
    except ImportError:
        pass
    # Device copies first: once hetblas has page-locked a NumPy array's memory (its
    # registration cache), PyTorch's copy of that same memory to the GPU failed with
    # cudaErrorAlreadyMapped (nvidia-h200, 2026-11-29); probed at the end.
    ops = []
    for name, put, get, sync in libs:
        ops.append((name, get, sync, put(g), put(spd), put(rhs)))
        sync()
    ops = ops[1:] + ops[:1]
    for name, get, sync, a, s_, b in ops:
        ours = {
            "cholesky": lambda: hetblas.cholesky(s_, lower=True),
            "lu_factor": lambda: hetblas.lu_factor(a),
            "solve": lambda: hetblas.solve(a, b),
        }
        if name == "torch":
            import torch

            theirs = {"cholesky": lambda: torch.linalg.cholesky(s_),
                      "lu_factor": lambda: torch.linalg.lu_factor(a),
                      "solve": lambda: torch.linalg.solve(a, b)}
        elif name == "cupy":
            import cupy
            import cupyx.scipy.linalg as cl

            theirs = {"cholesky": lambda: cupy.linalg.cholesky(s_),
                      "lu_factor": lambda: cl.lu_factor(a),
                      "solve": lambda: cupy.linalg.solve(a, b)}
        else:
            theirs = {"cholesky": lambda: np.linalg.cholesky(s_),
                      "lu_factor": None, "solve": lambda: np.linalg.solve(a, b)}
        for routine, fn in ours.items():
            t_ours, _ = median_time(fn, args.reps, sync)
            r = hetblas.last_report()
            out = fn()
            sync()
            if routine == "cholesky":
                L = get(out)
                resid = np.abs(L @ L.T - spd).max() / np.abs(spd).max()
            elif routine == "lu_factor":
                lu, piv = get(out[0]), np.asarray(out[1])
                perm = np.arange(n)
                for i, p in enumerate(piv):
                    perm[i], perm[p] = perm[p], perm[i]
                L, U = np.tril(lu, -1) + np.eye(n), np.triu(lu)
                # Sampled columns of P A - L U (the whole product is a second factorization).
                cols = rng.integers(0, n, 16)
                resid = np.abs(L @ U[:, cols] - g[perm][:, cols]).max() / np.abs(g).max()
            else:
                x = get(out)
                resid = np.abs(g @ x - rhs).max() / (np.abs(g).max() * np.abs(x).max() * n)
            t_theirs = None
            if theirs[routine] is not None:
                t_theirs, _ = median_time(theirs[routine], args.reps, sync)
            kind = type(out[0] if routine == "lu_factor" else out).__module__.split(".")[0]
            emit(args, {"step": "factor", "lib": name, "routine": routine,
                        "seconds_ours": t_ours, "seconds_theirs": t_theirs,
                        "devices": r.devices, "residual": float(resid), "result_type": kind,
                        "line": f"{name} {routine} n={n}: hetblas {t_ours:.4f} s on {r.devices}"
                                + (f", {name}'s own {t_theirs:.4f} s (time ratio "
                                   f"{t_ours / t_theirs:.2f})" if t_theirs else "")
                                + f"; result {kind}; residual {resid:.1e} "
                                  f"({'ok' if resid < 1e-10 else 'FAILED'})"})
            if not resid < 1e-10:
                raise SystemExit(f"{name} {routine}: residual {resid:.1e}")
    if len(libs) > 1 and libs[1][0] == "torch":
        try:
            libs[1][1](g)
            libs[1][3]()
            probe = "ok"
        except Exception as e:  # noqa: BLE001 (the probe reports whatever the library raised)
            probe = f"{type(e).__name__}: {str(e).splitlines()[0]}"
        emit(args, {"step": "factor", "probe": probe,
                    "line": f"torch copy of a NumPy array hetblas factored: {probe}"})


def main():
    p = argparse.ArgumentParser()
    p.add_argument("step", choices=["numpy", "torch", "cupy", "mixed", "plain", "factor"])
    p.add_argument("--size", type=int, default=16384)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--trace")
    p.add_argument("--json")
    p.add_argument("--label", default="")
    args = p.parse_args()
    if args.step == "numpy":
        step_numpy(args)
    elif args.step in ("torch", "cupy"):
        device_step(args, args.step)
    elif args.step == "mixed":
        step_mixed(args)
    elif args.step == "factor":
        step_factor(args)
    else:
        step_plain(args)


if __name__ == "__main__":
    sys.exit(main())
