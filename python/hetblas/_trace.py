"""Recording calls: ``with hetblas.trace("run.json"):`` writes the Chrome trace of every call
inside it (any thread), and ``hetblas.last_report()`` is the calling thread's last call."""

from __future__ import annotations

import json
import threading
import time
from typing import List, Optional

from ._reports import CallReport

_lock = threading.Lock()
_active: List["trace"] = []
_local = threading.local()


def tracing() -> bool:
    """Whether some ``trace`` is open (calls then record their timelines)."""
    return bool(_active)


def record(report: CallReport) -> None:
    _local.last = report
    if _active:
        with _lock:
            for t in _active:
                t.calls.append(report)


def last_report() -> Optional[CallReport]:
    """The report of this thread's last hetblas call (``None`` before the first)."""
    return getattr(_local, "last", None)


class trace:
    """Records every hetblas call made while it is open, from any thread, and writes their
    timelines to ``path`` as a Chrome trace (open it in Perfetto or chrome://tracing): one row
    per call, its device queues as threads, on one clock. ``calls`` holds their reports.

    >>> with hetblas.trace("run.json") as t:       # doctest: +SKIP
    ...     c = hetblas.matmul(a, b)
    >>> t.calls[0].devices, t.calls[0].host_bytes  # doctest: +SKIP
    """

    def __init__(self, path: Optional[str] = None):
        self.path = path
        self.calls: List[CallReport] = []
        self._start = 0.0

    def __enter__(self) -> "trace":
        self._start = time.perf_counter()
        with _lock:
            _active.append(self)
        return self

    def __exit__(self, *exc) -> None:
        with _lock:
            _active.remove(self)
        if self.path is not None:
            with open(self.path, "w") as f:
                f.write(self.chrome_json())

    def chrome_json(self) -> str:
        """The calls' timelines as Chrome trace JSON (microseconds from the trace's start)."""
        events = [{"ph": "M", "name": "process_name", "pid": 0, "tid": 0,
                   "args": {"name": "calls"}}]
        for i, c in enumerate(self.calls, start=1):
            origin = (c.started - self._start) * 1e6
            label = f"{c.routine} {'x'.join(map(str, c.shape))} {c.dtype}"
            events.append({"ph": "X", "name": label, "cat": "call", "pid": 0, "tid": 0,
                           "ts": origin, "dur": c.seconds * 1e6,
                           "args": {"devices": c.devices, "host_bytes": c.host_bytes,
                                    "rate_tflops": c.rate / 1e12}})
            if not c.trace_json:
                continue
            events.append({"ph": "M", "name": "process_name", "pid": i, "tid": 0,
                           "args": {"name": f"#{i} {label} on {', '.join(c.devices)}"}})
            shift = origin + c.execute_start * 1e6
            for e in json.loads(c.trace_json).get("traceEvents", []):
                e["pid"] = i
                if e.get("ph") == "X":
                    e["ts"] = e.get("ts", 0.0) + shift
                events.append(e)
        return json.dumps({"traceEvents": events, "displayTimeUnit": "ms"})
