"""Cyclic garbage collection for a long-running scheduler process.

CPython's full (generation 2) collections walk every tracked container that
is not frozen.  A scheduler's allocation state (per-vertex dicts, planner
lists) grows with every match, so with the default settings full collections
come back ever larger: on N16384 with T8 requests, matches that take 0.13 ms
at the median pause for 80-250 ms whenever one runs (``fluxlite bench match``
before this policy; the medians do not show it, the max column does).

The engine's operations (match, reserve, cancel, shrink) leave no cyclic
garbage: what they drop is freed by reference counting (checked by
``tests/fluxlite/test_gcpolicy.py``).  So the policy here is to move what
survives an operation out of the collector's sight:

- :meth:`OperationGC.settle` after start-up: one full collection, then
  ``gc.freeze()`` (the loaded graph is never scanned again);
- :meth:`OperationGC.after` after every operation: collect the young
  generations (what an operation allocates; cycles in it are reclaimed),
  then freeze the survivors.  Automatic collections then only ever scan the
  objects of the operation under way, so a pause is bounded by the size of
  one operation, not of the state;
- every ``full_every`` operations (default 100,000; 0: never) a full
  collection of everything, unfrozen first, reclaims cycles that formed
  among frozen objects (none from the engine; this is the safety valve).
  That one operation pays a full-heap pause (the size of the ones above).

Frozen objects are still freed by reference counting when dropped.  Used by
``fluxlite query`` (which calls :meth:`OperationGC.release` when it ends, so
that a caller running it in its own process gets its collector back) and
``fluxlite bench match``; a library user who runs the
engine in a long-lived process can do the same.  Multi-threaded servers (an
instance and its queue service, the Kubernetes shim) use :func:`upkeep`: each
operation pokes it and a background thread does the upkeep off the request
path.  Nothing in the engine calls it by itself: the collector belongs to the
process.
"""

from __future__ import annotations

import gc

__all__ = ["BackgroundUpkeep", "OperationGC", "upkeep"]


class OperationGC:
    """Keep cyclic-GC pauses bounded by one operation (see the module help)."""

    def __init__(self, full_every: int = 100_000, enabled: bool = True) -> None:
        if full_every < 0:
            raise ValueError("full_every must be >= 0 (0: never)")
        self.full_every = full_every
        self.enabled = enabled
        #: operations seen since start-up
        self.operations = 0
        self._was_frozen = True

    def settle(self) -> None:
        """After start-up: collect everything once, then freeze what is left."""
        if self.enabled:
            self._was_frozen = gc.get_freeze_count() > 0
            gc.collect()
            gc.freeze()

    def release(self) -> None:
        """At the end: unfreeze, unless the process had frozen objects before :meth:`settle`
        (a caller's own freeze is not undone).  For callers that run the tool in their process."""
        if self.enabled and not self._was_frozen:
            gc.unfreeze()

    def after(self) -> None:
        """After one operation: collect the young generations and freeze the survivors."""
        if not self.enabled:
            return
        self.operations += 1
        if self.full_every and self.operations % self.full_every == 0:
            gc.unfreeze()
            gc.collect()
        else:
            gc.collect(1)
        gc.freeze()


class BackgroundUpkeep:
    """:class:`OperationGC` for a multi-threaded server, off the request path.

    Operations call :meth:`poke` (cheap: sets an event); a daemon thread at
    idle priority then runs :meth:`OperationGC.after` (collect the young
    generations, freeze the survivors), at most once per ``min_interval``
    seconds however many operations poked.  A server's replies never wait
    for a collection, and its heap stays frozen as ``fluxlite query``'s does.
    """

    def __init__(self, min_interval: float = 0.2, full_every: int = 100_000) -> None:
        import threading

        self.gc = OperationGC(full_every=full_every)
        self.min_interval = min_interval
        self._event = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def poke(self) -> None:
        """An operation ended: upkeep is due (starts the thread on first use)."""
        self._event.set()
        if self._thread is None:
            import threading

            with self._lock:
                if self._thread is None and not self._stop.is_set():
                    self._thread = threading.Thread(target=self._run, name="gc-upkeep", daemon=True)
                    self._thread.start()

    def _run(self) -> None:
        import contextlib
        import os
        import threading

        # the collection yields to the work of the server (Linux: per thread)
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        while not self._stop.is_set():
            self._event.wait()
            if self._stop.is_set():
                break
            self._event.clear()
            self.gc.after()
            self._stop.wait(self.min_interval)

    def close(self, timeout: float = 5.0) -> None:
        """Stop the thread (for tests and orderly shutdowns)."""
        self._stop.set()
        self._event.set()
        t = self._thread
        if t is not None:
            t.join(timeout)


_UPKEEP: BackgroundUpkeep | None = None


def upkeep() -> BackgroundUpkeep:
    """The process's :class:`BackgroundUpkeep` (one collector per process, so one upkeep)."""
    global _UPKEEP
    if _UPKEEP is None:
        _UPKEEP = BackgroundUpkeep()
    return _UPKEEP
