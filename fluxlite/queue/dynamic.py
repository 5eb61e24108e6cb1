"""The scheduler iteration with evolving jobs' dynamic requests (Torque/Maui style).

An evolving job calls ``dynget(nodes, cores)`` to ask for more resources at
run time (one pending request per job: it is ``dynqueued`` while the
request waits) and ``dynfree(paths)`` to give back any subset of what it
holds.  Each iteration at ``now``:

1. plan the static jobs in priority order with reservations, without
   starting them: StartNow (start ``now``) and StartLater jobs;
2. for each dynamic request, first come first served: grow the job on idle
   resources until its walltime end (the engine's MatchGrow); if that
   worked, plan again and compute the delay of every StartNow job and of
   the first ``reservation_delay_depth`` StartLater jobs; ask the fairness
   policy; keep the grant (and account the delays) or undo it and reject;
3. run the queue policy (start, reserve, backfill).

A rejected request is not queued: the application may ask again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from fluxlite.errors import BusyError, StateError
from fluxlite.queue._job import DYNQUEUED, RUNNING, Job
from fluxlite.queue.fairness import DfsConfig, Fairness

if TYPE_CHECKING:
    from fluxlite.queue._queue import Queue

__all__ = ["DynRequest", "DynamicScheduler"]


@dataclass
class DynRequest:
    job: Job
    count: int
    per_node_cores: int = 0
    submitted: int = 0
    #: filled by the iteration: True granted, False rejected
    granted: bool | None = None
    delays: tuple[tuple[int, float], ...] = ()


class DynamicScheduler:
    """Queue + dynamic requests + fairness: one :meth:`iterate` per scheduling event."""

    def __init__(self, q: Queue, cfg: DfsConfig | None = None) -> None:
        self.q = q
        self.cfg = cfg or DfsConfig()
        self.fairness = Fairness(self.cfg)
        self.requests: list[DynRequest] = []
        #: (time, requester job id, granted, delays) for every decided request
        self.log: list[tuple[int, int, bool, tuple[tuple[int, float], ...]]] = []

    def dynget(self, job: Job, count: int, now: int, per_node_cores: int = 0) -> DynRequest:
        """Queue a dynamic request of ``job`` for ``count`` more units (one pending per job)."""
        if job.state == DYNQUEUED:
            raise StateError(f"job {job.jobid} already has a pending dynamic request", jobid=job.jobid)
        if job.state != RUNNING:
            raise StateError(f"job {job.jobid} is not running", jobid=job.jobid)
        if count < 1:
            raise StateError(f"job {job.jobid}: a dynamic request needs at least one unit", jobid=job.jobid)
        job.state = DYNQUEUED
        job.dyn_requests += 1
        req = DynRequest(job, count, per_node_cores, now)
        self.requests.append(req)
        return req

    def dynfree(self, job: Job, paths: list[str], now: int) -> None:
        """Release ``paths`` (any subset of what the job holds, not all of it)."""
        self.q.shrink(job, len(paths), now, paths=paths)

    def _delays(self, before: dict[int, int], after: dict[int, int], now: int) -> list[tuple[Job, float]]:
        out = []
        for jid, t0 in before.items():
            t1 = after.get(jid, t0)
            if t1 > t0:
                out.append((self.q.jobs[jid], float(t1 - t0)))
        return out

    def iterate(self, now: int) -> tuple[list[Job], list[DynRequest]]:
        """One scheduler iteration; returns (jobs started, requests decided)."""
        q = self.q
        decided: list[DynRequest] = []
        reqs, self.requests = self.requests, []
        depth = self.cfg.reservation_delay_depth
        if reqs:
            # requests compete for idle resources: reservations are planned again below
            for job in q.ordered_pending():
                q.drop_reservation(job)
        plan = q.plan(now, depth) if reqs else {}
        for req in reqs:
            job = req.job
            job.state = RUNNING
            if not job.running or job.planned_end - now < 1:
                req.granted = False
            else:
                try:
                    jgf = q.grow(job, req.count, now, req.per_node_cores)
                except BusyError:
                    req.granted = False
                else:
                    after = q.plan(now, depth)
                    delays = self._delays(plan, after, now)
                    if self.fairness.allows(job, delays, now):
                        self.fairness.record(job, delays)
                        req.granted = True
                        req.delays = tuple((j.jobid, d) for j, d in delays)
                        plan = after
                    else:
                        q.undo_grow(job, jgf, now, req.count)
                        req.granted = False
            if req.granted:
                job.grants += 1
            else:
                job.refusals += 1
            self.log.append((now, job.jobid, bool(req.granted), req.delays))
            decided.append(req)
        started = q.schedule(now)
        return started, decided
