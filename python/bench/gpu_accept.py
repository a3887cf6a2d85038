"""The Python package's acceptance measurements on a GPU machine (issue 55), run by
scripts/gpu/python.sh. Each step prints one human line per result and appends a JSON record
to --json.

    python gpu_accept.py numpy  --size N --reps R [--trace FILE]
    python gpu_accept.py torch  --size N --reps R [--trace FILE]
    python gpu_accept.py cupy   --size N --reps R [--trace FILE]
    python gpu_accept.py mixed  --size N [--trace FILE]
    python gpu_accept.py plain  --size N --reps R      (a @ b with pip NumPy: run it under
                                                        `python -m hetblas run` and without)

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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("step", choices=["numpy", "torch", "cupy", "mixed", "plain"])
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
    else:
        step_plain(args)


if __name__ == "__main__":
    sys.exit(main())
