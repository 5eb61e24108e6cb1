"""``kill PID`` cleans up like Ctrl-C: SIGTERM and SIGHUP unwind the main thread.

Python's default SIGTERM ends the process at once, skipping every ``finally`` and ``with`` exit, so
a killed command leaves its temporary directories, worker processes and servers behind.  Inside
:func:`terminate_unwinds` the two signals raise ``SystemExit(128 + signal)`` in the main thread
instead, so those exits run and the status is the shell's usual one for the signal.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

__all__ = ["terminate_unwinds"]


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def terminate_unwinds() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise ``SystemExit(128 + signum)`` (main thread only;
    elsewhere this does nothing).  The previous handlers come back afterwards."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {s: signal.signal(s, _raise_exit) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)
