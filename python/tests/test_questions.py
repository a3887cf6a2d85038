"""Questions: devices, backends, the profile, predictions, calibration with progress, traces,
reports."""

import io
import json

import numpy as np
import pytest

import hetblas
from hetblas._progress import ProgressBar, text_bar
from conftest import rand


def test_devices_and_backends():
    devs = hetblas.devices()
    assert [d.label for d in devs] == ["cpu:0", "emulated:0", "emulated:1"]
    assert [d.index for d in devs] == [0, 1, 2]
    assert devs[1].kind == "emulated" and devs[0].kind == "cpu"
    assert "emulated:0" in str(devs[1])
    by_name = {b.backend: b for b in hetblas.backends()}
    assert by_name["emulated"].devices == 2 and by_name["emulated"].reason is None
    assert by_name["cuda"].devices == 0 and by_name["cuda"].reason  # why it has none
    assert "profile" in hetblas.profile_status()


def test_predict_without_profile_is_none():
    assert hetblas.predict(1024, 1024, 1024) is None


def test_trace_file_and_reports(tmp_path, rng):
    a, b = rand(rng, (200, 150), np.float64), rand(rng, (150, 120), np.float64)
    path = tmp_path / "run.json"
    with hetblas.trace(str(path)) as t:
        hetblas.matmul(a, b)
        hetblas.syrk(a)
        hetblas.matmul(a, b, devices=["emulated:0"])
    hetblas.matmul(a, b)  # outside: not recorded
    assert [c.routine for c in t.calls] == ["matmul", "syrk", "matmul"]
    doc = json.loads(path.read_text())
    events = doc["traceEvents"]
    calls = [e for e in events if e.get("cat") == "call"]
    assert len(calls) == 3
    # Every call that ran tiles has its own row of device queues.
    rows = {e["pid"] for e in events if e.get("ph") == "X" and e.get("cat") != "call"}
    assert rows, "no device timeline in the trace"
    assert all(e["ts"] >= 0 for e in events if e.get("ph") == "X")
    r = t.calls[2]
    assert r.devices == ["emulated:0"] and r.rate > 0 and "matmul 200x120x150" in str(r)


def test_calibrate_quick_then_predict():
    seen = []
    report = hetblas.calibrate(quick=True, save=False,
                               progress=lambda d, n, s, eta: seen.append((d, n, s)))
    assert report.path is None and report.seconds > 0
    assert report.links and report.gemm
    assert seen and seen[-1][0] == seen[-1][1]  # the last point is the end
    assert "calibrated profile" in hetblas.profile_status() or "set by the caller" in \
        hetblas.profile_status()
    p = hetblas.predict(2048, 2048, 2048)
    assert p is not None and p.seconds > 0 and p.devices and p.rate > 0
    d = hetblas.predict(2048, 2048, 2048, where=("emulated:0", "emulated:0", "emulated:0"))
    assert d is not None


def test_progress_bar_modes():
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    bar = ProgressBar(stream=tty, force="terminal")
    for i in range(5):
        bar(i + 1, 5, f"point {i}", 1.0)
    bar.close()
    assert tty.getvalue().count("\r") == 5 and "5/5" in tty.getvalue()
    log = io.StringIO()
    bar = ProgressBar(stream=log, force="log")
    for i in range(100):
        bar(i + 1, 100, "x", None)
    assert 10 <= log.getvalue().count("\n") <= 11  # a line per tenth
    assert text_bar(5, 10, "s", 3.0, width=10) == "[#####.....]    5/10  ETA 3 s  s"
