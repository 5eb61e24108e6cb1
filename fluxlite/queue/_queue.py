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
from fluxlite.queue._job import ADAPTING, CANCELLED, DONE, PENDING, RUNNING, Job
from fluxlite.queue._request import request_jobspec
from fluxlite.queue.base import QueuePolicy

if TYPE_CHECKING:
    from fluxlite.api import Engine

__all__ = ["Queue"]

#: engine job ids of temporary placements (planning) start here
_TEMP_BASE = 1 << 40


class Queue:
    """Pending and running jobs of one engine, scheduled by one policy."""

    def __init__(
        self, engine: Engine, policy: QueuePolicy | str = "easy", reservation_depth: int | None = None
    ):
        from fluxlite.queue.policies import create_policy

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

    def free(self, unit: str, at: int, duration: int = 1) -> int:
        """Units of ``unit`` free during ``[at, at + duration)``: the engine's root aggregate, O(log spans)."""
        p = self._root_plan
        i = p.index_of(unit)
        if i is None:
            return 0
        return p.avail_resources_during(at, max(1, duration), i)

    def used(self, unit: str, at: int) -> int:
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
        """Resources came back: shapes that failed may fit now."""
        self._failed.clear()

    def _release(self, job: Job, early: bool = True) -> None:
        self.released()
        if job.jobid in self.engine.jobs:
            self.engine.cancel(job.jobid)
        if self._pending.pop(job.jobid, None) is not None:
            self._order = None
        job.resv_at = None
        if early:
            self.dirty = True

    # ------------------------------------------------------------------ used by policies
    def _started(self, job: Job, now: int) -> None:
        self._pending.pop(job.jobid, None)
        self._order = None
        job.resv_at = None
        job.state = RUNNING
        job.start = now
        job.record(now, job.size)
        for fn in self.on_start:
            fn(job, now)

    def _admitted(self, job: Job, now: int) -> bool:
        return self.admit is None or self.admit(job, now)

    def try_start(self, job: Job, now: int) -> bool:
        """Start ``job`` at ``now`` if the engine finds room; no reservation otherwise.

        A shape (size, walltime) that failed since the last release is not
        tried again: starts and reservations only take resources away.
        """
        if not self._admitted(job, now):
            return False
        size, wall = job.size, job.walltime
        for s, w, u in self._failed:
            if size >= s and wall >= w and u == job.unit:
                return False
        if self.free(job.unit, now, wall) >= size:
            js = request_jobspec(job.unit, size, wall)
            self.matches += 1
            r = self.engine.match(js, op="allocate", jobid=job.jobid, at=now)
            if r.ok:
                self._started(job, now)
                return True
        self._failed.append((size, wall, job.unit))
        return False

    def start_or_reserve(self, job: Job, now: int) -> bool:
        """Start ``job`` now, else give it a reservation at the earliest time (True if started)."""
        if not self._admitted(job, now):
            return False  # held back by the admission gate (power): no reservation either
        js = request_jobspec(job.unit, job.size, job.walltime)
        self.matches += 1
        r = self.engine.match(js, op="allocate_orelse_reserve", jobid=job.jobid, at=now)
        if not r.ok:
            return False
        if r.at == now:
            self._started(job, now)
            return True
        job.resv_at = r.at
        if job.first_resv is None:
            job.first_resv = r.at
        return False

    def could_improve(self, job: Job, now: int) -> bool:
        """Cheap test (root aggregate only) whether a held reservation might move earlier.

        True when the job could start now by count, or when the planner sees
        enough free units for its whole window before its reservation even
        with the reservation in place.  False may miss an improvement (then
        the reservation simply stays where it is: still a valid promise).
        """
        at = job.resv_at
        assert at is not None
        if at <= now or self.free(job.unit, now, job.walltime) >= job.size:
            return True
        p = self._root_plan
        counts = [0] * p.resources_len
        i = p.index_of(job.unit)
        if i is None:
            return True
        counts[i] = job.size
        t = p.avail_time_first(now, job.walltime, counts)
        return t is not None and t < at

    def replan(self, job: Job, now: int) -> bool:
        """Move a held reservation to the earliest time (True if the job started).

        The old slot is free when this runs, so the new time is never later,
        unless a job of higher priority took it first (ESP's Z jobs).
        """
        self.engine.cancel(job.jobid)
        self.released()
        job.resv_at = None
        return self.start_or_reserve(job, now)

    def drop_reservation(self, job: Job) -> None:
        if job.resv_at is not None:
            self.released()
            self.engine.cancel(job.jobid)
            job.resv_at = None

    def schedule(self, now: int) -> list[Job]:
        """One pass of the policy at ``now``; returns the jobs started."""
        self.passes += 1
        self.pass_jobs += len(self._pending)
        return self.policy.schedule(self, now)

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
                    r = self.engine.match(js, op="allocate_orelse_reserve", jobid=tid, at=now)
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
                self.engine.cancel(tid)
        return out

    # ------------------------------------------------------------------ resizing
    def grow(self, job: Job, count: int, now: int, per_node_cores: int = 0) -> str:
        """Add ``count`` units to running ``job`` until its walltime end; returns the new resources (JGF).

        Raises :class:`BusyError` (then nothing changed).
        """
        if not job.running:
            raise StateError(f"job {job.jobid} is not running", jobid=job.jobid)
        dur = job.planned_end - now
        if dur < 1:
            raise BusyError("the job's walltime is over", jobid=job.jobid)
        if self.free(job.unit, now, dur) < count:
            raise BusyError(f"fewer than {count} {job.unit}s free until the job's end", jobid=job.jobid)
        js = request_jobspec(job.unit, count, dur, per_node_cores)
        r = self.engine.grow(job.jobid, js, fmt="jgf", now=now)
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
        if paths is None:
            paths = self.held(job)[-count:]
        self.engine.shrink(job.jobid, paths=paths)
        self.released()
        job.record(now, job.size - count)
        self.dirty = True

    def undo_grow(self, job: Job, jgf: str, now: int, count: int) -> None:
        """Give back what a :meth:`grow` returned a moment ago."""
        self.engine.shrink(job.jobid, jgf=jgf)
        self.released()
        job.record(now, job.size - count)
        job.history.pop()
        job.history.pop()

    def set_adapting(self, job: Job, adapting: bool) -> None:
        job.state = ADAPTING if adapting else RUNNING
