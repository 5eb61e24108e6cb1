"""Job programs of the four runtime-behaviour types, and the time they take on a placement.

A program is a DAG of computation, communication, fork and join tasks,
organised in *phases* (bulk-synchronous supersteps), which keeps it fast to
simulate (one event per phase) while keeping what the study measures: where
the processes sit, how far apart they are, and how loaded the network is.

* Processes are numbered ``0..n-1``; phase ``i`` runs processes
  ``0..active[i]-1``.  Between phases, the processes that appear are
  **forks** (their parent is an earlier process, drawn from the job's seed)
  and those that disappear are **joins** (last forked, first joined).
* Each phase, every active process computes for ``c`` seconds (``c * k`` if
  ``k`` processes share its core: oversubscription), then exchanges
  messages.  A message between nodes ``h`` hops apart (Manhattan distance,
  wrap-around on a torus) under network load ``L`` takes
  ``v * (1 + beta * h) * (1 + gamma * L)``; one within a node takes
  ``v * local``.  ``v = kappa * c`` (communication-to-computation ratio).
  ``L`` is the mean, over the message's two end nodes, of the inter-node
  messages of *other* jobs whose current phase starts or ends there (every
  message leaving or entering a node uses that node's links); it is read
  when the phase starts.
* Communication styles: ``async`` (asynchronous send, synchronous receive):
  a process waits for its slowest incoming message; ``sync`` (synchronous
  send): a process is also blocked for each of its outgoing messages until
  delivered, one after the other.  A phase ends when its slowest process
  does (barrier).

====  ======  =========================================================  ======
type  phases  processes and messages                                     forks
====  ======  =========================================================  ======
0     1       all ``n`` from the start; input from process 0 to every     none
              process, output from every process back to 0
1     8       all ``n``; each process exchanges with both ring           none
              neighbours ``k-1`` and ``k+1`` every phase (BSP)
2     8       ``max(1, n/4)`` grow to ``n`` at mid-run, then shrink back   local
              (mesh refinement); each process sends to one random peer
3     8       as type 2                                                  remote
====  ======  =========================================================  ======

Under a static partition every fork lands on the job's reserved nodes; under
a leak policy every fork is placed by the leak's search (journal section 5);
keeping type-2 forks on the job's own nodes ("local": threads next to their
parent) is an ablation (:mod:`fluxlite.sim.deadline.sim`).

**Calibration.**  ``c`` is chosen so that the program takes exactly the
job's ``runtime`` on a compact partition of an empty machine (a near-square
block of ``ceil(n / cores_per_node)`` nodes, processes packed in order), in
the run's communication style.  A less compact partition, a loaded network
or oversubscription makes it slower; that is what can make it miss its
deadline.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from fluxlite.sim.deadline.workload import DeadlineJob

__all__ = ["COMM_STYLES", "CommModel", "Geometry", "Program", "parse_comm_model", "program_for"]

#: communication styles: asynchronous send + synchronous receive, synchronous send
COMM_STYLES: tuple[str, ...] = ("async", "sync")


@dataclass(frozen=True, slots=True)
class CommModel:
    """Parameters of the communication cost model (see the module docstring)."""

    kappa: float = 0.2
    beta: float = 0.25
    gamma: float = 0.5
    local: float = 0.1
    dynamic_phases: int = 8


def parse_comm_model(text: str) -> CommModel:
    """``"gamma=0,beta=0.5"`` -> a :class:`CommModel` with those fields changed (empty: the defaults)."""
    import dataclasses

    from fluxlite.errors import InputError

    fields = {f.name: f.type for f in dataclasses.fields(CommModel)}
    kw: dict[str, float | int] = {}
    for part in filter(None, (x.strip() for x in text.split(","))):
        key, sep, val = part.partition("=")
        if not sep or key not in fields:
            raise InputError(f"bad communication model setting {part!r} (use {', '.join(fields)}=NUMBER)")
        try:
            num = int(val) if key == "dynamic_phases" else float(val)
        except ValueError:
            raise InputError(f"bad communication model value {part!r}") from None
        if num < 0 or (key == "dynamic_phases" and num < 3):
            raise InputError(f"communication model value out of range: {part!r}")
        kw[key] = num
    return CommModel(**kw)  # type: ignore[arg-type]


class Geometry:
    """Node coordinates of a W x H grid (or torus): node ``i`` is at ``(x[i], y[i])``."""

    def __init__(self, width: int, height: int, torus: bool = False, cores_per_node: int = 4) -> None:
        self.width = width
        self.height = height
        self.torus = torus
        self.cores_per_node = cores_per_node
        self.nodes = width * height
        idx = np.arange(self.nodes)
        self.x = idx % width
        self.y = idx // width
        self._blocks: dict[int, list[int]] = {}
        self._sig: int | None = None

    def set_coordinates(self, xs: list[int], ys: list[int]) -> None:
        """Use the coordinates the machine's graph gives each node index."""
        self.x = np.asarray(xs, dtype=np.int64)
        self.y = np.asarray(ys, dtype=np.int64)
        self._blocks = {}
        self._sig = None

    def signature(self) -> int:
        """A small id, the same for every geometry with the same shape and node coordinates (in this process).

        Everything a :class:`Program` reads of its geometry (the size, the
        torus flag, cores per node, each node's coordinates) is in it.
        """
        if self._sig is None:
            key = (
                self.width,
                self.height,
                self.torus,
                self.cores_per_node,
                np.asarray(self.x, dtype=np.int64).tobytes(),
                np.asarray(self.y, dtype=np.int64).tobytes(),
            )
            self._sig = _GEOM_IDS.setdefault(key, len(_GEOM_IDS))
        return self._sig

    def hops(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Hop distance between node index arrays (Manhattan; wrap-around on a torus)."""
        dx = np.abs(self.x[a] - self.x[b])
        dy = np.abs(self.y[a] - self.y[b])
        if self.torus:
            dx = np.minimum(dx, self.width - dx)
            dy = np.minimum(dy, self.height - dy)
        return dx + dy

    def hop(self, a: int, b: int) -> int:
        dx = abs(int(self.x[a]) - int(self.x[b]))
        dy = abs(int(self.y[a]) - int(self.y[b]))
        if self.torus:
            dx = min(dx, self.width - dx)
            dy = min(dy, self.height - dy)
        return dx + dy

    def pairwise(self, nodes: list[int]) -> int:
        """Sum of pairwise hop distances of a node set (the compactness measure)."""
        if len(nodes) < 2:
            return 0
        a = np.asarray(nodes)
        dx = np.abs(self.x[a][:, None] - self.x[a][None, :])
        dy = np.abs(self.y[a][:, None] - self.y[a][None, :])
        if self.torus:
            dx = np.minimum(dx, self.width - dx)
            dy = np.minimum(dy, self.height - dy)
        return int((dx + dy).sum()) // 2

    def compact_block(self, count: int) -> list[int]:
        """A near-square block of ``count`` nodes in the corner (the calibration partition)."""
        count = min(count, self.nodes)
        hit = self._blocks.get(count)
        if hit is not None:
            return hit
        w = min(self.width, max(1, math.ceil(math.sqrt(count)), math.ceil(count / self.height)))
        pos = {(int(self.x[i]), int(self.y[i])): i for i in range(self.nodes)}
        out = []
        k = 0
        while len(out) < count:
            xy = (k % w, k // w)
            if xy[1] >= self.height:  # pragma: no cover - count <= nodes prevents it
                break
            out.append(pos[xy])
            k += 1
        self._blocks[count] = out
        return out


_UNIT_CACHE: dict[tuple[object, ...], float] = {}
_GEOM_IDS: dict[tuple[object, ...], int] = {}
#: the programs built last, by everything that decides them (see :func:`program_for`)
_PROGRAMS: OrderedDict[tuple[object, ...], Program] = OrderedDict()
#: about five 1,000-job traces: the runs of one trace (one per strategy) reuse its programs
PROGRAM_CACHE_SIZE = 5000


def program_for(job: DeadlineJob, comm: str, geom: Geometry, model: CommModel = CommModel()) -> Program:
    """``Program(job, comm, geom, model)``, shared with earlier calls that would build the same one.

    A program depends only on the job's type, process count, runtime and
    seed, the communication style and model, and the geometry's shape and
    coordinates; no simulator changes a program after it is built.  So the
    runs of one trace under different strategies (a sweep's worker runs them
    one after another) build each job's program once.  The cache keeps the
    last :data:`PROGRAM_CACHE_SIZE` programs.
    """
    key = (job.type, job.procs, job.runtime, job.seed, comm, model, geom.signature())
    got = _PROGRAMS.get(key)
    if got is not None:
        _PROGRAMS.move_to_end(key)
        return got
    got = _PROGRAMS[key] = Program(job, comm, geom, model)
    if len(_PROGRAMS) > PROGRAM_CACHE_SIZE:
        _PROGRAMS.popitem(last=False)
    return got


class Program:
    """The phases, forks, joins and messages of one job, calibrated to its runtime."""

    __slots__ = ("active", "c", "comm", "dst", "forks", "model", "n", "phases", "src", "type")

    def __init__(self, job: DeadlineJob, comm: str, geom: Geometry, model: CommModel = CommModel()) -> None:
        self.type = job.type
        self.n = n = job.procs
        self.comm = comm
        self.model = model
        rng = np.random.default_rng(job.seed)
        if job.type == 0:
            self.phases = 1
            self.active = [n]
        elif job.type == 1:
            self.phases = model.dynamic_phases
            self.active = [n] * self.phases
        else:
            s = self.phases = max(3, model.dynamic_phases)
            p0 = max(1, n // 4)
            half = (s - 1) // 2
            self.active = [p0 + round((n - p0) * min(1.0, min(i, s - 1 - i) / half)) for i in range(s)]
        #: forks[i]: (child, parent) pairs created before phase i (i >= 1)
        self.forks: list[list[tuple[int, int]]] = [[] for _ in range(self.phases)]
        for i in range(1, self.phases):
            for child in range(self.active[i - 1], self.active[i]):
                self.forks[i].append((child, int(rng.integers(0, child)) if child else 0))
        self.src: list[np.ndarray] = []
        self.dst: list[np.ndarray] = []
        for i in range(self.phases):
            p = self.active[i]
            if p < 2:
                s_, d_ = np.zeros(0, np.int64), np.zeros(0, np.int64)
            elif job.type == 0:
                others = np.arange(1, p)
                s_ = np.concatenate([np.zeros(p - 1, np.int64), others])
                d_ = np.concatenate([others, np.zeros(p - 1, np.int64)])
            elif job.type == 1:
                k = np.arange(p)
                s_ = np.concatenate([k, k])
                d_ = np.concatenate([(k + 1) % p, (k - 1) % p])
            else:
                k = np.arange(p)
                off = rng.integers(1, p, size=p)
                s_, d_ = k, (k + off) % p
            self.src.append(s_)
            self.dst.append(d_)
        # calibration on a compact block of an empty machine
        cpn = geom.cores_per_node
        block = geom.compact_block(math.ceil(n / cpn))
        node_of = np.asarray([block[k // cpn] for k in range(n)], dtype=np.int64)
        ones = np.ones(n)
        zero_traffic = np.zeros(geom.nodes)
        self.c = 1.0
        # types 0 and 1 have no randomness: their unit time depends only on (type, n, comm, machine)
        key = (job.type, n, comm, model, geom.width, geom.height, geom.torus, cpn) if job.type < 2 else None
        unit = _UNIT_CACHE.get(key) if key is not None else None
        if unit is None:
            unit = sum(self.phase_time(i, node_of, ones, geom, zero_traffic)[0] for i in range(self.phases))
            if key is not None:
                _UNIT_CACHE[key] = unit
        self.c = job.runtime / unit if unit > 0 else float(job.runtime)

    def phase_time(
        self, i: int, node_of: np.ndarray, osub: np.ndarray, geom: Geometry, traffic: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """Seconds phase ``i`` takes with process ``k`` on node ``node_of[k]`` sharing its core
        with ``osub[k]`` processes, under ``traffic`` (other jobs' messages per node).

        Returns the time and the phase's own traffic per node (to add while it runs).
        O(active processes + messages).
        """
        p = self.active[i]
        m = self.model
        c = self.c
        t = c * osub[:p]
        src, dst = self.src[i], self.dst[i]
        own = np.zeros(geom.nodes)
        if len(src):
            v = m.kappa * c
            ns, nd = node_of[src], node_of[dst]
            hops = geom.hops(ns, nd)
            remote = hops > 0
            load = (traffic[ns] + traffic[nd]) * 0.5
            cost = np.where(remote, v * (1.0 + m.beta * hops) * (1.0 + m.gamma * load), v * m.local)
            comm = np.zeros(p)
            np.maximum.at(comm, dst, cost)
            if self.comm == "sync":
                np.add.at(comm, src, cost)
            t = t + comm
            if remote.any():
                np.add.at(own, ns[remote], 1.0)
                np.add.at(own, nd[remote], 1.0)
        return float(t.max()), own
