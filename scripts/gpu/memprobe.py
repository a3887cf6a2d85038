#!/usr/bin/env python3
"""Host fold rate buffer by buffer: is the spread of host folds between processes the memory a
process happens to get?

A host fold is `C += P` over host memory (three passes: read P and C, write C). Fold-bound
calls varied by 15-22% between processes on one machine while the link held its rate. This
folds each of several freshly allocated (C, P) pairs with the same threads, several times
each, pageable and pinned, and prints GB/s of C per pair: pairs that differ from each other
point at the memory behind them, pairs that agree at the threads or the machine.

    python3 scripts/gpu/memprobe.py [--mib 256] [--pairs 6] [--reps 5] [--threads 12]

Random data; every fold is checked on sampled entries. Needs torch (pinned pairs need CUDA).
"""
import argparse
import statistics
import time

import torch


def fold_rate(c, p, reps):
    """Median GB/s of C over `reps` folds after a warm-up; checks one fold's result."""
    idx = torch.randint(0, c.numel(), (256,))
    before = c[idx].clone() + p[idx]
    c.add_(p)  # warm-up, checked
    if not torch.allclose(c[idx], before, rtol=1e-12, atol=0.0):
        raise SystemExit("fold result wrong")
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        c.add_(p)
        times.append(time.perf_counter() - t)
    return c.numel() * c.element_size() / statistics.median(times) / 1e9


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=256, help="MiB per buffer (C and P each)")
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--threads", type=int, default=12)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    n = a.mib * (1 << 20) // 8
    print(f"threads {a.threads}, {a.mib} MiB f64 per buffer, median of {a.reps}")
    kinds = ["pageable"] + (["pinned"] if torch.cuda.is_available() else [])
    for kind in kinds:
        rates = []
        keep = []  # hold every pair so that each new one is fresh memory
        for i in range(a.pairs):
            pin = kind == "pinned"
            c = torch.empty(n, dtype=torch.float64, pin_memory=pin).uniform_(-1, 1)
            p = torch.empty(n, dtype=torch.float64, pin_memory=pin).uniform_(-1, 1)
            keep.append((c, p))
            rates.append(fold_rate(c, p, a.reps))
        spread = max(rates) / min(rates) - 1
        print(f"{kind:9s} GB/s of C per pair: " + " ".join(f"{r:.1f}" for r in rates)
              + f"  (max/min - 1: {100 * spread:.0f}%)")
        # The first pair again, after the others: the same memory twice.
        print(f"{kind:9s} pair 0 again: {fold_rate(*keep[0], a.reps):.1f}")
        del keep


if __name__ == "__main__":
    main()
