"""A progress bar for calibration that works in a terminal, in a log file and in a notebook:
tqdm's when it is installed (tqdm.auto picks the notebook widget), else a line redrawn on a
terminal, a widget-free HTML bar in a Jupyter notebook, or a line per tenth in a log."""

from __future__ import annotations

import sys
import time
from typing import Optional, TextIO


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:
        return False
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


def text_bar(done: int, total: int, stage: str, eta: Optional[float], width: int = 30) -> str:
    """``[#######.......]  12/40  ETA 21 s  link host->cuda:0: 8 MiB``."""
    frac = done / total if total else 0.0
    filled = int(round(frac * width))
    eta_s = "" if eta is None else f"  ETA {eta:.0f} s"
    return f"[{'#' * filled}{'.' * (width - filled)}] {done:>4}/{total}{eta_s}  {stage}"


class ProgressBar:
    """Call it with ``(done, total, stage, eta_seconds)`` after every point; ``close()`` at the
    end."""

    def __init__(self, stream: Optional[TextIO] = None, force: Optional[str] = None):
        self.stream = stream if stream is not None else sys.stderr
        self.mode = force or self._pick()
        self._tqdm = None
        self._handle = None
        self._last_tenth = -1
        self._last_draw = 0.0

    def _pick(self) -> str:
        try:
            import tqdm.auto  # noqa: F401

            return "tqdm"
        except ImportError:
            pass
        if _in_notebook():
            return "notebook"
        isatty = getattr(self.stream, "isatty", None)
        return "terminal" if isatty is not None and isatty() else "log"

    def __call__(self, done: int, total: int, stage: str, eta: Optional[float] = None) -> None:
        if self.mode == "tqdm":
            from tqdm.auto import tqdm

            if self._tqdm is None:
                self._tqdm = tqdm(total=total, desc="hetblas calibrate", unit="point")
            self._tqdm.total = total
            self._tqdm.n = done
            self._tqdm.set_postfix_str(stage, refresh=False)
            self._tqdm.refresh()
        elif self.mode == "notebook":
            now = time.monotonic()
            if done < total and now - self._last_draw < 0.1:
                return
            self._last_draw = now
            from IPython.display import HTML, display

            html = HTML(f"<progress value='{done}' max='{max(total, 1)}' style='width:40%'>"
                        f"</progress> <code>{done}/{total} {stage}</code>")
            if self._handle is None:
                self._handle = display(html, display_id=True)
            else:
                self._handle.update(html)
        elif self.mode == "terminal":
            self.stream.write("\r" + text_bar(done, total, stage, eta)[:160].ljust(160))
            self.stream.flush()
        else:
            tenth = (10 * done) // total if total else 10
            if tenth != self._last_tenth:
                self._last_tenth = tenth
                self.stream.write(text_bar(done, total, stage, eta) + "\n")
                self.stream.flush()

    def close(self) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
        elif self.mode == "terminal":
            self.stream.write("\n")
            self.stream.flush()
