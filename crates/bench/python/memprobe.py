#!/usr/bin/env python3
"""Host fold rate buffer by buffer: is the spread of host folds between processes the memory a
process happens to get, or the moment?

A host fold is `C += P` over host memory (three passes: read P and C, write C). Fold-bound
calls varied by 15-22% between processes on one machine while the link held its rate. This
folds each of several freshly allocated (C, P) pairs with the same threads, round after round
over all of them, pageable and pinned, and prints GB/s of C per pair and round: a pair slow in
every round points at the memory behind it, a round slow for every pair at the moment.

    python3 crates/bench/python/memprobe.py [--mib 256] [--pairs 6] [--rounds 3] [--reps 5] [--threads 12]

Run on the GPU machine by `bash scripts/gpu/compare.sh --memprobe`; not part of the library.

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
    ap.add_argument("--rounds", type=int, default=3, help="passes over all the pairs")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    n = a.mib * (1 << 20) // 8
    print(f"threads {a.threads}, {a.mib} MiB f64 per buffer, median of {a.reps}")
    kinds = ["pageable"] + (["pinned"] if torch.cuda.is_available() else [])
    for kind in kinds:
        pin = kind == "pinned"
        pairs = []  # every pair held, so that each new one is fresh memory
        for _ in range(a.pairs):
            c = torch.empty(n, dtype=torch.float64, pin_memory=pin).uniform_(-1, 1)
            p = torch.empty(n, dtype=torch.float64, pin_memory=pin).uniform_(-1, 1)
            pairs.append((c, p))
        # Round after round over the pairs: a pair slow in every round is its memory, a round
        # slow for every pair is the time.
        table = [[fold_rate(c, p, a.reps) for c, p in pairs] for _ in range(a.rounds)]
        for r, rates in enumerate(table):
            print(f"{kind:9s} round {r}: GB/s of C per pair: "
                  + " ".join(f"{x:5.1f}" for x in rates))
        per_pair = [statistics.median(col) for col in zip(*table)]
        per_round = [statistics.median(row) for row in table]
        print(f"{kind:9s} medians per pair: " + " ".join(f"{x:5.1f}" for x in per_pair)
              + f" (max/min - 1: {100 * (max(per_pair) / min(per_pair) - 1):.0f}%); per round: "
              + " ".join(f"{x:5.1f}" for x in per_round))
        del pairs


if __name__ == "__main__":
    main()
