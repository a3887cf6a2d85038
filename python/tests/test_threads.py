"""Calls from several threads at once, and the GIL released during a call."""

import sys
import threading
import time

import numpy as np

import hetblas
from conftest import assert_close, rand


def test_many_threads(rng):
    pairs = [(rand(rng, (90 + i, 50), np.float64), rand(rng, (50, 70 - i), np.float64))
             for i in range(8)]
    results = [None] * len(pairs)
    errors = []

    def work(i):
        try:
            for _ in range(3):
                results[i] = hetblas.matmul(*pairs[i])
        except Exception as e:  # reported below, with the thread
            errors.append((i, e))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(pairs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (a, b), c in zip(pairs, results):
        assert_close(c, a @ b, np.abs(a) @ np.abs(b), 50, np.float64)


def test_gil_released_during_a_call(rng):
    """With a switch interval far longer than the call, a call that held the GIL would let no
    other Python thread run between its start and its end: the spinning thread's counter
    would not move. (The spinner gives the GIL back at every turn, so the caller gets it back
    as soon as the call ends.)"""
    a, b = rand(rng, (700, 700), np.float64), rand(rng, (700, 700), np.float64)
    hetblas.matmul(a, b)  # plans and workspaces ready
    counter = [0]
    go, done = threading.Event(), threading.Event()

    def spin():
        go.wait()
        while not done.is_set():
            counter[0] += 1
            time.sleep(0)

    old = sys.getswitchinterval()
    sys.setswitchinterval(30.0)
    s = threading.Thread(target=spin)
    s.start()
    try:
        go.set()
        before = counter[0]
        hetblas.matmul(a, b)
        moved = counter[0] - before
    finally:
        done.set()
        sys.setswitchinterval(old)
        s.join()
    assert moved > 0
