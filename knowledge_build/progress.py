"""Progress of long work on stderr: tqdm's bar on a terminal; elsewhere (CI logs, `make index` piped
to a file, pre-commit) a plain line at each tenth of the work, so a log shows the work is alive and
how far it got without a line per item or the carriage returns a bar would leave in it."""

from __future__ import annotations

import sys
from typing import TextIO

STEPS = 10  # lines per stage when the stream is not a terminal


class Progress:
    """`update(n)` as items are done; `close()` (or a `with` block) at the end. Disabled, or with
    nothing to do, it prints nothing and does not import tqdm (a no-change rebuild stays cheap)."""

    def __init__(self, desc: str, total: int, unit: str, enabled: bool = True, stream: TextIO | None = None):
        self.desc, self.total, self.unit, self.done = desc, total, unit, 0
        self.stream = stream or sys.stderr
        self.enabled = enabled and total > 0
        self._shown = 0  # steps already printed as lines
        self._bar = None
        if self.enabled and _is_terminal(self.stream):
            from tqdm import tqdm

            self._bar = tqdm(total=total, desc=desc, unit=unit, leave=False, file=self.stream)

    def update(self, n: int = 1) -> None:
        self.done += n
        if self._bar is not None:
            self._bar.update(n)
        elif self.enabled:
            done = min(self.done, self.total)
            step = done * STEPS // self.total
            if step > self._shown:
                self._shown = step
                print(f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s ({done * 100 // self.total} %)",
                      file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or file-like stream without a terminal
        return False
