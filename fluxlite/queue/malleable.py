"""Malleable jobs: size constraints and the expand/shrink strategies (Slurm style).

A malleable job runs between ``min_size`` and ``max_size`` at a size its
``constraint`` allows: ``pof2`` (powers of two), ``even``, ``odd``,
``ncube`` (cubes: 1, 8, 27, ...) or ``none``.  A strategy looks at the
queue after the static pass and returns adaptations ``(job, new size)``;
each is a pure expand or a pure shrink.  While any job is ADAPTING no new
decision is made (the caller applies adaptations and marks jobs).

``fpsma``  favour previously started malleable applications: expand the
           earliest-started first; shrink the latest-started first
``perf``   performance-aware: shrink the highest MTCT first (to start the
           highest-priority waiting job, only if enough units are found),
           expand the lowest MTCT first into idle units
``power``  keep the machine's power inside a corridor [l, u] that changes
           over time: the integer program of the spec, solved with
           SciPy's ``milp`` (HiGHS)

``remaining(job, n, now)`` (given by the caller, e.g. the simulator's
performance model) says how long the job would still run at size ``n``;
a job is never shrunk to a size at which it would overrun its walltime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fluxlite.errors import InputError
from fluxlite.queue._job import ADAPTING, Job

if TYPE_CHECKING:
    from fluxlite.queue._queue import Queue

__all__ = ["CONSTRAINTS", "STRATEGIES", "MalleableStrategy", "PowerCorridor", "allowed_sizes", "solve_power"]

CONSTRAINTS = ("none", "pof2", "even", "odd", "ncube")


def allowed_sizes(lo: int, hi: int, constraint: str = "none") -> list[int]:
    """Sizes in ``[lo, hi]`` the constraint allows, ascending."""
    if constraint not in CONSTRAINTS:
        raise InputError(f"unknown node constraint {constraint!r} (known: {', '.join(CONSTRAINTS)})")
    r = range(max(1, lo), hi + 1)
    if constraint == "pof2":
        return [n for n in r if n & (n - 1) == 0]
    if constraint == "even":
        return [n for n in r if n % 2 == 0]
    if constraint == "odd":
        return [n for n in r if n % 2 == 1]
    if constraint == "ncube":
        return [n for n in r if round(n ** (1 / 3)) ** 3 == n]
    return list(r)


Remaining = Callable[[Job, int, int], float]


@dataclass
class PowerCorridor:
    """Power bounds over time: ``[(from_time, lower W, upper W), ...]`` sorted by time."""

    steps: list[tuple[int, float, float]]
    idle_w: float = 71.0

    def at(self, t: float) -> tuple[float, float]:
        lo, hi = self.steps[0][1], self.steps[0][2]
        for t0, low, up in self.steps:
            if t >= t0:
                lo, hi = low, up
        return lo, hi


@dataclass
class MalleableStrategy:
    """Expand/shrink decisions; ``name`` is fpsma, perf or power (``waiting`` picks the power variant)."""

    name: str
    remaining: Remaining | None = None
    corridor: PowerCorridor | None = None
    #: power strategy: consider waiting jobs in the integer program (else running jobs only)
    waiting: bool = True
    solves: int = field(default=0)
    #: power strategy: (time, job id -> size chosen, waiting job picked or None) per feasible program
    decisions: list[tuple[int, dict[int, int], int | None]] = field(default_factory=list)
    _picked: Job | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.name not in STRATEGIES:
            raise InputError(f"unknown malleable strategy {self.name!r} (known: {', '.join(STRATEGIES)})")
        if self.name == "power" and self.corridor is None:
            raise InputError("the power strategy needs a power corridor")

    # ------------------------------------------------------------------ helpers
    def _fits(self, job: Job, n: int, now: int) -> bool:
        if self.remaining is None or job.start is None:
            return True
        return now + self.remaining(job, n, now) <= job.planned_end

    def _sizes(self, job: Job) -> list[int]:
        return allowed_sizes(job.min_size, job.max_size, job.constraint)

    def _order(self, jobs: list[Job], shrink: bool) -> list[Job]:
        if self.name == "perf":
            return sorted(jobs, key=lambda j: (-j.mtct, j.start or 0) if shrink else (j.mtct, j.start or 0))
        return sorted(jobs, key=lambda j: (j.start or 0, j.jobid), reverse=shrink)

    # ------------------------------------------------------------------ decisions
    def decide(self, q: Queue, now: int) -> list[tuple[Job, int]]:
        """Adaptations to make at ``now`` (none while any job is ADAPTING)."""
        running = q.running()
        if any(j.state == ADAPTING for j in running):
            return []
        mall = [j for j in running if j.malleable and j.state != "dynqueued"]
        if self.name == "power":
            return self._power(q, now, running, mall)
        pending = q.ordered_pending()
        unit = pending[0].unit if pending else (mall[0].unit if mall else "node")
        if pending:
            head = pending[0]
            need = head.size - q.free(unit, now, head.walltime)
            if need > 0:
                plan: list[tuple[Job, int]] = []
                for job in self._order(mall, shrink=True):
                    sizes = [n for n in self._sizes(job) if n < job.size and self._fits(job, n, now)]
                    new = job.size
                    while need > 0 and sizes:
                        nxt = sizes.pop()  # next lower allowed size
                        need -= new - nxt
                        new = nxt
                    if new != job.size:
                        plan.append((job, new))
                    if need <= 0:
                        return plan
        out: list[tuple[Job, int]] = []
        for job in self._order(mall, shrink=False):
            idle = q.free(job.unit, now, max(1, job.planned_end - now))
            if idle <= 0:
                continue
            bigger = [n for n in self._sizes(job) if job.size < n <= job.size + idle]
            if bigger:
                out.append((job, bigger[-1]))
                return out  # one expansion per decision: the next sees the new idle count
        return out

    def install(self, q: Queue) -> None:
        """Put the power gate in front of the queue's starts (power strategy only)."""
        if self.name == "power":
            q.admit = self._admit(q)

    def _power(self, q: Queue, now: int, running: list[Job], mall: list[Job]) -> list[tuple[Job, int]]:
        cor = self.corridor
        assert cor is not None
        lo, hi = cor.at(now)
        total = q.capacity("node")
        p = power_now(running, total, cor.idle_w)
        self._picked = None  # a pick the last pass could not start is void
        if lo <= p <= hi:
            return []
        cands: list[Job | None] = list(q.ordered_pending()) if self.waiting else []
        cands.append(None)
        for j in cands:
            if j is not None and j.size > total:
                continue
            sol = self._solve(running, mall, j, total, lo, hi, now)
            self.solves += 1
            if sol is not None:
                self._picked = j  # its start is admitted once the redistribution is done
                self.decisions.append((now, {job.jobid: n for job, n in sol.items()}, j.jobid if j else None))
                return [(job, n) for job, n in sol.items() if n != job.size]
        return []

    def _admit(self, q: Queue) -> Callable[[Job, int], bool]:
        cor = self.corridor
        assert cor is not None

        def admit(job: Job, now: int) -> bool:
            if self._picked is not None:  # reset by the next decision
                return job is self._picked
            _lo, hi = cor.at(now)
            p = power_now(q.running(), q.capacity("node"), cor.idle_w)
            return p + job.size * (job.pmax - cor.idle_w) <= hi

        return admit

    def _solve(
        self, running: list[Job], mall: list[Job], j: Job | None, total: int, lo: float, hi: float, now: int
    ) -> dict[Job, int] | None:
        fixed = [r for r in running if r not in mall]
        choices = []
        for job in mall:
            sizes = [n for n in self._sizes(job) if n >= job.size or self._fits(job, n, now)]
            choices.append((job, sizes or [job.size]))
        m = j.size if j is not None else 0
        pj = (j.pmin, j.pmax) if j is not None else (0.0, 0.0)
        return solve_power(
            [(s, job.pmin, job.pmax, job.size) for job, s in choices],
            nodes_free=total - sum(r.size for r in fixed) - m,
            lower=lo - sum(r.size * r.pmin for r in fixed) - m * pj[0],
            upper=hi - sum(r.size * r.pmax for r in fixed) - m * pj[1],
            idle_w=self.corridor.idle_w if self.corridor else 0.0,
            jobs=[job for job, _ in choices],
        )


def power_now(running: Sequence[Job], total_nodes: int, idle_w: float) -> float:
    """Watts drawn now: each running job's size x its per-node power, idle nodes at ``idle_w``."""
    used = sum(j.size for j in running)
    return sum(j.size * j.pmax for j in running) + (total_nodes - used) * idle_w


def solve_power(
    choices: list[tuple[list[int], float, float, int]],
    nodes_free: int,
    lower: float,
    upper: float,
    idle_w: float,
    jobs: list[Job] | None = None,
) -> dict | None:
    """The power program: pick a size per malleable job and the idle nodes.

    ``choices``: per job (allowed sizes, pmin, pmax, current size).  Variables
    x[i,s] in {0,1} (job i runs at size s), k_idle integer.  Minimise
    ``k_idle * idle_w`` (plus 1e-3 per node changed, to prefer fewer moves)
    subject to sum_s x[i,s] = 1, sum s x + k_idle = nodes_free,
    sum s*pmin_i x + k_idle*idle_w >= lower, sum s*pmax_i x + k_idle*idle_w <= upper.
    Returns {job (or index): size}, or None if infeasible.  SciPy ``milp`` (HiGHS).
    """
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp

    if nodes_free < 0:
        return None
    idx = []
    for i, (sizes, _a, _b, _c) in enumerate(choices):
        idx.extend((i, s) for s in sizes)
    nv = len(idx) + 1  # + k_idle
    c = np.zeros(nv)
    for k, (i, s) in enumerate(idx):
        c[k] = 1e-3 * abs(s - choices[i][3])
    c[-1] = idle_w if idle_w > 0 else 1.0
    rows, lbs, ubs = [], [], []
    for i in range(len(choices)):
        row = np.zeros(nv)
        for k, (ii, _s) in enumerate(idx):
            if ii == i:
                row[k] = 1
        rows.append(row)
        lbs.append(1)
        ubs.append(1)
    row = np.zeros(nv)
    for k, (_i, s) in enumerate(idx):
        row[k] = s
    row[-1] = 1
    rows.append(row)
    lbs.append(nodes_free)
    ubs.append(nodes_free)
    pmin_row = np.zeros(nv)
    pmax_row = np.zeros(nv)
    for k, (i, s) in enumerate(idx):
        pmin_row[k] = s * choices[i][1]
        pmax_row[k] = s * choices[i][2]
    pmin_row[-1] = pmax_row[-1] = idle_w
    rows += [pmin_row, pmax_row]
    lbs += [lower, -np.inf]
    ubs += [np.inf, upper]
    res = milp(
        c,
        constraints=LinearConstraint(np.array(rows), lbs, ubs),
        integrality=np.ones(nv),
        bounds=Bounds(np.zeros(nv), np.concatenate([np.ones(nv - 1), [max(0, nodes_free)]])),
    )
    if res.status != 0 or res.x is None:
        return None
    out: dict = {}
    for k, (i, s) in enumerate(idx):
        if res.x[k] > 0.5:
            out[jobs[i] if jobs is not None else i] = s
    out["idle"] = round(res.x[-1])
    if jobs is not None:
        out.pop("idle")
    return out


STRATEGIES = ("fpsma", "perf", "power")
