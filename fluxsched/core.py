"""The scheduler's decisions for one Flux instance, without Flux: what the broker module asks.

:class:`SchedulerCore` turns RFC 27 events (hello, alloc, free, cancel,
prioritize, expiration, resource updates) into engine operations and
answers (R to commit, denials with their reason, annotations).  Every
question about resources goes to one :class:`~fluxlite.api.Engine`; the
pending queue is :class:`fluxlite.queue.Queue` (FCFS, EASY, conservative,
hybrid) through :class:`FluxQueue`, which matches each job's own jobspec.

Time: the engine's planner runs in whole seconds since the core started
(``now()``); R carries wall-clock times.  A job with a time limit of ``d``
seconds holds its resources in the planner for ``ceil(d) + 1`` seconds
(start times are rounded down), a job without one until the end of the
planner's horizon.  A job still running when its planned end comes (its
free is on the way) is extended by :data:`OVERRUN_GRACE` seconds so nothing
is ever given out twice.
"""

from __future__ import annotations

import dataclasses
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from fluxlite.errors import FluxliteError, InputError, StateError, UnsatisfiableError
from fluxlite.jobspec import parse_jobspec
from fluxlite.queue import Job, Queue
from fluxsched.config import Settings
from fluxsched.rset import down_ranks, engine_from_R, rank_node, rv1_of, without_ranks

__all__ = ["OVERRUN_GRACE", "Alloc", "FluxQueue", "Running", "SchedulerCore"]

#: seconds a job that outlives its planned end is extended by (its free is on the way)
OVERRUN_GRACE = 30
_NOTE_MAX = 400


def _bounded(text: str, n: int = _NOTE_MAX) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


class FluxQueue(Queue):
    """A :class:`~fluxlite.queue.Queue` whose jobs carry their own jobspec (``job.extra["js"]``).

    Through the queue's hooks: a start or reservation matches the job's real
    request (:meth:`job_request`), a started job's R (``rv1_nosched``) is
    kept in ``job.extra["R"]`` until the module has sent it
    (:meth:`on_matched`), and a request that failed is not tried again until
    resources come back, per distinct request (:meth:`known_to_fail`).
    """

    match_format = "rv1_nosched"
    by_shape = False

    def __init__(self, engine: Any, policy: str = "fcfs", reservation_depth: int | None = None) -> None:
        super().__init__(engine, policy, reservation_depth)
        self._failed_sigs: set[str] = set()

    def released(self) -> None:
        super().released()
        self._failed_sigs.clear()

    def reprioritize(self, jobid: int, priority: int) -> None:
        """Change a pending job's priority; every reservation is re-planned in the new order."""
        job = self.get(jobid)
        job.priority = priority
        self._order = None
        for other in self.ordered_pending():
            self.drop_reservation(other)
        self.dirty = True

    def job_request(self, job: Job) -> Any:
        return job.extra["js"]

    def on_matched(self, job: Job, result: Any) -> None:
        job.extra["R"] = result.text

    def known_to_fail(self, job: Job) -> bool:
        return job.extra["sig"] in self._failed_sigs

    def failed(self, job: Job) -> None:
        self._failed_sigs.add(job.extra["sig"])


@dataclass
class Running:
    """A running job as the core plans it (the resources themselves are the engine's)."""

    flux_id: int
    eid: int
    #: planner start (core seconds) and planned length (None: to the horizon)
    at: int
    dur: int | None


@dataclass
class Alloc:
    """A decision for one pending alloc request."""

    flux_id: int
    #: "success" (with R), "deny" (with note) or "annotate" (with annotations)
    kind: str
    R: dict[str, Any] | None = None
    note: str = ""
    annotations: dict[str, Any] | None = None


def _cores(resources: Iterable[Any], mult: int = 1) -> int:
    n = 0
    for r in resources:
        m = mult * max(1, r.count.min)
        if r.type == "core":
            n += m
        n += _cores(r.with_, m)
    return n


def _summary(R: Mapping[str, Any]) -> str:
    parts = []
    for ent in R.get("execution", {}).get("R_lite", []):
        kids = ",".join(f"{t}[{ids}]" for t, ids in ent.get("children", {}).items())
        parts.append(f"rank[{ent['rank']}]/{kids}")
    return " ".join(parts)


class SchedulerCore:
    """Engine + queue for one instance's R, driven by RFC 27 events."""

    def __init__(
        self,
        R: Mapping[str, Any],
        settings: Settings | None = None,
        clock: Callable[[], float] = time.time,
        up: Iterable[int] | None = None,
    ) -> None:
        self.settings = settings or Settings()
        filters = self.settings.prune_filters
        if "ALL:core" not in filters.replace(" ", "").split(","):
            filters = f"{filters},ALL:core" if filters else "ALL:core"  # the queue counts cores
        self.engine = engine_from_R(R, policy=self.settings.policy, prune_filters=filters)
        #: the same resources, never allocated: "could this job ever run here?" (the planner's
        #: satisfiability looks at the end of the horizon, where jobs without a time limit still are)
        self._feasibility = engine_from_R(R, policy=self.settings.policy, prune_filters=filters)
        #: request signature -> why it can never run (None: it can); cleared when resources leave
        self._feasible: dict[str, str | None] = {}
        #: the planner span of a job without a time limit
        self.unlimited = self.engine.traverser.graph_end // 2
        self.queue = FluxQueue(self.engine, self.settings.queue_policy, self.settings.reservation_depth)
        self.clock = clock
        self.t0 = math.floor(clock())
        #: the instance's own expiration (0: none), from R or resource.acquire
        self.expiration = float(R.get("execution", {}).get("expiration", 0) or 0)
        self.pending: dict[int, Job] = {}
        self.running: dict[int, Running] = {}
        self._next_eid = 1
        self.denied = 0
        self.started = 0
        if up is not None:
            upset = set(up)
            self.set_down([r for r in self.engine.graph.by_rank if r >= 0 and r not in upset])

    # ----------------------------------------------------------------- time
    def now(self) -> int:
        return max(0, int(self.clock() - self.t0))

    def _eid(self) -> int:
        e = self._next_eid
        self._next_eid += 1
        return e

    # ----------------------------------------------------------------- resources
    def _mark(self, ranks: Iterable[int], up: bool) -> None:
        for r in ranks:
            v = rank_node(self.engine, r)
            if v is not None:
                self.engine.traverser.mark(v, up)
        if up:
            self.queue.released()
            self.queue.dirty = True

    def set_up(self, ranks: Iterable[int]) -> None:
        self._mark(ranks, True)

    def set_down(self, ranks: Iterable[int]) -> None:
        self._mark(ranks, False)

    def shrink(self, ranks: Iterable[int]) -> None:
        """Ranks left the instance: their vertices go (a running job there loses them)."""
        have = [r for r in ranks if r in self.engine.graph.by_rank]
        if have:
            self._drop_reservations()
            self.engine.remove_subgraph(ranks=have, force=True)
            self._feasibility.remove_subgraph(ranks=have, force=True)
            self._feasible.clear()
            for fid, rec in list(self.running.items()):
                if rec.eid not in self.engine.jobs:
                    del self.running[fid]

    # ----------------------------------------------------------------- jobs
    def _parse(self, jobspec: Mapping[str, Any] | str) -> tuple[Any, float]:
        text = jobspec if isinstance(jobspec, str) else json.dumps(jobspec)
        js = parse_jobspec(text, source="jobspec")
        duration = float(js.duration or 0.0)
        # no time limit: half the planner's horizon, not the engine's own duration 0 (the rest of
        # the window): a span to the window's end could not be reserved later than now, and the
        # satisfiability check at the window's end would then see later busy jobs as unsatisfiable
        eng_dur = math.ceil(duration) + 1 if duration > 0 else self.unlimited
        return dataclasses.replace(js, duration=eng_dur), duration

    def infeasible(self, jobspec: Mapping[str, Any] | str) -> str | None:
        """Why this jobspec can never run here (one line), or None when it could."""
        try:
            js, _ = self._parse(jobspec)
        except FluxliteError as exc:
            return _bounded(f"invalid jobspec: {exc}")
        return self._infeasible(js)

    def _infeasible(self, js: Any) -> str | None:
        sig = self._sig(js)
        if sig in self._feasible:
            return self._feasible[sig]
        why = self._why_not(js)
        if len(self._feasible) >= 4096:
            self._feasible.clear()
        self._feasible[sig] = why
        return why

    @staticmethod
    def _sig(js: Any) -> str:
        """Two jobspecs with one signature ask for the same resources for the same time."""
        return json.dumps([[r.to_dict() for r in js.resources], js.duration, repr(js.constraint)], sort_keys=True)

    def _why_not(self, js: Any) -> str | None:
        if self._feasibility.satisfiable(js):
            return None
        g = self._feasibility.graph
        counts = {t: len(g.by_type(t)) for t in ("node", "core", "gpu")}
        have = ", ".join(f"{n} {t}s" for t, n in counts.items() if n)
        what = "request"
        if js.constraint is not None:
            what = "request with its constraints"
        return f"unsatisfiable {what}: this instance has {have}"

    def submit(self, flux_id: int, priority: int, jobspec: Mapping[str, Any] | str) -> str | None:
        """Queue an alloc request; returns the denial note when it can never run (nothing queued)."""
        if flux_id in self.pending or flux_id in self.running:
            raise StateError(f"job {flux_id} is already known")
        try:
            js, duration = self._parse(jobspec)
            why = self._infeasible(js)
        except FluxliteError as exc:
            why = _bounded(f"invalid jobspec: {exc}")
        if why is not None:
            self.denied += 1
            return why
        sig = self._sig(js)
        cores = max(1, _cores(js.resources))
        walltime = int(js.duration)
        job = Job(jobid=self._eid(), size=cores, walltime=walltime, unit="core", priority=int(priority))
        job.extra.update(js=js, sig=sig, duration=duration, flux_id=flux_id, t_est=None)
        try:
            self.queue.submit(job, self.now())
        except UnsatisfiableError as exc:
            self.denied += 1
            return _bounded(str(exc))
        self.pending[flux_id] = job
        return None

    def cancel(self, flux_id: int) -> bool:
        """Drop a pending request (True when it was pending)."""
        job = self.pending.pop(flux_id, None)
        if job is None:
            return False
        self.queue.cancel(job.jobid, self.now())
        return True

    def prioritize(self, jobs: Iterable[Iterable[int]]) -> None:
        for item in jobs:
            fid, prio = list(item)[:2]
            job = self.pending.get(int(fid))
            if job is not None and job.priority != int(prio):
                self.queue.reprioritize(job.jobid, int(prio))

    def hello(self, flux_id: int, R: Mapping[str, Any], free_ranks: Iterable[int] = ()) -> None:
        """A job that was running before this scheduler started: allocate exactly its R again."""
        drop = list(free_ranks)
        if drop:
            R = without_ranks(R, drop)
        ex = R.get("execution", {})
        exp = float(ex.get("expiration", 0) or 0)
        now_wall = self.clock()
        eid = self._eid()
        dur = None if exp <= 0 else max(1, math.ceil(exp - now_wall) + 1)
        at = self.now()
        self.engine.update_allocate(
            eid, json.dumps({"version": 1, "execution": ex}), format="rv1exec", at=at,
            duration=self.unlimited if dur is None else dur, fmt=None,
        )
        self.running[flux_id] = Running(flux_id, eid, at, dur)

    def free(self, flux_id: int, R: Mapping[str, Any] | None, final: bool) -> None:
        """Resources of a running job came back (part of them unless ``final``)."""
        rec = self.running.get(flux_id)
        if rec is None:
            return
        now = self.now()
        if not final:
            if R is not None and rec.eid in self.engine.jobs:
                self.engine.partial_cancel(rec.eid, json.dumps(R), "rv1exec")
        else:
            del self.running[flux_id]
            if rec.eid in self.queue.jobs:
                self.queue.complete(rec.eid, now)
            elif rec.eid in self.engine.jobs:
                self.engine.remove_job(rec.eid)
        self.queue.released()
        self.queue.dirty = True

    def _span(self, dur: int | None) -> int:
        return self.unlimited if dur is None else dur

    def _drop_reservations(self) -> None:
        for job in self.queue.ordered_pending():
            self.queue.drop_reservation(job)

    def _respan(self, rec: Running, dur: int | None) -> None:
        """Hold a running job's resources for ``dur`` seconds from its start (None: the horizon)."""
        eng = self.engine
        R = rv1_of(eng, vertices=eng.traverser.job_vertices(rec.eid))
        if not R["execution"]["R_lite"]:
            return
        text = json.dumps(R)
        self._drop_reservations()
        eng.remove_job(rec.eid)
        try:
            eng.update_allocate(rec.eid, text, format="rv1exec", at=rec.at, duration=self._span(dur), fmt=None)
        except FluxliteError:
            eng.update_allocate(
                rec.eid, text, format="rv1exec", at=rec.at, duration=self._span(rec.dur), fmt=None
            )
            raise
        if rec.eid in self.queue.jobs and dur is not None:
            self.queue.jobs[rec.eid].walltime = dur
        rec.dur = dur

    def set_expiration(self, flux_id: int, expiration: float) -> None:
        """A running job's time limit changed (``sched.expiration``): re-plan its span."""
        rec = self.running.get(flux_id)
        if rec is None:
            raise InputError(f"job {flux_id} is not running")
        if expiration < 0 or not math.isfinite(expiration):
            raise InputError(f"invalid expiration {expiration}")
        dur = None if expiration == 0 else max(1, math.ceil(expiration - self.t0) + 1 - rec.at)
        self._respan(rec, dur)
        self.queue.released()
        self.queue.dirty = True

    # ----------------------------------------------------------------- passes
    def _extend_overruns(self, now: int) -> None:
        for rec in list(self.running.values()):
            if rec.dur is not None and rec.at + rec.dur <= now + 1:
                self._respan(rec, now + OVERRUN_GRACE - rec.at)

    def schedule(self) -> list[Alloc]:
        """One pass: the jobs that start (with their R) and the pending jobs whose estimate changed."""
        now = self.now()
        self._extend_overruns(now)
        out: list[Alloc] = []
        wall = self.clock()
        for job in self.queue.schedule(now):
            fid = job.extra["flux_id"]
            del self.pending[fid]
            unlimited = job.extra["duration"] <= 0
            self.running[fid] = Running(fid, job.jobid, now, None if unlimited else int(job.walltime))
            R = json.loads(job.extra.pop("R"))
            ex = R["execution"]
            ex["starttime"] = wall
            d = job.extra["duration"]
            if d > 0:
                ex["expiration"] = wall + d
            else:
                ex["expiration"] = self.expiration if self.expiration > 0 else 0.0
            sched: dict[str, Any] = {"resource_summary": _summary(R)}
            if job.extra["t_est"] is not None:
                sched["t_estimate"] = None
            self.started += 1
            out.append(Alloc(fid, "success", R=R, annotations={"sched": sched}))
        for job in self.queue.ordered_pending():
            est = None if job.resv_at is None else float(self.t0 + job.resv_at)
            if est != job.extra["t_est"]:
                job.extra["t_est"] = est
                out.append(Alloc(job.extra["flux_id"], "annotate", annotations={"sched": {"t_estimate": est}}))
        return out

    def next_wakeup(self) -> float | None:
        """Seconds until a pass is due without any event (a reservation's time, a planned end)."""
        now = self.now()
        ts = []
        t = self.queue.next_wakeup(now)
        if t is not None:
            ts.append(t)
        ends = [rec.at + rec.dur for rec in self.running.values() if rec.dur is not None]
        if ends and self.pending:
            ts.append(min(ends))
        if not ts:
            return None
        return max(0.0, self.t0 + min(ts) - self.clock())

    # ----------------------------------------------------------------- status
    def status(self) -> dict[str, Any]:
        """``sched.resource-status``: all, allocated and down resources, read from the engine."""
        eng = self.engine
        tr = eng.traverser
        alloc: list[int] = []
        for rec in self.running.values():
            alloc.extend(tr.job_vertices(rec.eid))
        return {
            "all": rv1_of(eng, expiration=self.expiration),
            "allocated": rv1_of(eng, vertices=alloc),
            "down": rv1_of(eng, ranks=down_ranks(eng)),
        }

    def stats(self) -> dict[str, Any]:
        return {
            "pending": len(self.pending),
            "running": len(self.running),
            "started": self.started,
            "denied": self.denied,
            "passes": self.queue.passes,
            "matches": self.queue.matches,
            "queue-policy": self.settings.queue_policy,
            "policy": self.settings.policy,
            "nodes-up": self.engine.traverser.nodes_up,
            "now": self.now(),
        }
