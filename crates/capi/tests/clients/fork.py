"""Forked children after the parent's runtime started: they must compute, not hang.

The parent makes a product (with the preload and an offload threshold of 0 it starts the
runtime and runs on the devices), then forks: a `multiprocessing` pool with the fork start
method, and a bare `os.fork()`. Every child's product is checked exactly. The caller runs this
under a time limit: a hang is a failure.
"""

import multiprocessing as mp
import os
import sys

import numpy as np


def product(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-8, 8, (150, 120)).astype(np.float64)
    b = rng.integers(-8, 8, (120, 130)).astype(np.float64)
    return np.array_equal(a @ b, (a[:, :, None] * b[None, :, :]).sum(axis=1))


def main():
    if not product(0):
        sys.exit("the parent's product is wrong")
    with mp.get_context("fork").Pool(2) as pool:
        results = pool.map_async(product, range(1, 5)).get(timeout=60)
    if not all(results):
        sys.exit(f"multiprocessing (fork) children: {results}")
    pid = os.fork()
    if pid == 0:
        os._exit(0 if product(9) else 1)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("the os.fork() child's product is wrong")
    if not product(10):
        sys.exit("the parent's product after the forks is wrong")
    print("forked children computed: multiprocessing (fork) x4, os.fork() x1")


if __name__ == "__main__":
    main()
