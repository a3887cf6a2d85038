"""The small dataclasses hetblas answers with: devices, backends, a call's report, a
prediction, a calibration."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple


@dataclass(frozen=True)
class Device:
    """A device of the runtime; ``index`` is what ``devices=[...]`` takes."""

    index: int
    label: str
    backend: str
    vendor: str
    name: str
    kind: str
    memory_bytes: int
    detail: str

    def __str__(self) -> str:
        return (f"[{self.index}] {self.label:<12} {self.kind:<8} {self.name} "
                f"({self.memory_bytes / 2**30:.1f} GiB) - {self.detail}")


@dataclass(frozen=True)
class Backend:
    """What a backend found, or why it found nothing."""

    backend: str
    devices: int
    reason: Optional[str]

    def __str__(self) -> str:
        if self.reason is None:
            return f"{self.backend:<9} {self.devices} device(s)"
        return f"{self.backend:<9} absent: {self.reason}"


@dataclass(frozen=True)
class CallReport:
    """One call: where it ran, how long it took, what crossed which link.

    ``transfers`` maps a link (``"host->cuda:0"``) to ``(copies, bytes)``; ``host_bytes`` is
    what crossed a link to or from host memory (0 when every operand stayed on its device;
    ``None`` where the routine does not report it per link: TRSM, TRMM), ``to_host_bytes``
    the part of it that went to the host.
    """

    routine: str
    shape: Tuple[int, ...]
    dtype: str
    devices: List[str]
    seconds: float
    flops: float
    tile: Optional[Tuple[int, int, int]]
    plan_cached: bool
    transfers: Dict[str, Tuple[int, int]]
    host_bytes: Optional[int]
    to_host_bytes: Optional[int]
    recovered: List[str]
    notes: List[str]
    started: float = field(default=0.0, repr=False)
    execute_start: float = field(default=0.0, repr=False)
    trace_json: Optional[str] = field(default=None, repr=False)

    @property
    def rate(self) -> float:
        """Floating-point operations per second (real operations: a complex multiply-add
        counts 8)."""
        return self.flops / self.seconds if self.seconds > 0 else 0.0

    def __str__(self) -> str:
        shape = "x".join(map(str, self.shape))
        host = "" if self.host_bytes is None else f", {self.host_bytes / 1e9:.3f} GB via host"
        return (f"{self.routine} {shape} {self.dtype} on {', '.join(self.devices) or '-'}: "
                f"{self.seconds * 1e3:.2f} ms, {self.rate / 1e12:.2f} TFLOP/s{host}")


@dataclass(frozen=True)
class Prediction:
    """What the calibrated model predicts for a product."""

    devices: List[str]
    seconds: float
    flops: float

    @property
    def rate(self) -> float:
        return self.flops / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class LinkRate:
    name: str
    latency_s: float
    bytes_per_sec: float
    bid_slowdown: float


@dataclass(frozen=True)
class GemmRate:
    device: str
    dtype: str
    tiles: int
    best_flops: float


@dataclass(frozen=True)
class CalibrationReport:
    """A calibration: where the profile was saved (``None``: not saved), its time, and what
    it measured."""

    path: Optional[str]
    seconds: float
    created: str
    links: List[LinkRate]
    gemm: List[GemmRate]

    def __str__(self) -> str:
        lines = [f"calibrated in {self.seconds:.1f} s; profile "
                 + (f"saved to {self.path}" if self.path else "not saved")]
        for l in self.links:
            lines.append(f"  link {l.name:<16} {l.latency_s * 1e6:7.2f} us "
                         f"{l.bytes_per_sec / 1e9:7.2f} GB/s  bidirectional x{l.bid_slowdown:.2f}")
        for g in self.gemm:
            lines.append(f"  {g.device} {g.dtype} gemm: {g.tiles} tile sizes, best "
                         f"{g.best_flops / 1e12:.2f} TFLOP/s")
        return "\n".join(lines)
