"""Products from several Python threads at once, every result checked exactly.

Integer-valued operands make every product exact in f64 whatever the summation order, so each
thread's results are compared bit for bit with an elementwise product that uses no BLAS.
usage: python threads.py [THREADS] [CALLS_PER_THREAD] [N]
"""

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np

threads = int(sys.argv[1]) if len(sys.argv) > 1 else 8
calls = int(sys.argv[2]) if len(sys.argv) > 2 else 5
n = int(sys.argv[3]) if len(sys.argv) > 3 else 160


def work(t):
    rng = np.random.default_rng(100 + t)
    bad = 0
    for i in range(calls):
        m = n + t + i  # a shape of its own per call
        a = rng.integers(-8, 8, (m, n)).astype(np.float64)
        b = rng.integers(-8, 8, (n, m)).astype(np.float64)
        c = a @ b
        exact = (a[:, :, None] * b[None, :, :]).sum(axis=1)
        bad += int(not np.array_equal(c, exact))
    return bad


with ThreadPoolExecutor(threads) as pool:
    wrong = sum(pool.map(work, range(threads)))
print(f"{threads} threads x {calls} products: {wrong} wrong")
sys.exit(1 if wrong else 0)
