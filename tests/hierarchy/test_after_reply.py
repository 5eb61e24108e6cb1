"""When the servicer starts a MatchGrow's deferred work (``hierarchy._service._AfterReply``).

The instance hands it the function that starts the work: called, the work
starts when the RPC ends; ``handed`` starts it once the servicer says the
answer went to gRPC (``answered``), or the RPC ended first.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from hierarchy._service import _AfterReply, _shared_starter


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


#: the process's starter thread, as servicers share it
STARTER = _shared_starter()


def _starter() -> tuple[threading.Event, Callable[[], None]]:
    started = threading.Event()
    return started, started.set


def test_a_call_starts_the_work_when_the_rpc_ends() -> None:
    ctx = _Context()
    after = _AfterReply(ctx, STARTER)  # type: ignore[arg-type]
    started, start = _starter()
    after(start)
    after.answered()  # (not what this one waits for)
    assert not started.is_set()
    ctx.end()
    assert started.is_set()


def test_a_call_after_the_rpc_ended_starts_the_work_at_once() -> None:
    after = _AfterReply(_Context(ended=True), STARTER)  # type: ignore[arg-type]
    started, start = _starter()
    after(start)
    assert started.is_set()


def test_handed_waits_for_the_answer_to_be_handed_over() -> None:
    ctx = _Context()
    after = _AfterReply(ctx, STARTER)  # type: ignore[arg-type]
    started, start = _starter()
    after.handed(start)
    assert not started.wait(0.2)
    after.answered()
    assert started.wait(5)
    ctx.end()  # (the termination callback is harmless afterwards)


def test_handed_starts_when_the_rpc_ends_first() -> None:
    """An RPC that ends without the servicer's word (cancelled) does not keep the work waiting."""
    ctx = _Context()
    after = _AfterReply(ctx, STARTER)  # type: ignore[arg-type]
    started, start = _starter()
    after.handed(start)
    assert not started.wait(0.2)
    ctx.end()
    assert started.wait(5)


def test_handed_after_the_rpc_ended_starts_at_once() -> None:
    after = _AfterReply(_Context(ended=True), STARTER)  # type: ignore[arg-type]
    started, start = _starter()
    after.handed(start)
    assert started.wait(5)


def test_the_starter_keeps_going_after_a_start_that_fails() -> None:
    ctx = _Context()
    after = _AfterReply(ctx, STARTER)  # type: ignore[arg-type]

    def broken() -> None:
        raise RuntimeError("cannot start")

    after.handed(broken)
    after.answered()
    again = _AfterReply(_Context(), STARTER)  # type: ignore[arg-type]
    started, start = _starter()
    again.handed(start)
    again.answered()
    assert started.wait(5)


def test_work_that_offers_to_run_inline_runs_on_the_starters_thread() -> None:
    """A start with ``run`` (an instance's own-job attach) has its work run on the starter's own
    thread, not a thread started for it; a failing one does not stop the starter."""
    from hierarchy.instance.core import DeferredStart

    ran: list[str] = []
    done = threading.Event()

    def fail() -> None:
        raise RuntimeError("the work failed")

    def work() -> None:
        ran.append(threading.current_thread().name)
        done.set()

    for fn in (fail, work):
        after = _AfterReply(_Context(), STARTER)  # type: ignore[arg-type]
        after.handed(DeferredStart(fn))
        after.answered()
    assert done.wait(5) and ran == ["after-answer"]
    threads: list[str] = []
    started = threading.Event()
    DeferredStart(lambda: (threads.append(threading.current_thread().name), started.set()))()
    assert started.wait(5) and threads == ["deferred"]  # (called: a thread of its own)


def test_a_forked_child_gets_a_starter_of_its_own() -> None:
    """The parent's starter thread does not survive a fork: the child's first servicer starts one."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # (the child: report whether a start ran, then leave at once)
        ok = False
        try:
            after = _AfterReply(_Context(), _shared_starter())  # type: ignore[arg-type]
            started, start = _starter()
            after.handed(start)
            after.answered()
            ok = started.wait(5) and _shared_starter() is not STARTER
        finally:
            os.write(w, b"1" if ok else b"0")
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"
