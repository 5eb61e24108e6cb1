"""When the servicer starts a MatchGrow's deferred work (``hierarchy._service._AfterReply``).

The instance hands it the function that starts the work: called, the work
starts when the RPC ends; ``handed`` starts it once the servicer says the
answer went to gRPC (``answered``), or the RPC ended first.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from hierarchy._service import _AfterReply


class _Context:
    """The part of a gRPC servicer context these use: termination callbacks."""

    def __init__(self, *, ended: bool = False) -> None:
        self.callbacks: list[Callable[[], None]] = []
        self.ended = ended

    def add_callback(self, cb: Callable[[], None]) -> bool:
        if self.ended:
            return False
        self.callbacks.append(cb)
        return True

    def end(self) -> None:
        self.ended = True
        for cb in self.callbacks:
            cb()


def _starter() -> tuple[threading.Event, Callable[[], None]]:
    started = threading.Event()
    return started, started.set


def test_a_call_starts_the_work_when_the_rpc_ends() -> None:
    ctx = _Context()
    after = _AfterReply(ctx)  # type: ignore[arg-type]
    started, start = _starter()
    after(start)
    after.answered()  # (not what this one waits for)
    assert not started.is_set()
    ctx.end()
    assert started.is_set()


def test_a_call_after_the_rpc_ended_starts_the_work_at_once() -> None:
    after = _AfterReply(_Context(ended=True))  # type: ignore[arg-type]
    started, start = _starter()
    after(start)
    assert started.is_set()


def test_handed_waits_for_the_answer_to_be_handed_over() -> None:
    ctx = _Context()
    after = _AfterReply(ctx)  # type: ignore[arg-type]
    started, start = _starter()
    after.handed(start)
    assert not started.wait(0.2)
    after.answered()
    assert started.wait(5)
    ctx.end()  # (the termination callback is harmless afterwards)


def test_handed_starts_when_the_rpc_ends_first() -> None:
    """An RPC that ends without the servicer's word (cancelled) does not keep the work waiting."""
    ctx = _Context()
    after = _AfterReply(ctx)  # type: ignore[arg-type]
    started, start = _starter()
    after.handed(start)
    assert not started.wait(0.2)
    ctx.end()
    assert started.wait(5)


def test_handed_after_the_rpc_ended_starts_at_once() -> None:
    after = _AfterReply(_Context(ended=True))  # type: ignore[arg-type]
    started, start = _starter()
    after.handed(start)
    assert started.wait(5)
