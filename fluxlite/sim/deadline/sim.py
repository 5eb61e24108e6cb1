"""The deadline simulator: one virtual clock (the shared SimPy kernel) driving the engine.

One run = one trace, one strategy, one communication style on one machine.
Each rule names its source in the journal paper (``deadline-static-vs-leak-journal.txt``;
"conference" = ``deadline-leak-conference.txt``) or says the paper is silent.

* **Static strategies** (``count``, ``hilbert``, ``manhattan``) decide at
  submission (section 3: "the check ... is performed at the time the job
  request is submitted"): the earliest start ``t >= max(now,
  earliest_start)`` such that ``t + requested <= deadline`` and the strategy
  finds enough whole nodes free over ``[t, t + requested)`` on the engine's
  planner; candidate times are the earliest start and then the ends of the
  windows already planned (figures 6 and 8, "the start time is increased in
  increments determined by the change in the occupancy state of all other
  jobs").  None: the job is **rejected**.  Otherwise it is **accepted**,
  the nodes are reserved and the job starts at ``t``.  ``requested`` is the
  runtime (figures 6 and 8 reserve ``t_runtime``; a margin is an ablation).
  Trying only the earliest start (``static_shift="none"``) is an ablation: it
  is one reading of the count-only figures of section 5.1 ("the first step
  of the resource allocation ... line 0"), which the paper does not define
  further.  Manhattan's growth per figure 8's pseudocode read literally
  (``manhattan_growth="strict"``: the distance-minimal neighbour is chosen
  before its freeness is checked, and a busy one ends the growth) is an
  ablation; the default follows the text of section 3.2 (free neighbours
  first).  ``first-seed`` grows from the first free node only and, when it
  runs out, moves to the next start time (figure 8, lines 19-23, where the
  text instead tries the next first node); ``strict-first-seed`` reads the
  whole pseudocode literally; ``no-polish`` drops this code's local search
  (the paper describes none).
* **Static cancellation**: "when the job is finished, or when the specified
  end time of the job is reached, the computing resources are released"
  (section 3.2): a job still running at the end of its reservation loses
  its nodes there and cannot finish: it counts as **cancelled**
  (``walltime_kills``).  The paper's simulator also cancels at the deadline
  (section 5); a reservation never passes the deadline, so the reservation
  end comes first.  Letting such a job run on until its deadline would need
  nodes the paper says are released: not modelled.
* **Leak strategies** (``leak``, ``leak-noncontig``): accepted at submission
  without a check (conference section 4, "the job is accepted - no further
  check is performed"); **the one-node check is made at the job's earliest
  start** ("no advance reservation ... the job is started at the earliest
  possible time", section 4.1): the first free node in snake order from an
  entry node that changes from job to job (figures 10 and 11); none: the job
  is **rejected** (figure 10, line 7) - it does not wait.  **"Free"** is a
  node with a free core: the journal says "an empty compute node"
  (section 4.1) but the conference paper "an empty compute node or CPU core"
  and the simulator "search[es] for a new CPU core" at each fork
  (section 5); the empty-node reading is the ablation ``leak_start="empty"``.
  Then the job is placed process by process (one process = one core,
  allocated on the engine with a window up to the deadline; a join shrinks
  the job by its core at once, section 4.1 and figure 12).  Initial
  processes: breadth-first over free neighbours (figure 11).  A fork takes
  a free core on its parent's node, then on a neighbour of the parent's
  node, then on a neighbour of any of the job's nodes (section 4.1);
  failing that the contiguous leak oversubscribes the parent's core ("the
  new process is started on the node of the creating process", section 4.1)
  and the non-contiguous leak takes the next free node in snake order (a new
  region, section 4.2).  This rule places **every fork of every type**:
  "the search for a new CPU core is performed when a process invokes a fork
  system call" (section 5), and sections 4.1-4.2 describe one search for
  all process creations.  Table 1 calls type-2 creation "dynamic on local
  nodes", which under a static partition means the job's reserved nodes;
  the paper does not say it restricts the leak's search.  Keeping type-2
  forks on the job's own nodes under the leak (then oversubscribing) is the
  ablation ``type2_forks="local"`` (this code's earlier rule).
* A leak job still running at its **deadline is cancelled** ("the
  termination of the job in case the deadline has been reached (canceled
  job)", section 5); one whose last phase ends by its deadline is
  **completed**.
* The communication model (:mod:`fluxlite.sim.deadline.program`): the paper
  says messages cost more with distance and with load on the links
  (sections 4.2 and 5.2) but gives no formula: the form and constants are
  this code's (ablations: ``gamma=0``, no link load; ``beta=0``, no hop
  cost).

Metrics (:class:`RunResult`): jobs, accepted, rejected, cancelled,
completed (before the deadline), utilization (engine-held core-seconds over
cores x makespan), compactness (mean over started jobs of the sum of
pairwise Manhattan distances between the nodes of the job's partition,
averaged over its phases), oversubscribed processes, events.
"""

from __future__ import annotations

import gc
import math
import time
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from fluxlite.errors import BusyError, FluxliteError, InputError, MatchError
from fluxlite.sim.deadline.placement import DYNAMIC, STATIC, STRATEGIES, Machine, make_strategy, snake_order
from fluxlite.sim.deadline.program import COMM_STYLES, LOOP_PROCESSES, CommModel, Program, program_for
from fluxlite.sim.deadline.workload import DeadlineJob
from fluxlite.sim.kernel import Kernel

__all__ = ["RunResult", "Stopped", "simulate"]


class Stopped(FluxliteError):
    """A run ended early because its ``should_stop()`` said so (a sweep being stopped)."""


#: the leak's one-node check: a node with a free core (the default), or an empty node (an ablation)
LEAK_START = ("core", "empty")
#: under a leak policy, type-2 forks use the leak's search (default) or stay on the job's nodes (ablation)
TYPE2_FORKS = ("leak", "local")
#: static strategies: the start may move later until the deadline (the default), or only the earliest start is tried
STATIC_SHIFT = ("later", "none")
#: Manhattan's growth: through free neighbours (the journal's text, the default) or figure 8 read literally
MANHATTAN_GROWTH = ("free", "strict", "first-seed", "strict-first-seed", "no-polish")
#: wall seconds between two ``should_stop()`` polls
STOP_POLL_SECONDS = 0.5
#: the cyclic garbage collector's young-generation threshold while a run goes on (see _gc_relaxed)
GC_YOUNG_THRESHOLD = 10_000


@contextmanager
def _gc_relaxed() -> Iterator[None]:
    """Collect cyclic garbage less often while a run goes on (Python's threshold is 700 allocations).

    A run allocates several million short-lived objects (events, tuples, small lists) while
    the engine's graph and planners and the program cache stay alive.  At the default
    threshold the collector runs about 150 young and one full collection per 1,000-job run,
    and each full one walks every live container: about 8 % of a run's CPU in a sweep.  With
    :data:`GC_YOUNG_THRESHOLD` the young collections are rarer and a full one seldom comes;
    cyclic garbage waits at most that many allocations more.  Nothing else changes (the
    collector frees only what nothing can reach).  The old thresholds come back after the
    run; a process that turned automatic collection off (threshold 0) keeps it off.
    """
    old = gc.get_threshold()
    if 0 < old[0] < GC_YOUNG_THRESHOLD:
        gc.set_threshold(GC_YOUNG_THRESHOLD, *old[1:])
    try:
        yield
    finally:
        gc.set_threshold(*old)


@dataclass
class RunResult:
    """Summary of one simulated run (one row of a sweep, plus diagnostics)."""

    strategy: str
    comm: str
    jobs: int = 0
    accepted: int = 0
    rejected: int = 0
    cancelled: int = 0
    completed: int = 0
    #: of the cancelled, those killed at the end of their static window (walltime)
    walltime_kills: int = 0
    utilization: float = 0.0
    compactness: float = 0.0
    oversubscribed: int = 0
    makespan: int = 0
    events: int = 0
    wall_seconds: float = 0.0
    #: per job: (jobid, outcome, start, end) with outcome rejected|completed|cancelled
    outcomes: list[tuple[int, str, float, float]] = field(default_factory=list, repr=False)
    #: (time, owner job id of each core, 0 = free) at the requested snapshot times
    snapshots: list[tuple[float, list[int]]] = field(default_factory=list, repr=False)

    def summary(self) -> dict[str, float | int | str]:
        """The metrics as a flat dict (no per-job lists; what ``asdict`` gives without them)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _PER_JOB}


#: the per-job lists of a RunResult (left out of its summary)
_PER_JOB = frozenset({"outcomes", "snapshots"})


class _Shared:
    """A process the engine gave no core (its fork was refused): it shares a core of its node."""

    __slots__ = ("node",)
    core = None

    def __init__(self, node: int) -> None:
        self.node = node


class _Run:
    """The state of one job while it runs (placement of its processes, current phase)."""

    __slots__ = (
        "comp_held",
        "comp_last",
        "comp_n",
        "comp_sum",
        "core_of",
        "ending",
        "free",
        "held",
        "job",
        "kill_at",
        "own",
        "pending",
        "phase",
        "phase_ev",
        "place",
        "procs",
        "prog",
        "released",
        "reserved",
        "start",
    )

    def __init__(self, job: DeadlineJob, prog: Program) -> None:
        self.job = job
        self.prog = prog
        self.core_of = [-1] * job.procs  # global core index of each process
        self.procs: list[object | None] = []  # grid backend: the engine's Proc of each process
        self.pending: list[int] = []  # leak: cores taken, not yet allocated on the engine
        self.released: list[int] = []  # leak: cores given back, not yet shrunk on the engine
        self.ending: list[object] = []  # grid leak: the engine's Procs ending at this phase boundary
        self.held: list[int] = []  # engine-held cores (leak) / reserved cores (static)
        self.free: dict[int, list[int]] = {}  # static: free reserved cores per node, partition order
        self.reserved: list[int] = []  # static: cores of the reservation, in partition order
        self.phase = 0
        self.own: dict[int, int] | None = None  # the traffic of the current phase, by node
        self.phase_ev = None
        #: (processes, node of each, processes sharing each one's core) of the last phase, while
        #: valid: lists for a phase of up to LOOP_PROCESSES processes, arrays above
        self.place: tuple[int, Any, Any] | None = None
        self.kill_at = float(job.deadline)
        self.start = 0.0
        self.comp_sum = 0.0
        self.comp_n = 0
        self.comp_held: list[int] | None = None
        self.comp_last = 0


class DeadlineSim:
    """One run: a trace on a machine under a strategy and a communication style."""

    def __init__(
        self,
        jobs: list[DeadlineJob],
        strategy: str,
        comm: str = "async",
        machine: Machine | None = None,
        model: CommModel | None = None,
        snapshots: list[float] | None = None,
        should_stop: Any = None,
        leak_start: str = "core",
        type2_forks: str = "leak",
        static_shift: str = "later",
        manhattan_growth: str = "free",
    ) -> None:
        if strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {strategy!r} (use {', '.join(STRATEGIES)})")
        if comm not in COMM_STYLES:
            raise InputError(f"unknown communication style {comm!r} (use {', '.join(COMM_STYLES)})")
        self.jobs = jobs
        self.strategy = strategy
        self.comm = comm
        self.m = machine or Machine()
        self.model = model or CommModel()
        self.k = Kernel()
        self.grid = self.m.backend == "grid"
        if self.grid and strategy in STATIC and self.m.strategy != strategy:
            raise InputError(f"the machine's engine runs policy {self.m.strategy!r}, not {strategy!r}")
        self.static = None if self.grid else make_strategy(strategy, self.m)
        self.leak = strategy in DYNAMIC
        self.noncontig = strategy == "leak-noncontig"
        self.res = RunResult(strategy=strategy, comm=comm, jobs=len(jobs))
        #: inter-node messages of the running phases per node (whole numbers, as floats)
        self.traffic = [0.0] * self.m.nodes
        #: live processes per core, kept where it is read: static runs and the interim leak (the
        #: engine's leak policies keep each process's core in its ``Proc``)
        self.core_count = [0] * self.m.cores
        self._count_cores = not (self.grid and self.leak)
        self.busy = 0  # engine-held cores of running jobs
        self.busy_area = 0.0
        self.busy_t = 0.0
        self.snake = snake_order(self.m)
        self.snake_pos = {n: i for i, n in enumerate(self.snake)}
        self.entry = 0
        self.comp_total = 0.0
        self.comp_jobs = 0
        self.running: dict[int, _Run] = {}
        #: times at which to record who holds which core (occupancy pictures)
        self.snapshot_times = sorted(snapshots or [])
        self.snapshots: list[tuple[float, list[int]]] = []
        self._should_stop = should_stop
        self._next_poll = 0.0
        if leak_start not in LEAK_START:
            raise InputError(f"leak start must be one of {', '.join(LEAK_START)}, got {leak_start!r}")
        #: what the leak's one-node check asks for (see the module docstring)
        self.leak_start = leak_start
        if type2_forks not in TYPE2_FORKS:
            raise InputError(f"type-2 forks must be one of {', '.join(TYPE2_FORKS)}, got {type2_forks!r}")
        #: leak: type-2 forks by the leak's search (the default) or on the job's own nodes only
        self.type2_forks = type2_forks
        if static_shift not in STATIC_SHIFT:
            raise InputError(f"static shift must be one of {', '.join(STATIC_SHIFT)}, got {static_shift!r}")
        #: static: "later" tries later start times up to the deadline; "none" only the earliest start
        self.static_shift = static_shift
        if manhattan_growth not in MANHATTAN_GROWTH:
            raise InputError(
                f"Manhattan growth must be one of {', '.join(MANHATTAN_GROWTH)}, got {manhattan_growth!r}"
            )
        if manhattan_growth != "free" and not self.grid:
            raise InputError(f"the {manhattan_growth} Manhattan growth needs the grid backend")
        #: the engine's allocator for this run's static strategy (an ablation may swap Manhattan's)
        self.policy = (
            f"manhattan-{manhattan_growth}" if strategy == "manhattan" and manhattan_growth != "free" else None
        )

    def _poll_stop(self) -> None:
        """Raise :class:`Stopped` when ``should_stop()`` says so (asked at most every half second)."""
        now = time.perf_counter()
        if now >= self._next_poll:
            self._next_poll = now + STOP_POLL_SECONDS
            if self._should_stop():
                raise Stopped("the run was asked to stop")

    # ------------------------------------------------------------------ bookkeeping
    def _busy(self, delta: int) -> None:
        now = self.k.now
        self.busy_area += self.busy * (now - self.busy_t)
        self.busy_t = now
        self.busy += delta

    def _snapshot(self) -> None:
        owner = [0] * self.m.cores
        for jid, r in self.running.items():
            for c in r.held:
                owner[c] = jid
        self.snapshots.append((self.k.now, owner))

    # ------------------------------------------------------------------ the run
    def run(self) -> RunResult:
        t0 = time.perf_counter()
        for job in self.jobs:
            if job.procs > self.m.cores:
                raise InputError(f"job {job.jobid} needs {job.procs} cores, machine has {self.m.cores}")
            when = job.earliest_start if self.leak else job.submit
            self.k.at(when, self._arrive, job)
        for t in self.snapshot_times:
            self.k.at(t, self._snapshot)
        with _gc_relaxed():
            self.k.run()
        self._busy(0)
        res = self.res
        first = min((j.submit for j in self.jobs), default=0)
        res.makespan = math.ceil(self.k.now - first)
        res.utilization = self.busy_area / (self.m.cores * res.makespan) if res.makespan > 0 else 0.0
        res.compactness = self.comp_total / self.comp_jobs if self.comp_jobs else 0.0
        res.events = self.k.events
        res.wall_seconds = time.perf_counter() - t0
        return res

    def _reject(self, job: DeadlineJob) -> None:
        self.res.rejected += 1
        self.res.outcomes.append((job.jobid, "rejected", self.k.now, self.k.now))

    def _arrive(self, job: DeadlineJob) -> None:
        if self._should_stop is not None:
            self._poll_stop()
        prog = program_for(job, self.comm, self.m.geom, self.model)
        if self.leak:
            self._leak_start(job, prog)
        else:
            self._static_submit(job, prog)

    # ------------------------------------------------------------------ static
    def _static_submit(self, job: DeadlineJob, prog: Program) -> None:
        m = self.m
        now = self.k.tick()
        count = max(1, math.ceil(job.procs / m.cpn))
        dur = job.requested
        t = max(now, job.earliest_start)
        # the latest end: the deadline, or (ablation "none") the end of a start at the earliest time
        limit = job.deadline if self.static_shift == "later" else min(job.deadline, t + dur)
        if self.grid:
            nodes: list[int] = []  # the nodes placed, in grid index order (what job_nodes reads back)
            try:
                got = m.engine.grid.allocate_deadline(
                    count,
                    job.earliest_start,
                    limit,
                    now=now,
                    duration=dur,
                    jobid=job.jobid,
                    policy=self.policy,
                    nodes=nodes,
                )
            except MatchError:  # DeadlineError (cannot meet the deadline) or unsatisfiable
                self._reject(job)
                return
            self._accept_static(job, prog, int(got.at), nodes)
            return
        assert self.static is not None
        for start in m.start_times(t, dur, count * m.cpn, limit - dur):
            nodes = self.static.choose(m, count, start, dur)
            if nodes is None:
                continue
            m.allocate_nodes(job.jobid, nodes, start, dur)
            self._accept_static(job, prog, start, nodes)
            return
        self._reject(job)

    def _accept_static(self, job: DeadlineJob, prog: Program, start: int, nodes: list[int]) -> None:
        m = self.m
        self.res.accepted += 1
        r = _Run(job, prog)
        r.reserved = [c for n in nodes for c in range(n * m.cpn, (n + 1) * m.cpn)]
        r.kill_at = float(start + job.requested)
        self.k.at(start, self._static_start, r)

    def _static_start(self, r: _Run) -> None:
        r.start = self.k.now
        r.held = list(r.reserved)
        cpn = self.m.cpn
        self._busy(len(r.held))
        self.running[r.job.jobid] = r
        # the initial processes take the reserved cores in partition order (what one
        # _place_static each gives: process 0 the first core, then the first free core each);
        # each node's free cores are kept in reverse, so pop() hands out the next one
        a = r.prog.active[0]
        placed = r.reserved[:a]
        r.core_of[:a] = placed
        cc = self.core_count
        for c in placed:
            cc[c] += 1
        res = r.reserved  # whole nodes, each node's cpn cores in order
        r.free = {res[k] // cpn: res[max(k, a) : k + cpn][::-1] for k in range(0, len(res), cpn)}
        self._phase(r)

    def _place_static(self, r: _Run, k: int, parent_core: int) -> None:
        """A process takes a free reserved core: on its parent's node first, else the first free one."""
        cpn = self.m.cpn
        free = r.free
        c = -1
        if parent_core >= 0:
            cores = free.get(parent_core // cpn)
            if cores:
                c = cores.pop()
        if c < 0:
            for cores in free.values():
                if cores:
                    c = cores.pop()
                    break
        if c < 0:  # more processes than cores (cannot happen: n <= reserved cores); share
            c = parent_core if parent_core >= 0 else r.reserved[0]
        r.core_of[k] = c
        self.core_count[c] += 1

    def _unplace_static(self, r: _Run, k: int) -> None:
        c = r.core_of[k]
        r.core_of[k] = -1
        self.core_count[c] -= 1
        if self.core_count[c] == 0:
            r.free[c // self.m.cpn].append(c)

    # ------------------------------------------------------------------ leak
    def _free_core_on(self, node: int, until: int) -> int:
        m = self.m
        now = self.k.tick()
        base = node * m.cpn
        for c in range(base, base + m.cpn):
            if self.core_count[c] == 0 and m.core_free(c, now, until - now):
                return c
        return -1

    def _next_free_node(self, start_pos: int, until: int, empty: bool = False) -> int:
        """First node with a free core (``empty``: all cores free) in snake order from ``start_pos``."""
        n = len(self.snake)
        cpn = self.m.cpn
        for i in range(n):
            node = self.snake[(start_pos + i) % n]
            if not empty and self._free_core_on(node, until) >= 0:
                return node
            if empty and all(
                self.core_count[c] == 0 and self.m.core_free(c, self.k.tick(), until - self.k.tick())
                for c in range(node * cpn, (node + 1) * cpn)
            ):
                return node
        return -1

    def _leak_grab(self, r: _Run, core: int) -> None:
        """Take a core for the job; the engine allocation is batched by :meth:`_leak_flush`."""
        r.pending.append(core)
        r.held.append(core)
        self._busy(1)

    def _leak_flush(self, r: _Run) -> None:
        """Allocate the cores taken since the last flush in one engine call (a grow if the job runs)."""
        if r.pending:
            now = self.k.tick()
            self.m.allocate_cores(r.job.jobid, r.pending, now, r.job.deadline - now)
            r.pending = []

    def _leak_start(self, job: DeadlineJob, prog: Program) -> None:
        if self.k.tick() >= job.deadline:
            self._reject(job)
            return
        if self.grid:
            self._grid_leak_start(job, prog)
            return
        until = job.deadline
        first = self._next_free_node(self.entry, until, empty=self.leak_start == "empty")
        self.entry = (self.entry + 37) % len(self.snake)  # rotate the entry node (37: coprime stride)
        if first < 0:
            self._reject(job)
            return
        self.res.accepted += 1
        r = _Run(job, prog)
        r.start = self.k.now
        self.running[job.jobid] = r
        # initial processes: breadth-first over the free neighbours of the nodes taken
        want = prog.active[0]
        placed = 0
        seen = {first}
        queue = deque([first])
        while placed < want:
            if not queue:
                if not self.noncontig:
                    break
                nxt = self._next_free_node(self.snake_pos[first], until)  # a new region
                if nxt < 0:
                    break
                seen.add(nxt)
                queue.append(nxt)
                first = nxt
            node = queue[0]
            c = self._free_core_on(node, until)
            if c < 0:  # node full: its free neighbours come next
                queue.popleft()
                for nb in self.m.neighbours[node]:
                    if nb not in seen and self._free_core_on(nb, until) >= 0:
                        seen.add(nb)
                        queue.append(nb)
                continue
            self._leak_grab(r, c)
            r.core_of[placed] = c
            self.core_count[c] += 1
            placed += 1
        for k in range(placed, want):  # nothing free left: share the job's cores round-robin
            c = r.held[k % len(r.held)]
            r.core_of[k] = c
            self.core_count[c] += 1
            self.res.oversubscribed += 1
        self._leak_flush(r)
        self._phase(r)

    # -- on the engine's own leak policies (fluxlite.grid)
    def _grid_sync(self, r: _Run) -> None:
        """Processes' cores, the job's held cores and the busy count, as the engine's ``Proc``s say.

        A process without a core of its own (oversubscribed) shares a core the job holds on its
        node (round robin), else any core of the job.  O(processes).
        """
        m = self.m
        alive = r.prog.active[r.phase]
        core_of = [-1] * len(r.core_of)
        held: list[int] = []
        index = m.core_index
        procs = r.procs
        shared = False
        for k in range(alive):
            p = procs[k]
            if p is not None:
                if p.core is not None:
                    c = index[p.core]
                    held.append(c)
                    core_of[k] = c
                else:
                    shared = True
        if shared:
            on_node: dict[int, list[int]] = {}
            for k in range(alive):
                p = procs[k]
                if p is not None and p.core is not None:
                    on_node.setdefault(p.node, []).append(core_of[k])
            for k in range(alive):
                p = procs[k]
                if core_of[k] >= 0 or p is None:
                    continue
                mine = on_node.get(p.node) or held
                core_of[k] = mine[k % len(mine)] if mine else p.node * m.cpn
        r.core_of = core_of
        self._busy(len(held) - len(r.held))
        r.held = held

    def _grid_leak_start(self, job: DeadlineJob, prog: Program) -> None:
        eng = self.m.engine
        now = self.k.tick()
        want = prog.active[0]
        r = _Run(job, prog)
        r.procs = [None] * job.procs
        on = self.leak_start
        try:
            lj = eng.leak_start(
                want,
                strategy=self.strategy,
                now=now,
                duration=job.deadline - now,
                jobid=job.jobid,
                start_on=on,
            )
            procs: list[Any] = list(lj.procs)
        except BusyError:
            try:  # not enough free cores left for all (non-contiguous): start one, fork the rest
                lj = eng.leak_start(
                    1,
                    strategy=self.strategy,
                    now=now,
                    duration=job.deadline - now,
                    jobid=job.jobid,
                    start_on=on,
                )
            except BusyError:
                self._reject(job)
                return
            procs = list(lj.procs)
            first = procs[0].node
            with eng.grid.fork_batch(job.jobid, now) as b:  # one engine update for all the forks
                for _ in range(want - 1):
                    got = b.fork(first)
                    procs.append(got if got is not None else _Shared(first))
        self.res.accepted += 1
        r.start = self.k.now
        self.running[job.jobid] = r
        for k, proc in enumerate(procs):
            r.procs[k] = proc
            self.res.oversubscribed += proc.core is None
        self._grid_sync(r)
        self._phase(r)

    def _grid_forks(self, r: _Run, forks: list[tuple[int, int]]) -> None:
        """The forks of one phase boundary through the engine's leak policy: one engine update for all.

        Each fork is placed as :meth:`Engine.grow(strategy=...) <fluxlite.api.Engine.grow>` would
        place it after the ones before it (``GridOps.fork_batch``); a fork the policy cannot place
        shares its parent's node.  With ``type2_forks="local"`` (an ablation) type-2 forks are local:
        the first of the parent's node and the job's nodes with a free core, else shared.
        """
        if not forks:
            return
        eng = self.m.engine
        now = self.k.tick()
        jobid = r.job.jobid
        if now >= r.job.deadline or jobid not in eng.leak_jobs:
            for child, parent in forks:
                r.procs[child] = _Shared(r.procs[parent].node)
                self.res.oversubscribed += 1
            return
        local = r.job.type == 2 and self.type2_forks == "local"
        if local:
            cpn = self.m.cpn
            held_nodes = list(dict.fromkeys(x // cpn for x in r.held))
        with eng.grid.fork_batch(jobid, now) as b:
            for child, parent in forks:
                pnode = r.procs[parent].node  # the parent may be a fork of this same boundary
                if local:
                    proc: Any = b.fork(pnode, only=list(dict.fromkeys([pnode, *held_nodes])))
                else:
                    proc = b.fork(pnode)
                if proc is None:
                    proc = _Shared(pnode)
                r.procs[child] = proc
                self.res.oversubscribed += proc.core is None

    def _leak_fork(self, r: _Run, k: int, parent: int) -> None:
        """One fork on the interim backend (the grid backend places forks in :meth:`_grid_forks`)."""
        m = self.m
        pcore = r.core_of[parent]
        pnode = pcore // m.cpn
        until = r.job.deadline
        c = self._free_core_on(pnode, until) if self.k.tick() < until else -1
        if c < 0 and self.k.tick() < until:
            job_nodes = list(dict.fromkeys(x // m.cpn for x in r.held))
            if r.job.type == 2 and self.type2_forks == "local":  # the job's own nodes only
                for node in job_nodes:
                    c = self._free_core_on(node, until)
                    if c >= 0:
                        break
            else:
                for node in m.neighbours[pnode]:
                    c = self._free_core_on(node, until)
                    if c >= 0:
                        break
                if c < 0:
                    for jn in job_nodes:
                        for node in m.neighbours[jn]:
                            c = self._free_core_on(node, until)
                            if c >= 0:
                                break
                        if c >= 0:
                            break
                if c < 0 and self.noncontig:
                    node = self._next_free_node(self.snake_pos[pnode], until)
                    if node >= 0:
                        c = self._free_core_on(node, until)
        if c >= 0:
            self._leak_grab(r, c)
        else:
            c = pcore
            self.res.oversubscribed += 1
        r.core_of[k] = c
        self.core_count[c] += 1

    def _leak_join(self, r: _Run, k: int) -> None:
        c = r.core_of[k]
        r.core_of[k] = -1
        if self.grid:
            proc = r.procs[k]
            r.procs[k] = None
            if proc is not None and not isinstance(proc, _Shared):
                r.ending.append(proc)  # joined together by _phase_end: one engine release
            return
        self.core_count[c] -= 1
        if self.core_count[c] == 0 and c in r.held:
            r.held.remove(c)
            r.released.append(c)
            self._busy(-1)

    # ------------------------------------------------------------------ phases
    def _phase(self, r: _Run) -> None:
        prog = r.prog
        i = r.phase
        p = prog.active[i]
        pl = r.place
        cpn = self.m.cpn
        if pl is not None and pl[0] == p:  # the placement has not changed since the last phase
            node_of, osub = pl[1], pl[2]
        elif p <= LOOP_PROCESSES:  # lists (Program.phase_cost works message by message)
            cores = r.core_of[:p]
            node_of = [c // cpn for c in cores]
            osub = 1.0  # processes sharing a core with others of the job (1.0 for all: none shared)
            if len(set(cores)) < p:
                counts: dict[int, int] = {}
                for c in cores:
                    counts[c] = counts.get(c, 0) + 1
                osub = [float(counts[c]) for c in cores]
            r.place = (p, node_of, osub)
        else:
            cores_a = np.asarray(r.core_of[:p], dtype=np.int64)
            bins = np.bincount(cores_a, minlength=1)
            osub = bins[cores_a].astype(float) if bins.max() > 1 else 1.0
            node_of = cores_a // cpn
            r.place = (p, node_of, osub)
        traffic = self.traffic
        dur, own = prog.phase_cost(i, node_of, osub, self.m.geom, traffic)
        for n, k in own.items():
            traffic[n] += k
        r.own = own
        if not self.leak:
            if r.comp_n == 0:
                r.comp_sum = float(self.m.geom.pairwise(sorted({c // cpn for c in r.reserved})))
                r.comp_n = 1
        else:
            if r.comp_held != r.held:  # the partition changed since the last phase
                r.comp_last = self.m.geom.pairwise(sorted({c // cpn for c in r.held}))
                r.comp_held = list(r.held)
            r.comp_sum += r.comp_last
            r.comp_n += 1
        end = self.k.now + dur
        if end > r.kill_at:
            r.phase_ev = self.k.at(r.kill_at, self._kill, r)
        else:
            r.phase_ev = self.k.at(end, self._phase_end, r)

    def _drop_traffic(self, r: _Run) -> None:
        """The traffic of ``r``'s phase ends (its messages no longer load the network)."""
        own = r.own
        if own is not None:
            traffic = self.traffic
            for n, k in own.items():
                traffic[n] -= k
            r.own = None

    def _phase_end(self, r: _Run) -> None:
        if self._should_stop is not None:
            self._poll_stop()
        assert r.own is not None
        self._drop_traffic(r)
        prog = r.prog
        i = r.phase + 1
        if i >= prog.phases:
            self._finish(r, "completed")
            return
        r.phase = i
        if not prog.forks[i] and prog.active[i] == prog.active[i - 1]:
            # nothing joins or forks here, so no process moves: a job's processes and their
            # cores change only by its own joins and forks (under a leak too), and the last
            # placement stands; what _grid_sync would redo gives the same, down to its busy update
            if self.leak and self.grid:
                self._busy(0)
            self._phase(r)
            return
        r.place = None  # processes move
        # joins (last forked first), then forks
        for k in range(prog.active[i - 1] - 1, prog.active[i] - 1, -1):
            if self.leak:
                self._leak_join(r, k)
            else:
                self._unplace_static(r, k)
        if r.ending:  # one engine release for all the joins of this phase boundary
            if r.job.jobid in self.m.engine.leak_jobs:
                self.m.engine.leak_join(r.job.jobid, r.ending)
            r.ending = []
        if self.leak and r.released:  # one shrink for all the joins of this phase boundary
            self.m.release_cores(r.job.jobid, r.released)
            r.released = []
        if self.leak and self.grid:
            self._grid_forks(r, prog.forks[i])
        else:
            for child, parent in prog.forks[i]:
                if self.leak:
                    self._leak_fork(r, child, parent)
                else:
                    self._place_static(r, child, r.core_of[parent])
        if self.leak and self.grid:
            self._grid_sync(r)
        elif self.leak:
            self._leak_flush(r)
        self._phase(r)

    def _kill(self, r: _Run) -> None:
        self._drop_traffic(r)
        if not self.leak and r.kill_at < r.job.deadline:
            self.res.walltime_kills += 1
        self._finish(r, "cancelled")

    def _finish(self, r: _Run, outcome: str) -> None:
        job = r.job
        now = self.k.now
        assert outcome != "completed" or now <= job.deadline + 1e-9
        if self._count_cores:
            for k, c in enumerate(r.core_of):
                if c >= 0:
                    self.core_count[c] -= 1
                    r.core_of[k] = -1
        self._busy(-len(r.held))
        r.held = []
        self.m.release(job.jobid)
        del self.running[job.jobid]
        if outcome == "completed":
            self.res.completed += 1
        else:
            self.res.cancelled += 1
        self.res.outcomes.append((job.jobid, outcome, r.start, now))
        self.comp_total += r.comp_sum / max(1, r.comp_n)
        self.comp_jobs += 1


def simulate(
    jobs: list[DeadlineJob],
    strategy: str,
    comm: str = "async",
    *,
    width: int = 16,
    height: int = 8,
    cores_per_node: int = 4,
    torus: bool = False,
    model: CommModel | None = None,
    snapshots: list[float] | None = None,
    machine: Machine | None = None,
    backend: str = "auto",
    should_stop: Any = None,
    leak_start: str = "core",
    type2_forks: str = "leak",
    static_shift: str = "later",
    manhattan_growth: str = "free",
) -> RunResult:
    """Simulate one trace; returns the run's metrics (the machine's engine is left empty)."""
    m = machine or Machine(width, height, cores_per_node, torus, strategy=strategy, backend=backend)
    sim = DeadlineSim(
        jobs,
        strategy,
        comm,
        m,
        model,
        snapshots,
        should_stop,
        leak_start,
        type2_forks,
        static_shift,
        manhattan_growth,
    )
    res = sim.run()
    res.snapshots = sim.snapshots
    return res
