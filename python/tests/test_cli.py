"""python -m hetblas run / doctor and the hetblas-run console script; a forked child."""

import multiprocessing as mp
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import hetblas

LIB = hetblas.dropin_library()


def test_library_is_bundled():
    assert os.path.isfile(LIB), "the wheel must carry libhetblas.so"


def test_run_preloads_and_passes_arguments(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text(textwrap.dedent("""
        import sys, numpy as np
        maps = open('/proc/self/maps').read()
        print('mapped', 'libhetblas.so' in maps)
        a = np.ones((300, 300)); print('sum', (a @ a).sum())
        print('args', sys.argv[1:])
        sys.exit(7)
    """))
    env = dict(os.environ, HETBLAS_SUMMARY="1")
    p = subprocess.run([sys.executable, "-m", "hetblas", "run", str(script), "x", "--y"],
                       capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 7, p.stderr
    assert "mapped True" in p.stdout
    assert "sum 27000000.0" in p.stdout
    assert "args ['x', '--y']" in p.stdout
    # The drop-in saw NumPy's product: the preload took effect.
    summary = [l for l in p.stderr.splitlines() if "hetblas summary" in l]
    assert summary and " 0 calls seen" not in summary[-1], p.stderr


def test_console_script(tmp_path):
    exe = shutil.which("hetblas-run", path=os.path.dirname(sys.executable))
    if exe is None:
        pytest.skip("hetblas-run is installed only with the package (pip install)")
    p = subprocess.run([exe, "-c", "print('mapped', 'libhetblas.so' in open('/proc/self/maps').read())"],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0 and "mapped True" in p.stdout, p.stderr


def test_doctor():
    p = subprocess.run([sys.executable, "-m", "hetblas", "doctor"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for line in ("drop-in library:", "devices:", "backends:", "profile:", "host BLAS:",
                 "preload in this process: no", "preload check"):
        assert line in out, out
    check = [l for l in out.splitlines() if l.startswith("preload check")][0]
    assert "calls seen" in check and " 0 calls seen" not in check, check
    p = subprocess.run([sys.executable, "-m", "hetblas", "run", "-m", "hetblas", "doctor",
                        "--no-child"], capture_output=True, text=True, timeout=300)
    assert "preload in this process: yes" in p.stdout, p.stdout + p.stderr


def test_run_without_arguments():
    p = subprocess.run([sys.executable, "-m", "hetblas", "run"], capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 2 and "usage" in p.stderr


def _child(q):
    try:
        hetblas.matmul(np.ones((4, 4)), np.ones((4, 4)))
        q.put("computed")
    except hetblas.HetblasError as e:
        q.put(str(e))


def test_forked_child_is_told():
    hetblas.devices()  # started in this process
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    msg = q.get(timeout=120)
    p.join(120)
    assert "forked" in msg and "spawn" in msg, msg
