"""The queue: pending jobs in priority order in front of one engine, on any clock.

:class:`Queue` holds the jobs and their life cycle; a
:class:`~fluxlite.queue.base.QueuePolicy` decides each pass; every question
about resources goes to the :class:`~fluxlite.api.Engine` (the root
aggregate for "how many are free over [t, t+d)", ``match`` for a real
placement, ``grow``/``shrink`` for resizing).  The queue never keeps its own
copy of which resources are free.

Priority: a higher ``priority`` first, then arrival order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fluxlite.errors import BusyError, InputError, StateError, UnknownJobError, UnsatisfiableError
from fluxlite.graph import UP
from fluxlite.match._vplan import avail_during, overlaps
from fluxlite.queue._job import ADAPTING, CANCELLED, DONE, PENDING, RUNNING, Job
from fluxlite.queue._request import request_jobspec
from fluxlite.queue._spanindex import SpanIndex
from fluxlite.queue.base import QueuePolicy
from fluxlite.queue.policies import create_policy

if TYPE_CHECKING:
    from fluxlite.api import Engine

__all__ = ["Queue"]

#: engine job ids of temporary placements (planning) start here
_TEMP_BASE = 1 << 40


class Queue:
    """Pending and running jobs of one engine, scheduled by one policy.

    Hooks for jobs that carry their own request (Flux's scheduler module):
    :meth:`job_request` (the jobspec a start or reservation matches),
    :attr:`match_format` (the writer of the engine's answer) and
    :meth:`on_matched` (called with the engine's answer of a match that
    starts the job).  With ``by_shape`` False the shortcuts that assume a
    request is ``count`` whole units of ``job.unit`` (count-based
    reservations, nodes that free up first, tight fit, failed shapes) are
    off.
    """

    #: the engine's writer for :meth:`_match` answers
    match_format = "simple"
    #: a job's request is its (unit, size, walltime) shape (:func:`request_jobspec`)
    by_shape = True

    def __init__(
        self, engine: Engine, policy: QueuePolicy | str = "easy", reservation_depth: int | None = None
    ):
        self.engine = engine
        self.policy = create_policy(policy, reservation_depth) if isinstance(policy, str) else policy
        self.jobs: dict[int, Job] = {}
        self._pending: dict[int, Job] = {}
        self._order: list[Job] | None = None
        self._seq = 0
        #: resources came back earlier than planned since the last pass
        self.dirty = False
        #: optional gate: may this job start now? (the power-aware strategy sets it)
        self.admit: Callable[[Job, int], bool] | None = None
        #: called with (job, now) when a job starts
        self.on_start: list[Callable[[Job, int], None]] = []
        self.passes = 0
        self.pass_jobs = 0
        #: (size, walltime, unit) shapes that could not start since the last release: only a
        #: release (end, cancel, shrink, a moved reservation) can make them fit again
        self._failed: list[tuple[int, int, str]] = []
        self.matches = 0
        #: reservations given to the engine (a deferred one only once it is settled)
        self.resv_placed = 0
        #: reservations held by pending jobs (kept exact: a backfill placement asks it per try)
        self._n_resv = 0
        #: bumped by every change of what runs (start, end, cancel, grow, shrink)
        self._epoch = 0
        #: (epoch, last arrival seq) when the last pass finished its plan
        self._planned: tuple[int, int] | None = None
        #: place a whole-node reservation in the engine only when something reads the engine
        #: during its window (see :meth:`settle`); off by default, since code that reads the
        #: engine directly (a shim, a service) would see it missing; the batch simulator sets it
        self.defer = False
        #: (job, at, node vertices) of the one reservation decided but not yet placed
        self._deferred: tuple[Job, int, list[int]] | None = None
        self._nodes_cache: tuple[Any, int, list[int], set[int]] | None = None
        #: sorted span starts/ends of bare nodes, opened by a pass's third node scan and closed at its end
        #: (see :mod:`fluxlite.queue._spanindex`); _scans: node scans in the current pass, -1 outside a pass
        self._spanidx: SpanIndex | None = None
        self._scans = -1

    # ------------------------------------------------------------------ engine questions
    @property
    def _root_plan(self) -> Any:
        """The root's aggregate planner (looked up each time: an attach may rebuild it)."""
        tr = self.engine.traverser
        return tr.subplan[tr.dom][self.engine.graph.roots[tr.dom]]

    def _total(self, unit: str) -> int:
        p = self._root_plan
        i = p.index_of(unit) if p is not None else None
        return p.resource_total_at(i) if i is not None else 0

    def capacity(self, unit: str = "node") -> int:
        """Total units of ``unit`` in the graph (from the root aggregate)."""
        return self._total(unit)

    def settle(self) -> None:
        """Place the reservation decided but not yet given to the engine (if any).

        A whole-node reservation (:meth:`_reserve_by_count`) is decided from
        the engine's spans but placed only when something reads or changes
        the engine where it would show: a start that runs into its window
        (or is not a whole-node shape), another reservation, a count
        over its window (:meth:`used`; :meth:`free` counts it without
        placing it), a plan, a resize, an admission gate.  An EASY pass where no other
        job fits now, and the next pass that gives the reservation back,
        then cost no engine update.  Every method of the queue settles
        first where it must; code that reads ``queue.engine`` directly while
        jobs are pending calls this first.
        """
        d = self._deferred
        if d is None:
            return
        self._deferred = None
        job, at, chosen = d
        self.resv_placed += 1
        if not self._place_on(job, chosen, at, reserve=True):
            self._set_resv(job, None)
            raise StateError(f"job {job.jobid}: its reservation at {at} is no longer free", jobid=job.jobid)

    def _settle_over(self, at: int, duration: int) -> None:
        """Settle if the deferred reservation's window meets ``[at, at + duration)``."""
        d = self._deferred
        if d is not None and d[1] < at + duration and d[1] + d[0].walltime > at:
            self.settle()

    def free(self, unit: str, at: int, duration: int = 1) -> int:
        """Units of ``unit`` free during ``[at, at + duration)``: the engine's root aggregate, O(log spans).

        A deferred reservation (:meth:`settle`) is counted as placed: the
        minimum over the window outside its window, and over the overlap
        less its nodes (two aggregate queries instead of placing it).
        """
        duration = max(1, duration)
        n = self._free_placed(unit, at, duration)
        d = self._deferred
        if d is None or unit != "node":
            return n
        lo, hi = max(at, d[1]), min(at + duration, d[1] + d[0].walltime)
        if lo >= hi:
            return n
        return min(n, self._free_placed(unit, lo, hi - lo) - d[0].size)

    def _free_placed(self, unit: str, at: int, duration: int = 1) -> int:
        """Units free as the engine has them now (a deferred reservation not counted)."""
        p = self._root_plan
        i = p.index_of(unit)
        if i is None:
            return 0
        return p.avail_resources_during(at, max(1, duration), i)

    def used(self, unit: str, at: int) -> int:
        self._settle_over(at, 1)
        p = self._root_plan
        i = p.index_of(unit)
        return 0 if i is None else p.resource_total_at(i) - p.avail_resources_at(at, i)

    # ------------------------------------------------------------------ jobs
    def submit(self, job: Job, now: int) -> Job:
        """Queue ``job``; :class:`InputError` for a bad request, :class:`UnsatisfiableError` if never possible."""
        if job.jobid in self.jobs or job.jobid in self.engine.jobs:
            raise StateError(f"job id {job.jobid} is already known", jobid=job.jobid)
        if job.size < 1 or job.walltime < 1:
            raise InputError(f"job {job.jobid}: size and walltime must be >= 1", jobid=job.jobid)
        if not (1 <= job.min_size <= job.size <= job.max_size):
            raise InputError(
                f"job {job.jobid}: need 1 <= min ({job.min_size}) <= size ({job.size}) <= max ({job.max_size})"
            )
        if job.size > self.capacity(job.unit):
            raise UnsatisfiableError(
                f"job {job.jobid} asks for {job.size} {job.unit}s, the graph has {self.capacity(job.unit)}"
            )
        request_jobspec(job.unit, job.size, job.walltime)  # validates
        self._seq += 1
        job.seq = self._seq
        job.submit = now if job.submit is None else job.submit
        job.state = PENDING
        self.jobs[job.jobid] = job
        self._pending[job.jobid] = job
        self._order = None
        return job

    def ordered_pending(self) -> list[Job]:
        """Pending jobs, highest priority first, then by arrival."""
        if self._order is None:
            self._order = sorted(self._pending.values(), key=lambda j: (-j.priority, j.seq))
        return list(self._order)

    @property
    def pending(self) -> list[Job]:
        return self.ordered_pending()

    def running(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.running]

    def get(self, jobid: int) -> Job:
        job = self.jobs.get(jobid)
        if job is None:
            raise UnknownJobError(f"nonexistent job {jobid}", jobid=jobid)
        return job

    def cancel(self, jobid: int, now: int) -> Job:
        """Remove a pending job or stop a running one; its resources go back to the engine."""
        job = self.get(jobid)
        if job.state in (DONE, CANCELLED):
            raise StateError(f"job {jobid} has already ended", jobid=jobid)
        was_running = job.running
        self._release(job)
        job.state = CANCELLED
        if was_running:
            job.end = now
        return job

    def complete(self, jobid: int, now: int) -> Job:
        """A running job ended at ``now``: free its resources."""
        job = self.get(jobid)
        if not job.running:
            raise StateError(f"job {jobid} is not running", jobid=jobid)
        self._release(job, early=now < job.planned_end)
        job.state = DONE
        job.end = now
        return job

    def released(self) -> None:
        """Resources came back (or a reservation was given up): shapes that failed may fit now."""
        self._failed.clear()
        self._planned = None

    def _release(self, job: Job, early: bool = True) -> None:
        self.released()
        self._epoch += 1
        if self._deferred is not None and self._deferred[0] is job:
            self._deferred = None
        if job.jobid in self.engine.jobs:
            self._changing(job.jobid, self.engine.cancel, job.jobid)
        if self._pending.pop(job.jobid, None) is not None:
            self._order = None
        self._set_resv(job, None)
        if early:
            self.dirty = True

    # ------------------------------------------------------------------ used by policies
    def _set_resv(self, job: Job, at: int | None) -> None:
        self._n_resv += (at is not None) - (job.resv_at is not None)
        job.resv_at = at

    def _started(self, job: Job, now: int) -> None:
        self._pending.pop(job.jobid, None)
        self._order = None
        self._epoch += 1
        self._set_resv(job, None)
        job.state = RUNNING
        job.start = now
        job.record(now, job.size)
        for fn in self.on_start:
            fn(job, now)

    def job_request(self, job: Job) -> Any:
        """The jobspec a start or reservation of ``job`` matches (hook; default: its shape)."""
        return request_jobspec(job.unit, job.size, job.walltime)

    def on_matched(self, job: Job, result: Any) -> None:
        """Hook: the engine's answer (in :attr:`match_format`) of the match that is starting ``job``."""

    def _match(self, job: Job, now: int, op: str) -> Any:
        self.matches += 1
        return self._changing(job.jobid, self.engine.match, self.job_request(job), op=op, jobid=job.jobid,
                              at=now, fmt=self.match_format)  # fmt: skip

    def _changing(self, owner: int, fn: Callable[..., Any], /, *args: Any, **kw: Any) -> Any:
        """``fn(*args, **kw)``, an engine call that changes job ``owner``'s spans; the pass's span index follows it."""
        idx = self._spanidx
        if idx is None:
            return fn(*args, **kw)
        before = idx.job_windows(owner)
        try:
            return fn(*args, **kw)
        finally:
            idx.changed(owner, before)

    def _admitted(self, job: Job, now: int) -> bool:
        if self.admit is None:
            return True
        self.settle()  # the gate may read anything
        return self.admit(job, now)

    def try_start(self, job: Job, now: int) -> bool:
        """Start ``job`` at ``now`` if the engine finds room; no reservation otherwise.

        A shape (size, walltime) that failed since the last release is not
        tried again: starts and reservations only take resources away.
        """
        if not self._admitted(job, now) or self.known_to_fail(job):
            return False
        if self.free(job.unit, now, job.walltime) >= job.size:
            shape = self.by_shape and job.unit == "node"
            d = self._deferred
            if d is not None and (not shape or now + job.walltime > d[1]):
                # the placement must see the reservation; a whole-node job that ends by its start
                # cannot meet it, and the tight fit counts it as the next span of its nodes
                self.settle()
            shape = shape and self._reserved
            vids = self._tight_fit(job, now) if shape else None
            if vids is not None and self._place_on(job, vids, now, reserve=False):
                self._started(job, now)
                return True
            r = self._match(job, now, "allocate")
            if r.ok:
                self.on_matched(job, r)
                self._started(job, now)
                return True
        self.failed(job)
        return False

    def known_to_fail(self, job: Job) -> bool:
        """A request no larger than ``job``'s failed to start since the last release (hook).

        Default: a shape (size, walltime, unit) at most ``job``'s failed.
        """
        size, wall, unit = job.size, job.walltime, job.unit
        for s, w, u in self._failed:
            if size >= s and wall >= w and u == unit:
                return True
        return False

    def failed(self, job: Job) -> None:
        """``job`` could not start now: remember it until resources come back (hook, see :meth:`released`)."""
        self._failed.append((job.size, job.walltime, job.unit))

    def start_or_reserve(self, job: Job, now: int) -> bool:
        """Start ``job`` now, else reserve it at its earliest start (True if it started).

        A whole-node reservation is placed on the nodes that free up first
        for its window, not on nodes idle now (:meth:`_reserve_on_freeing`):
        what is free now stays free for backfilling, as count-based EASY
        assumes.
        """
        if not self._admitted(job, now):
            return False  # held back by the admission gate (power): no reservation either
        self.settle()
        shape = self.by_shape and job.unit == "node"
        if shape and self._reserve_by_count(job, now):
            return job.resv_at is None
        r = self._match(job, now, "allocate_orelse_reserve")
        if not r.ok:
            return False
        if r.at == now:
            self.on_matched(job, r)
            self._started(job, now)
            return True
        self.resv_placed += 1
        if shape:
            self._reserve_on_freeing(job, r.at, now)
        self._set_resv(job, r.at)
        if job.first_resv is None:
            job.first_resv = r.at
        return False

    @property
    def _reserved(self) -> bool:
        return self._n_resv > 0

    def _tight_fit(self, job: Job, now: int) -> list[int] | None:
        """A backfilled whole-node job goes on the nodes reserved soonest after it ends (best fit in time).

        Nodes free for longer stay free for jobs that must run past a
        reservation, as count-based backfilling assumes (its short jobs do not
        use up the "extra" nodes).  None when no node is reserved after the
        job's window (the engine's own choice is as good).  O(nodes).
        """
        g = self.engine.graph
        tr = self.engine.traverser
        vspans, xspans = tr.vspans, tr.xspans
        other = self._not_bare()
        v_status, v_id = g.v_status, g.v_id
        end = now + job.walltime
        inf = float("inf")
        # a deferred reservation (try_start settles it unless the job ends by its start) is the
        # next span of its nodes
        d = self._deferred
        d_at, d_nodes = (d[1], set(d[2])) if d is not None else (inf, set())
        keyed = []
        for v in self._node_vertices():
            if v_status[v] != UP:
                continue
            check = v not in other  # a bare node is free during [now, end) iff no span meets it
            if not check and not self._node_free(v, now, job.walltime):
                continue
            nxt = inf  # its next span start at or after end
            ok = True
            for spans in (vspans[v], xspans[v]):
                if spans:
                    for sp in spans.values():
                        s0 = sp[0]
                        if check and s0 < end and sp[1] > now:
                            ok = False
                            break
                        if end <= s0 < nxt:
                            nxt = s0
                    if not ok:
                        break
            if ok:
                if v in d_nodes and end <= d_at < nxt:
                    nxt = d_at
                keyed.append((nxt, v_id[v], v))
        if len(keyed) < job.size:
            return None
        keyed.sort()
        if keyed[0][0] == inf:
            return None
        return [v for _n, _i, v in keyed[: job.size]]

    def _node_vertices(self) -> list[int]:
        """The graph's node vertices (``by_type``), kept until the graph's structure changes (its version)."""
        return self._nodes()[0]

    def _not_bare(self) -> set[int]:
        """Node vertices that are not bare whole nodes (size 1, no subtree aggregate).

        For a bare node "free during a window" is "no span of it meets the
        window", so the scans read its spans inline; the others go through
        :meth:`_node_free`.
        """
        return self._nodes()[1]

    def _nodes(self) -> tuple[list[int], set[int]]:
        g = self.engine.graph
        c = self._nodes_cache
        if c is None or c[0] is not g or c[1] != g.version:
            tr = self.engine.traverser
            col = tr.subplan.get(tr.dom) or []
            nodes = g.by_type("node")
            other = {v for v in nodes if g.v_size[v] != 1 or (v < len(col) and col[v] is not None)}
            c = self._nodes_cache = (g, g.version, nodes, other)
        return c[2], c[3]

    def _place_on(self, job: Job, vids: list[int], at: int, reserve: bool) -> bool:
        """Give ``job`` exactly the node vertices ``vids`` (and all below them) during its window at ``at``.

        The engine's update path (what Fluxion's ``update`` and a MatchGrow's
        receiving end use): O(vertices placed), no graph walk.  False (and
        nothing changed) if one of them is not free.
        """
        g = self.engine.graph
        kids = g.out.get("containment")
        items = []
        for v in vids:
            if kids is not None and not kids[v]:  # a leaf: the subtree is the vertex
                items.append((v, g.v_size[v], True))
            else:
                items.extend((d, g.v_size[d], True) for d in g.subtree(v, "containment"))
        self.matches += 1
        try:
            self._changing(job.jobid, self.engine._allocate_items, job.jobid, items, at, job.walltime, None, reserve)
        except (StateError, InputError):
            return False
        return True

    def _reserve_by_count(self, job: Job, now: int) -> bool:
        """Reserve a whole-node job that cannot start now without a graph walk (True if done).

        The root aggregate gives the earliest time ``R`` at which enough nodes
        are free by count (O(log spans)); counting is necessary, so no
        placement can start earlier.  If that many nodes are each free for
        the whole window at ``R``, the job is placed on them (those that free
        up first, idle ones last: see :meth:`_reserve_on_freeing`), O(nodes).
        Otherwise (nodes free by count but not each for the whole window) the
        engine's own earliest-fit walk decides (False).
        """
        if self.free(job.unit, now, job.walltime) >= job.size:
            return False  # it may start now: the engine places it
        p = self._root_plan
        i = p.index_of("node") if p is not None else None
        if i is None:
            return False
        counts = [0] * p.resources_len
        counts[i] = job.size
        at = p.avail_time_first(now, job.walltime, counts)
        if at is None or at <= now:
            return False
        busy, idle = self._reservable_nodes(now, at, job.walltime)
        if len(busy) + len(idle) < job.size:
            return False
        busy.sort()
        chosen = [v for _t, _i, v in busy[: job.size]]
        chosen += idle[: job.size - len(chosen)]
        if self.defer and self._deferred is None:
            # placed when something first reads the engine during the window (see _settle)
            self._deferred = (job, at, chosen)
        else:
            self.resv_placed += 1
            if not self._place_on(job, chosen, at, reserve=True):
                return False
        self._set_resv(job, at)
        if job.first_resv is None:
            job.first_resv = at
        return True

    def _reservable_nodes(self, now: int, at: int, wall: int) -> tuple[list[tuple[int, int, int]], list[int]]:
        """UP node vertices free during ``[at, at + wall)``: (busy, idle).

        ``idle``: also free during ``[now, at)``, in graph order; ``busy``:
        ``(free_from, id, vertex)`` with :meth:`_free_from`'s time.  One pass
        over the nodes and their spans; a node that is not a bare whole node
        (size 1, no subtree aggregate) goes through :meth:`_node_free`.
        """
        g = self.engine.graph
        tr = self.engine.traverser
        vspans, xspans = tr.vspans, tr.xspans
        other = self._not_bare()
        v_status, v_id = g.v_status, g.v_id
        end = at + wall
        busy: list[tuple[int, int, int]] = []
        idle: list[int] = []
        idx = self._spanidx
        if idx is None and self._scans >= 0:
            # a pass that scans the nodes again and again (conservative) reads them from an index;
            # an EASY pass (one reservation) keeps the plain scan, which costs less once
            self._scans += 1
            if self._scans > 2:
                idx = self._spanidx = SpanIndex(tr)
        for v in self._node_vertices():
            if v_status[v] != UP:
                continue
            if idx is not None and v not in other:
                # O(log spans) from the pass's index instead of the scan below
                last = idx.free_from(v, now, at, end)
                if last is None:
                    continue
                if last == now:
                    idle.append(v)
                else:
                    busy.append((last, v_id[v], v))
                continue
            if v in other:
                if not self._node_free(v, at, wall):
                    continue
                if self._node_free(v, now, at - now):
                    idle.append(v)
                else:
                    busy.append((self._free_from(v, now, at), v_id[v], v))
                continue
            # a bare whole node: free in the window iff no span meets it; it frees up at the last
            # end of its spans that meet [now, at) (idle if none)
            last = now
            ok = True
            for spans in (vspans[v], xspans[v]):
                if spans:
                    for sp in spans.values():
                        s0, s1 = sp[0], sp[1]
                        if s0 < end and s1 > at:
                            ok = False
                            break
                        if s0 < at and s1 > last:
                            last = s1
                    if not ok:
                        break
            if not ok:
                continue
            if last == now:
                idle.append(v)
            else:
                busy.append((last, v_id[v], v))
        return busy, idle

    def _node_free(self, v: int, at: int, duration: int) -> bool:
        """Node vertex ``v`` (and all below it) is free during ``[at, at + duration)``."""
        tr = self.engine.traverser
        g = self.engine.graph
        spans = tr.vspans[v]
        if spans:
            if g.v_size[v] == 1:  # a whole node: busy iff a span overlaps, O(spans)
                end = at + duration
                for sp in spans.values():
                    if sp[0] < end and sp[1] > at:
                        return False
            elif avail_during(spans, g.v_size[v], at, duration) < g.v_size[v]:
                return False
        xs = tr.xspans[v]
        if xs and overlaps(xs, at, duration):
            return False
        col = tr.subplan.get(tr.dom)
        p = col[v] if col is not None and v < len(col) else None
        if p is not None:
            for i in range(p.resources_len):
                if p.avail_resources_during(at, duration, i) < p.resource_total_at(i):
                    return False
        return True

    def _free_from(self, v: int, now: int, at: int) -> int:
        """When node ``v`` frees up before ``at``: the last end of its spans inside ``[now, at)``."""
        tr = self.engine.traverser
        ends = [now]
        for spans in (tr.vspans[v], tr.xspans[v]):
            if spans:
                ends.extend(sp[1] for sp in spans.values() if sp[0] < at and sp[1] > now)
        return max(ends)

    def _reserve_on_freeing(self, job: Job, at: int, now: int) -> None:
        """Move ``job``'s reservation at ``at`` off idle nodes onto nodes that free up by ``at``.

        Idle: free from ``now`` until ``at`` (a backfilled job of any length
        could use it).  The time stays ``at`` (it was the earliest for any
        nodes).  Candidates are nodes busy at some point before ``at`` and
        free for the whole window, the ones that free up first taken first.  O(nodes) per reservation; on any surprise the
        engine's own placement is kept (state as before this call).
        """
        eng = self.engine
        g = eng.graph
        tr = eng.traverser
        held = {v for v in tr.job_vertices(job.jobid) if g.v_type[v] == "node"}
        idle_held = [v for v in held if self._node_free(v, now, at - now)]
        if not idle_held:
            return
        cands = [
            v for v in self._node_vertices()
            if v not in held and g.v_status[v] == UP and not self._node_free(v, now, at - now)
            and self._node_free(v, at, job.walltime)
        ]  # fmt: skip
        if not cands:
            return
        cands.sort(key=lambda v: (self._free_from(v, now, at), g.v_id[v], v))
        swap = cands[: len(idle_held)]
        kept_idle = idle_held[: len(idle_held) - len(swap)]
        chosen = [v for v in held if v not in idle_held] + swap + kept_idle
        self._changing(job.jobid, eng.cancel, job.jobid)
        if self._place_on(job, chosen, at, reserve=True):
            return
        back = self._changing(job.jobid, eng.match, request_jobspec(job.unit, job.size, job.walltime),
                              op="allocate_orelse_reserve", jobid=job.jobid, at=now)  # fmt: skip
        if not back.ok or back.at != at:
            raise StateError(f"job {job.jobid}: could not restore its reservation at {at}", jobid=job.jobid)

    def drop_reservation(self, job: Job) -> None:
        if self._deferred is not None and self._deferred[0] is job:
            self._deferred = None  # never placed: nothing to give back to the engine
            self.released()
            self._set_resv(job, None)
        elif job.resv_at is not None:
            self.released()
            self._changing(job.jobid, self.engine.cancel, job.jobid)
            self._set_resv(job, None)

    def new_since_plan(self, now: int) -> list[Job] | None:
        """The jobs submitted since the last pass, if the rest of that pass's plan still holds; else None.

        The plan holds when, since the pass that made it, nothing started,
        ended, was cancelled or resized (the engine's spans are the same), no
        reservation has come due (all are after ``now``), no admission gate
        is set, and every new job ranks below every job the pass saw.  Then a
        pass rebuilt from scratch would make the same reservations on the
        same nodes (the same spans give the same earliest times; "idle until
        the reservation" and "free up first" read the same spans) and start
        none of the old jobs (they failed on the same spans, and a window
        that moves later only meets more of them); only the new jobs, taken
        in order after the old ones, remain to be placed.
        """
        if self._planned is None or self._planned[0] != self._epoch or self.admit is not None:
            return None
        order = self.ordered_pending()
        last_seq = self._planned[1]
        new = [j for j in order if j.seq > last_seq]
        old = len(order) - len(new)
        if any(j.seq > last_seq for j in order[:old]):
            return None
        if any(j.resv_at is not None and j.resv_at <= now for j in order[:old]):
            return None
        return new

    def plan_done(self) -> None:
        """A pass finished its plan: remember the state it was made on (see :meth:`new_since_plan`)."""
        self._planned = (self._epoch, self._seq)

    def schedule(self, now: int) -> list[Job]:
        """One pass of the policy at ``now``; returns the jobs started."""
        self.passes += 1
        self.pass_jobs += len(self._pending)
        self._scans = 0
        try:
            return self.policy.schedule(self, now)
        finally:
            self._spanidx = None
            self._scans = -1

    def next_wakeup(self, now: int) -> int | None:
        """The earliest reservation time after ``now`` (a pass is due then), or None."""
        ts = [j.resv_at for j in self._pending.values() if j.resv_at is not None and j.resv_at > now]
        return min(ts) if ts else None

    # ------------------------------------------------------------------ planning (evolving jobs)
    def plan(self, now: int, later: int) -> dict[int, int]:
        """Planned start of pending jobs in priority order, without starting any.

        Jobs are placed with ``allocate_orelse_reserve`` under temporary ids
        and removed again; held reservations count as planned.  Stops after
        ``later`` jobs that cannot start now (StartLater).  Returns job id ->
        planned start (``now`` for StartNow).
        """
        self.settle()
        out: dict[int, int] = {}
        temp: list[int] = []
        n_later = 0
        try:
            for job in self.ordered_pending():
                if job.resv_at is not None:
                    t = job.resv_at
                else:
                    js = request_jobspec(job.unit, job.size, job.walltime)
                    tid = _TEMP_BASE + job.jobid
                    r = self._changing(tid, self.engine.match, js, op="allocate_orelse_reserve", jobid=tid, at=now)
                    if not r.ok:
                        continue
                    temp.append(tid)
                    t = r.at
                out[job.jobid] = t
                if t > now:
                    n_later += 1
                    if n_later >= later:
                        break
        finally:
            for tid in temp:
                self._changing(tid, self.engine.cancel, tid)
        return out

    # ------------------------------------------------------------------ resizing
    def grow(self, job: Job, count: int, now: int, per_node_cores: int = 0) -> str:
        """Add ``count`` units to running ``job`` until its walltime end; returns the new resources (JGF).

        Raises :class:`BusyError` (then nothing changed).
        """
        if not job.running:
            raise StateError(f"job {job.jobid} is not running", jobid=job.jobid)
        self.settle()
        dur = job.planned_end - now
        if dur < 1:
            raise BusyError("the job's walltime is over", jobid=job.jobid)
        if self.free(job.unit, now, dur) < count:
            raise BusyError(f"fewer than {count} {job.unit}s free until the job's end", jobid=job.jobid)
        js = request_jobspec(job.unit, count, dur, per_node_cores)
        r = self._changing(job.jobid, self.engine.grow, job.jobid, js, fmt="jgf", now=now)
        self._epoch += 1
        job.record(now, job.size + count)
        return r.text

    def held(self, job: Job) -> list[str]:
        """Paths of the ``unit`` vertices the engine says ``job`` holds, newest (highest id) last."""
        eng = self.engine
        tr = eng.traverser
        g = eng.graph
        vs = [v for v in tr.job_vertices(job.jobid) if g.v_type[v] == job.unit]
        vs.sort(key=lambda v: (g.v_id[v], v))
        return [g.path(v, tr.dom) for v in vs]

    def shrink(self, job: Job, count: int, now: int, paths: list[str] | None = None) -> None:
        """Release ``count`` units of running ``job`` (the given paths, else its last ones)."""
        if count >= job.size:
            raise StateError(f"job {job.jobid} cannot shrink by {count} of its {job.size}", jobid=job.jobid)
        self.settle()
        if paths is None:
            paths = self.held(job)[-count:]
        self._changing(job.jobid, self.engine.shrink, job.jobid, paths=paths)
        self._epoch += 1
        self.released()
        job.record(now, job.size - count)
        self.dirty = True

    def undo_grow(self, job: Job, jgf: str, now: int, count: int) -> None:
        """Give back what a :meth:`grow` returned a moment ago."""
        self.settle()
        self._changing(job.jobid, self.engine.shrink, job.jobid, jgf=jgf)
        self._epoch += 1
        self.released()
        job.record(now, job.size - count)
        job.history.pop()
        job.history.pop()

    def set_adapting(self, job: Job, adapting: bool) -> None:
        job.state = ADAPTING if adapting else RUNNING
