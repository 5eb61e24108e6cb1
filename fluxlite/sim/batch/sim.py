"""The batch simulator: a workload through a queue on the real engine, on the shared kernel.

Events (all on :class:`fluxlite.sim.kernel.Kernel`): submissions, job ends,
evolving jobs' dynamic requests, ends of adaptations, corridor changes and
reservation times.  Each event asks for one scheduling pass at that
instant (coalesced: the pass runs after every event of the instant).  A
pass runs the dynamic iteration (or the queue policy), then the malleable
strategy; adaptations last ``adapt_s`` seconds (expand: resources are
taken at the start; shrink: given back at the end).

Progress model: a job has work left in [0, 1]; at size ``n`` it runs at
``1 / model.time(n)`` per second; a resize or grant changes the rate and
moves its end.  Utilisation is read from the engine's root aggregate.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from fluxlite.api import Engine
from fluxlite.queue import ADAPTING, DONE, RUNNING, Job, Queue
from fluxlite.queue.dynamic import DynamicScheduler
from fluxlite.queue.fairness import DfsConfig
from fluxlite.queue.malleable import MalleableStrategy, power_now
from fluxlite.sim.batch.model import TwoSpeedModel
from fluxlite.sim.batch.workloads import SimJob, Workload
from fluxlite.sim.kernel import Kernel

__all__ = ["BatchConfig", "BatchSim"]


@dataclass
class BatchConfig:
    queue: str = "easy"
    reservation_depth: int | None = None
    #: None: no malleable decisions (static); fpsma, perf or power
    malleable: str | None = None
    #: power strategy: consider waiting jobs (else running only)
    power_waiting: bool = True
    adapt_s: int = 5
    #: None: dynamic requests are not made (Static); else the fairness config
    dfs: DfsConfig | None = None
    policy: str = "first"
    check: bool = True
    #: 0: a pass at every event (Maui starts an iteration on each job or resource state change, evolving
    #: paper Section III-A); N > 0: passes only at multiples of N s (a scheduler polling its resource
    #: manager, Maui's RMPOLLINTERVAL; an ablation)
    sched_interval: int = 0


@dataclass
class _Run:
    sj: SimJob
    left: float = 1.0
    last: float = 0.0
    end_ev: Any = None
    dyn_i: int = 0


@dataclass
class BatchResult:
    summary: dict[str, Any]
    jobs: list[Job]
    util: list[tuple[float, int]]
    power: list[tuple[float, float, float, float]]
    capacity: int
    recount: list[str] = field(default_factory=list)


class BatchSim:
    def __init__(self, wl: Workload, cfg: BatchConfig) -> None:
        from fluxlite.readers.generate import generate_graph

        self.wl = wl
        self.cfg = cfg
        self.k = Kernel()
        # racks of 32 nodes on big machines: their aggregates prune full racks
        racks = wl.nodes // 32 if wl.nodes >= 128 and wl.nodes % 32 == 0 else 0
        per = 32 if racks else wl.nodes
        # whole-node workloads need no cores below the nodes (a third of the vertices to update)
        bare = wl.unit == "node" and wl.cores_per_node <= 1
        graph = generate_graph(
            racks=racks, nodes=per, sockets=0 if bare else 1, cores=0 if bare else wl.cores_per_node
        )
        self.engine = Engine(graph, policy=cfg.policy)
        self.q = Queue(self.engine, cfg.queue, cfg.reservation_depth)
        # the simulator reads the engine only through the queue (and at the end, when nothing waits)
        self.q.defer = True
        self.dyn = DynamicScheduler(self.q, cfg.dfs) if cfg.dfs is not None else None
        self.strategy: MalleableStrategy | None = None
        if cfg.malleable:
            self.strategy = MalleableStrategy(
                cfg.malleable, remaining=self._remaining, corridor=wl.corridor, waiting=cfg.power_waiting
            )
            self.strategy.install(self.q)
        self.runs: dict[int, _Run] = {sj.job.jobid: _Run(sj) for sj in wl.jobs}
        self._pass_due = False
        self.util: list[tuple[float, int]] = []
        self.power: list[tuple[float, float, float, float]] = []
        self.unit = wl.unit
        self.capacity = self.q.capacity(self.unit)
        self.sched_s = 0.0
        self.dyn_requests = 0
        #: instants an expand/shrink completed (a corridor violation ended then was restored by it)
        self.restores: set[float] = set()

    # ---------------------------------------------------------------- model
    def _rate(self, job: Job) -> float:
        return 1.0 / self.runs[job.jobid].sj.model.time(job.size)

    def _remaining(self, job: Job, n: int, now: int) -> float:
        r = self.runs[job.jobid]
        left = r.left - (now - r.last) * self._rate(job)
        return max(0.0, left) * r.sj.model.time(n) + self.cfg.adapt_s

    def _advance(self, job: Job, now: float) -> None:
        r = self.runs[job.jobid]
        r.left = max(0.0, r.left - (now - r.last) * self._rate(job))
        r.last = now

    def _schedule_end(self, job: Job) -> None:
        r = self.runs[job.jobid]
        if r.end_ev is not None:
            r.end_ev.cancel()
        end = math.ceil(r.last + r.left * r.sj.model.time(job.size) - 1e-6)
        end = min(max(end, math.ceil(r.last)), job.planned_end)  # the walltime is a hard limit
        r.end_ev = self.k.at(end, self._end, job)

    # ---------------------------------------------------------------- events
    def _submit(self, sj: SimJob) -> None:
        self.q.submit(sj.job, self.k.tick())
        self._want_pass()

    def _end(self, job: Job) -> None:
        now = self.k.tick()
        self.q.complete(job.jobid, now)
        self._sample()
        self._want_pass()

    def _dyn(self, job: Job) -> None:
        if self.dyn is None or job.state != RUNNING:
            return
        r = self.runs[job.jobid]
        now = self.k.tick()
        self._advance(job, now)
        self.dyn.dynget(job, r.sj.dyn_count, now)
        self.dyn_requests += 1
        self._want_pass()

    def _adapted(self, job: Job, new: int) -> None:
        now = self.k.tick()
        if job.state != ADAPTING:
            return
        self._advance(job, now)
        if new < job.size:
            self.q.shrink(job, job.size - new, now)
        self.q.set_adapting(job, False)
        self.restores.add(self.k.now)
        job.mtct = getattr(self.runs[job.jobid].sj.model, "mtct", lambda n: 0.0)(job.size)
        self._schedule_end(job)
        self._sample()
        self._want_pass()

    def _det_total(self, job: Job, now: int) -> None:
        """``det-total`` reading of a grant: the whole run takes DET, so the rest takes DET - elapsed."""
        r = self.runs[job.jobid]
        m = r.sj.model
        assert job.start is not None
        rest = max(1.0, m.t_dynamic - (now - job.start))
        r.sj.model = TwoSpeedModel(m.t_static, rest / r.left if r.left > 0 else m.t_dynamic, m.n0)

    def _want_pass(self) -> None:
        if not self._pass_due:
            self._pass_due = True
            n = self.cfg.sched_interval
            if n > 0:
                self.k.at(math.ceil(self.k.now / n - 1e-9) * n, self._pass)
            else:
                self.k.after(0, self._pass)

    def _started(self, job: Job, now: int) -> None:
        r = self.runs[job.jobid]
        r.last = now
        self._schedule_end(job)
        for f in r.sj.dyn_at:
            self.k.at(now + math.ceil(f * r.sj.model.time(job.size)), self._dyn, job)

    def _pass(self) -> None:
        self._pass_due = False
        now = self.k.tick()
        t = time.perf_counter()
        if self.dyn is not None:
            _started, decided = self.dyn.iterate(now)
            for req in decided:
                if req.granted:
                    self._advance(req.job, now)
                    if self.wl.notes.get("dyn_model") == "det-total":
                        self._det_total(req.job, now)
                    self._schedule_end(req.job)
                    # a granted job asks no more
                    self.runs[req.job.jobid].sj.dyn_at = ()
        else:
            self.q.schedule(now)
        if self.strategy is not None:
            for job, new in self.strategy.decide(self.q, now):
                self._advance(job, now)
                if new > job.size:
                    try:
                        self.q.grow(job, new - job.size, now)
                    except Exception:  # busy: the idle count moved under a reservation
                        continue
                    self._schedule_end(job)
                self.q.set_adapting(job, True)
                self.k.after(self.cfg.adapt_s, self._adapted, job, new)
        self.sched_s += time.perf_counter() - t
        wake = self.q.next_wakeup(now)
        if wake is not None and wake > now:
            self.k.at(wake, self._want_pass)
        self._sample()

    def _corridor_change(self) -> None:
        self._sample()
        self._want_pass()

    def _sample(self) -> None:
        now = self.k.now
        used = self.q.used(self.unit, self.k.tick())
        if self.util and self.util[-1][0] == now:
            self.util[-1] = (now, used)
        else:
            self.util.append((now, used))
        if self.wl.corridor is not None:
            lo, hi = self.wl.corridor.at(now)
            p = power_now(self.q.running(), self.capacity, self.wl.corridor.idle_w)
            if self.power and self.power[-1][0] == now:
                self.power[-1] = (now, p, lo, hi)
            else:
                self.power.append((now, p, lo, hi))

    # ---------------------------------------------------------------- run
    def run(self, progress: bool = False) -> BatchResult:
        self.q.on_start.append(self._started)
        for sj in self.wl.jobs:
            self.k.at(sj.job.submit, self._submit, sj)
        if self.wl.corridor is not None:
            for t0, _l, _u in self.wl.corridor.steps:
                self.k.at(t0, self._corridor_change)
        wall = time.perf_counter()
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=len(self.wl.jobs), unit="job", leave=False)
            self.q.on_start.append(lambda j, n: bar.update(1))
        self.k.run()
        if bar is not None:
            bar.close()
        wall = time.perf_counter() - wall
        recount = []
        if self.cfg.check:
            from fluxlite.check import recount_errors

            end = max((j.end or 0) for j in self.q.jobs.values())
            recount = recount_errors(self.engine, times=(0, end))
        return BatchResult(
            self._summary(wall), list(self.q.jobs.values()), self.util, self.power, self.capacity, recount
        )

    def _summary(self, wall: float) -> dict[str, Any]:
        jobs = list(self.q.jobs.values())
        done = [j for j in jobs if j.state == DONE]
        first = min(j.submit for j in jobs)
        last = max(j.end for j in done) if done else first
        span = max(1, last - first)
        area = 0.0
        for (t0, u), (t1, _u) in zip(self.util, self.util[1:]):
            area += u * (t1 - t0)
        waits = [j.start - j.submit for j in done]
        resp = [j.end - j.submit for j in done]
        # a violation (malleable paper, Section VI-C) is an excursion out of the corridor that the
        # scheduler does not restore by reconfiguring: one that ends when an expand/shrink completes
        # is restored; every excursion is counted in corridor_episodes
        viol, episodes, viol_s = 0, 0, 0.0
        inside = True
        for (t0, p, lo, hi), nxt in zip(self.power, [*self.power[1:], None]):
            if t0 >= last:  # after the last job: the machine is idle, nothing to schedule
                break
            bad = not (lo - 1e-6 <= p <= hi + 1e-6)
            if bad and inside:
                episodes += 1
                viol += 1
            if not bad and not inside and t0 in self.restores:
                viol -= 1
            if bad:
                viol_s += min(last, nxt[0] if nxt is not None else last) - t0
            inside = not bad
        return {
            "workload": self.wl.name,
            "queue": self.q.policy.name,
            "malleable": self.cfg.malleable or "static",
            "jobs": len(jobs),
            "completed": len(done),
            "makespan_s": span,
            "utilization": area / (self.capacity * span),
            "throughput_per_min": len(done) / (span / 60.0),
            "avg_wait_s": sum(waits) / len(waits) if waits else 0.0,
            "avg_response_s": sum(resp) / len(resp) if resp else 0.0,
            "dyn_requests": self.dyn_requests,
            "dyn_satisfied_jobs": sum(1 for j in jobs if j.grants > 0),
            "corridor_violations": viol,
            "corridor_episodes": episodes,
            "corridor_violation_s": viol_s,
            "adaptations": sum(max(0, len(j.history) - 1) for j in jobs),
            "sched_passes": self.q.passes,
            "sched_ms_per_queued_job": 1000.0 * self.sched_s / max(1, self.q.pass_jobs),
            "sched_s": self.sched_s,
            "wall_s": wall,
            "events": self.k.events,
        }
