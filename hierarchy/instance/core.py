"""The instance's state and its lock: what every part of :class:`hierarchy.instance.Instance` shares.

:class:`InstanceCore` owns the attributes (the engine, the parent and
provider, the job records, the origin records, the request table, the
pending hand-backs, counters), the one lock that serialises every change
(``_locked``: the cyclic garbage collector is paused while it is held, and
a body may hand the lock to a background thread for a deferred attach),
the deadline arithmetic for upstream calls, and the jobspec size guard.
The other modules of this package add behaviour as mixins over it.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import logging
import os
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import repeat
from pathlib import Path
from typing import Any

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.gcpolicy import upkeep
from fluxlite.jobspec import Jobspec, parse_jobspec
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy._errors import InstanceUnavailableError
from hierarchy._limits import Limits
from hierarchy.base import IDLE_WAIT_S, Parent
from hierarchy.instance.records import JobRecord, Origin
from providers.base import ExternalAPI

_log = logging.getLogger("fluxlite.instance")


#: Largest jobspec a call may carry (YAML parsing costs about 2 s per MB: a bigger one is refused unread).
MAX_JOBSPEC_BYTES = 1 << 20
#: requests up to this size are parsed once per distinct text (every level of a nested grow parses
#: the same bytes; a parsed jobspec is immutable, and the matcher keeps its primed counts per object)
_PARSED_MAX_BYTES = 16 << 10


@functools.lru_cache(maxsize=64)
def _parse_request(jobspec: bytes | str) -> Jobspec:
    """:func:`parse_jobspec` of a request, remembered (errors are not: they are raised every time)."""
    return parse_jobspec(jobspec, source="request jobspec")


def _now() -> float:
    return time.perf_counter()


def settle_memory() -> None:
    """Collect garbage once, then move every live object out of the collector's sight.

    Called when an instance has built its engine: the engine's many
    long-lived objects would otherwise be rescanned by every full
    collection, which costs tens of milliseconds per grow on a big graph.
    """
    gc.collect()
    gc.freeze()


def _lower_priority() -> None:
    """Run this thread only when a CPU is otherwise idle (Linux SCHED_IDLE, else nice 19).

    Deferred bookkeeping then yields to the critical path of the grow that
    continues in the instances below.  Linux applies both per thread.
    """
    tid = threading.get_native_id()
    try:
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
    except (OSError, AttributeError):
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, tid, 19)


class TurnLock:
    """The instance lock: a :class:`threading.Lock` that also counts the threads waiting for it.

    A child's deferred attach holds the lock and waits, for up to
    ``idle_wait`` seconds, for the grow that goes on below to finish before
    it starts (:meth:`wait_wanted`); a thread that wants the lock meanwhile
    ends that wait at once, so no call waits longer than it would for the
    attach itself.  Uncontended, an acquire is the plain lock's.
    """

    __slots__ = ("_cond", "_lock", "_wanting")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cond = threading.Condition(threading.Lock())
        self._wanting = 0

    def acquire(self, blocking: bool = True, timeout: float = -1) -> bool:
        if self._lock.acquire(False):
            return True
        if not blocking:
            return False
        with self._cond:
            self._wanting += 1
            self._cond.notify_all()
        try:
            return self._lock.acquire(True, timeout)
        finally:
            with self._cond:
                self._wanting -= 1

    def release(self) -> None:
        self._lock.release()

    def locked(self) -> bool:
        return self._lock.locked()

    def __enter__(self) -> bool:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()

    def wait_wanted(self, timeout: float) -> bool:
        """Wait (holding the lock) until another thread wants it, at most ``timeout`` seconds;
        whether one does."""
        with self._cond:
            return self._cond.wait_for(lambda: self._wanting > 0, timeout)


class DeferredStart:
    """Starts a locked section's deferred work: called, on a thread of its own; ``run`` is the work
    itself, for a caller with a thread to spare that may block (the servicer's starter, see
    ``hierarchy._service._Starter``), which saves the start of a thread before the work."""

    __slots__ = ("run",)

    def __init__(self, run: Callable[[], None]) -> None:
        self.run = run

    def __call__(self) -> None:
        threading.Thread(target=self.run, name="deferred", daemon=True).start()


class _Hold:
    """What a locked section may leave to run after it returned (still under the lock)."""

    __slots__ = ("after", "idle", "starter", "wait")

    def __init__(self) -> None:
        self.after: Callable[[], None] | None = None
        #: called with a function that starts ``after``; None starts it at once
        self.starter: Callable[[Callable[[], None]], None] | None = None
        #: run ``after`` at idle CPU priority (work that the grow continuing below must not wait for)
        self.idle = True
        #: seconds the idle work waits for quiet first (see TurnLock); 0: it starts at once
        self.wait = 0.0


class InstanceCore:
    """What every part of an instance shares (see the module docstring)."""

    def __init__(
        self,
        engine: Engine,
        *,
        name: str = "instance",
        depth: int = 0,
        parent: Parent | None = None,
        parent_jobid: int = 0,
        parent_token: str = "",
        provider: ExternalAPI | None = None,
        state_path: str | Path | None = None,
        child_grace: float = 10.0,
        rpc_timeout: float = 10.0,
        request_table_size: int = 256,
        address: str = "",
        defer_attach: bool = True,
        idle_wait: float = IDLE_WAIT_S,
        log: logging.Logger | None = None,
        owner: str = "",
        limits: Limits | None = None,
    ) -> None:
        self.engine = engine
        # the jgf writer that also remembers what it wrote: a grow matched here can be answered in
        # the columns wire form (hierarchy._wire) to a child that reads it
        engine.set_writer("jgf", JgfColumnsWriter())
        self.name = name
        self.depth = depth
        self.parent = parent
        self.parent_jobid = parent_jobid
        self.parent_token = parent_token
        self.provider = provider
        self.state_path = Path(state_path) if state_path is not None else None
        self.child_grace = child_grace
        self.rpc_timeout = rpc_timeout
        self.request_table_size = max(1, request_table_size)
        self.address = address
        self.log = log or _log
        self.jobs: dict[int, JobRecord] = {}
        self.origins: dict[int, Origin] = {}
        self._origin_of: dict[str, int] = {}
        #: request key -> answer, for the requests of live jobs (dropped with the job)
        self.requests: dict[str, dict[str, Any]] = {}
        #: job -> its request keys, oldest first
        self._job_requests: dict[int, dict[str, None]] = {}
        #: answers to requests of jobs that ended (the last ``request_table_size``)
        self.ended: OrderedDict[str, dict[str, Any]] = OrderedDict()
        #: the instance owner (admin): may act on every job; "" = nobody
        self.owner = owner
        self.limits = limits
        #: other services' jobs by owner (the batch queue): user -> engine job ids, for limits
        self.holders: list[Callable[[str], Iterable[int]]] = []
        #: other services' state kept in this instance's state file (key -> function returning JSON-able data)
        self.extra_state: dict[str, Callable[[], Any]] = {}
        #: what the state file held for them at restore (key -> data)
        self.restored_extra: dict[str, Any] = {}
        #: user -> wall-clock times of their recent grows (for ``grows_per_minute``)
        self.grow_times: dict[str, list[float]] = {}
        self.returning: list[dict[str, Any]] = []
        #: nodes whose cloud instance died (see :meth:`CloudMixin.nodes_down`), newest last
        self.node_events: list[dict[str, Any]] = []
        #: child lease (job id) -> path -> (cloud state, policy): dead nodes the child is told of
        #: with every heartbeat answer until its lease no longer holds them
        self.lease_down: dict[int, dict[str, tuple[str, str]]] = {}
        #: dead nodes of this instance's own lease that the parent told of and were handled
        self.told_down: set[str] = set()
        self._next_oid = 1
        self._lock = TurnLock()
        self.counters: Counter[str] = Counter()
        self.started = time.monotonic()
        #: the parent no longer knows this instance's lease
        self.orphaned = False
        #: the parent's grace period for this instance's lease (from its last answer)
        self.parent_grace = 0.0
        self._parent_silent = False
        #: attach a subgraph for a child after answering it (off the child's critical path)
        self.defer_attach = defer_attach
        #: seconds a child's deferred attach waits for quiet before it starts (see TurnLock)
        self.idle_wait = max(0.0, float(idle_wait))
        #: the most recent deferred attach: upstream request id and attach+update seconds
        self.last_deferred: dict[str, Any] = {}

    @contextmanager
    def _locked(self, deadline: float | None) -> Iterator[_Hold]:
        """Hold the instance lock (InstanceUnavailableError if no turn before ``deadline``).

        The cyclic garbage collector is paused meanwhile: an attach creates
        thousands of objects, and collections triggered by them would scan
        the whole engine (see also :func:`settle_memory`).  A body that sets
        ``hold.after`` hands the lock to a background thread that runs it and
        only then releases the lock (a deferred attach, see ``match_grow``).
        """
        wait = -1.0 if deadline is None else max(0.0, deadline - time.monotonic())
        if not self._lock.acquire(timeout=wait):
            raise InstanceUnavailableError(f"instance {self.name} is busy: no turn before the deadline")
        was = gc.isenabled()
        gc.disable()
        hold = _Hold()
        try:
            yield hold
        finally:
            if hold.after is None:
                if was:
                    gc.enable()
                self._lock.release()
                upkeep().poke()  # fluxlite.gcpolicy: young generations collected and frozen, off this thread
            else:
                after, starter, idle, quiet = hold.after, hold.starter, hold.idle, hold.wait

                def run() -> None:
                    try:
                        if idle:
                            _lower_priority()
                            if quiet > 0:
                                # the grow goes on below (the child decodes, answers, attaches): this
                                # work, on the other CPU, would slow it; it starts once the grow is
                                # likely done, or at once when a call wants this instance
                                self._lock.wait_wanted(quiet)
                        after()
                    except Exception:
                        self.log.exception("deferred work failed")
                    finally:
                        if was:
                            gc.enable()
                        self._lock.release()

                def start_thread() -> None:
                    threading.Thread(target=run, name="deferred", daemon=True).start()

                # (work at idle priority lowers its thread's priority for good: it never runs on a
                # thread that serves anything else)
                start: Callable[[], None] = start_thread if idle else DeferredStart(run)
                if starter is None:
                    start()
                else:
                    starter(start)

    def _timeout(self, deadline: float | None) -> float:
        """Timeout for an upstream call: the configured one, capped by what is left of ours."""
        if deadline is None:
            return self.rpc_timeout
        return max(0.05, min(self.rpc_timeout, deadline - time.monotonic() - 0.05))

    @staticmethod
    def _parse_jobspec(jobspec: bytes | str) -> Jobspec:
        if len(jobspec) > MAX_JOBSPEC_BYTES:
            raise InputError(
                f"request jobspec is {len(jobspec)} bytes; the limit is {MAX_JOBSPEC_BYTES} "
                "(a jobspec describes a request, not the resources themselves)"
            )
        if type(jobspec) in (bytes, str) and len(jobspec) <= _PARSED_MAX_BYTES:
            return _parse_request(jobspec)
        return parse_jobspec(jobspec, source="request jobspec")

    def _job_window(self, js: Jobspec) -> tuple[int, int]:
        tr = self.engine.traverser
        end = getattr(tr, "graph_end", None)
        start = getattr(tr, "graph_start", 0)
        if js.duration > 0:
            return 0, int(js.duration)
        return 0, (end - start) if end is not None else 0

    def _sources(self) -> list[str]:
        out = []
        if self.parent is not None and not self.orphaned:
            out.append("parent")
        if self.provider is not None:
            out.append("provider")
        return out

    def _paths(self, vids: Iterable[int]) -> list[str]:
        """Each vertex's path in the dominant subsystem ("" for none), as ``graph.path``.  O(len(vids))."""
        col = self.engine.graph.paths.get(self.engine.dom, {})
        return list(map(col.get, vids, repeat("")))
