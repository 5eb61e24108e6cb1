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
        self._hop_table: np.ndarray | None = None
        self._hop_rows: list[list[int]] | None = None

    def set_coordinates(self, xs: list[int], ys: list[int]) -> None:
        """Use the coordinates the machine's graph gives each node index."""
        self.x = np.asarray(xs, dtype=np.int64)
        self.y = np.asarray(ys, dtype=np.int64)
        self._blocks = {}
        self._sig = None
        self._hop_table = None
        self._hop_rows = None

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

    def hop_table(self) -> np.ndarray | None:
        """All-pairs hop distances (``hop_table()[a, b] == hops(a, b)``), or None on a machine too big
        to hold them (more than :data:`HOP_TABLE_NODES` nodes).  Built on first use, read-only."""
        if self._hop_table is None and self.nodes <= HOP_TABLE_NODES:
            idx = np.arange(self.nodes)
            tab = self.hops(idx[:, None], idx[None, :]).astype(np.int32)
            tab.setflags(write=False)
            self._hop_table = tab
        return self._hop_table

    def hop_rows(self) -> list[list[int]] | None:
        """:meth:`hop_table` as Python lists (``hop_rows()[a][b] == hop(a, b)``), or None when there
        is no table.  For the simulator's per-message loops: an item of a list is an ``int``,
        read without making a NumPy scalar."""
        if self._hop_rows is None:
            tab = self.hop_table()
            if tab is not None:
                self._hop_rows = tab.tolist()
        return self._hop_rows

    def hop(self, a: int, b: int) -> int:
        dx = abs(int(self.x[a]) - int(self.x[b]))
        dy = abs(int(self.y[a]) - int(self.y[b]))
        if self.torus:
            dx = min(dx, self.width - dx)
            dy = min(dy, self.height - dy)
        return dx + dy

    def pairwise(self, nodes: list[int]) -> int:
        """Sum of pairwise hop distances of a node set (the compactness measure)."""
        k = len(nodes)
        if k < 2:
            return 0
        if k <= PAIRWISE_LOOP_NODES:
            rows = self.hop_rows()
            if rows is not None:  # the same integer sum, pair by pair
                total = 0
                for j in range(1, k):
                    row = rows[nodes[j]]
                    for u in nodes[:j]:
                        total += row[u]
                return total
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


#: machines up to this many nodes keep an all-pairs hop table (2,048 nodes: 16 MB of int32)
HOP_TABLE_NODES = 2048
#: :meth:`Geometry.pairwise` adds the pairs of a set of up to this many nodes one by one (fewer
#: Python steps than the array form's set-up below about this size)
PAIRWISE_LOOP_NODES = 12
#: :meth:`Program.phase_cost` works message by message in Python for a phase of up to this many
#: processes (at most about twice as many messages), and with NumPy arrays above
LOOP_PROCESSES = 32
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

    __slots__ = ("_lists", "_out", "active", "c", "comm", "dst", "forks", "model", "n", "phases", "src", "type")

    def __init__(self, job: DeadlineJob, comm: str, geom: Geometry, model: CommModel = CommModel()) -> None:
        self.type = job.type
        self.n = n = job.procs
        self.comm = comm
        self.model = model
        # what default_rng(seed) builds, cheaper; types 0 and 1 draw nothing (no forks, fixed messages)
        rng = np.random.Generator(np.random.PCG64(job.seed)) if job.type >= 2 else None
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
        #: forks[i]: (child, parent) pairs created before phase i (i >= 1); each child's parent is
        #: drawn from [0, child) in child order (one vectorised draw per phase: the same numbers
        #: as one draw per child, since a child is never 0)
        self.forks: list[list[tuple[int, int]]] = [[]]
        for i in range(1, self.phases):
            lo, hi = self.active[i - 1], self.active[i]
            if hi > lo:
                assert rng is not None
                parents = rng.integers(0, np.arange(lo, hi)).tolist()
                self.forks.append(list(zip(range(lo, hi), parents)))
            else:
                self.forks.append([])
        self.src: list[np.ndarray] = []
        self.dst: list[np.ndarray] = []
        #: per phase, how the senders' costs add up under ``sync`` (see :meth:`phase_time`):
        #: 1 = each process sends one message, in process order; 2 = two, the first p then the
        #: next p in process order; 0 = any other pattern (``np.add.at``)
        self._out: list[int] = []
        #: per phase, its senders and receivers as Python lists (made on first use by phase_cost)
        self._lists: list[tuple[list[int], list[int]] | None] | None = None
        if job.type < 2:  # no randomness: every phase of the job has the same messages (one copy)
            s_, d_, out = _fixed_messages(job.type, n)
            for _ in range(self.phases):
                self.src.append(s_)
                self.dst.append(d_)
                self._out.append(out)
        else:
            ks: dict[int, np.ndarray] = {}
            for i in range(self.phases):
                p = self.active[i]
                if p < 2:
                    self.src.append(_NO_MESSAGES)
                    self.dst.append(_NO_MESSAGES)
                    self._out.append(0)
                    continue
                k = ks.get(p)
                if k is None:
                    k = ks[p] = np.arange(p)
                off = rng.integers(1, p, size=p)  # type: ignore[union-attr]
                self.src.append(k)
                self.dst.append((k + off) % p)
                self._out.append(1)
        # calibration on a compact block of an empty machine
        cpn = geom.cores_per_node
        self.c = 1.0
        # types 0 and 1 have no randomness: their unit time depends only on (type, n, comm, machine)
        key = (job.type, n, comm, model, geom.width, geom.height, geom.torus, cpn) if job.type < 2 else None
        unit = _UNIT_CACHE.get(key) if key is not None else None
        if unit is None:
            block = geom.compact_block(math.ceil(n / cpn))
            node_of = np.asarray(block, dtype=np.int64).repeat(cpn)[:n]
            unit = sum(self._unit_phase_times(node_of, geom))
            if key is not None:
                _UNIT_CACHE[key] = unit
        self.c = job.runtime / unit if unit > 0 else float(job.runtime)

    def _unit_phase_times(self, node_of: np.ndarray, geom: Geometry) -> list[float]:
        """``[_unit_phase_time(i, node_of, geom) for i in range(phases)]``, the same floats, with
        the phases' messages handled together (one array operation for all the phases, each
        phase's maximum by ``reduceat`` over its own segment; the per-phase arithmetic as there)."""
        segs = [i for i in range(self.phases) if len(self.src[i])]
        units = [1.0] * self.phases
        if not segs:
            return units
        m = self.model
        v = m.kappa * 1.0
        src = np.concatenate([self.src[i] for i in segs])
        dst = np.concatenate([self.dst[i] for i in segs])
        ns, nd = node_of[src], node_of[dst]
        tab = geom.hop_table()
        hops = tab[ns, nd] if tab is not None else geom.hops(ns, nd)
        starts = np.cumsum([0] + [len(self.src[i]) for i in segs[:-1]])
        if self.comm == "async":
            tops = np.maximum.reduceat(hops, starts).tolist()
            lows = np.minimum.reduceat(hops, starts).tolist()
            for i, top, low in zip(segs, tops, lows):
                worst = v * (1.0 + m.beta * top) * 1.0 if top > 0 else 0.0
                if low == 0:
                    worst = max(worst, v * m.local)
                units[i] = 1.0 + max(0.0, worst)
            return units
        # sync: each phase's processes get a segment of one array (offset by the processes before)
        cost = np.where(hops > 0, v * (1.0 + m.beta * hops), v * m.local)
        sizes = [self.active[i] for i in segs]
        poff = np.cumsum([0, *sizes[:-1]])
        shift = np.repeat(poff, [len(self.src[i]) for i in segs])
        comm = np.zeros(sum(sizes))
        np.maximum.at(comm, dst + shift, cost)
        np.add.at(comm, src + shift, cost)  # each process's outgoing costs, in message order
        for i, t in zip(segs, np.maximum.reduceat(1.0 + comm, poff).tolist()):
            units[i] = t
        return units

    def _unit_phase_time(self, i: int, node_of: np.ndarray, geom: Geometry) -> float:
        """``phase_time(i, node_of, 1.0, geom, no traffic)[0]`` with ``c = 1`` (the calibration), the
        same float: with no traffic a remote message costs ``v * (1 + beta * hops) * 1.0`` (the
        load factor is exactly 1.0), the largest of which (async) is the one of the most hops."""
        src, dst = self.src[i], self.dst[i]
        if not len(src):
            return 1.0
        m = self.model
        v = m.kappa * 1.0
        ns, nd = node_of[src], node_of[dst]
        tab = geom.hop_table()
        hops = tab[ns, nd] if tab is not None else geom.hops(ns, nd)
        if self.comm == "async":
            top = int(hops.max())
            worst = v * (1.0 + m.beta * top) * 1.0 if top > 0 else 0.0
            if int(hops.min()) == 0:
                worst = max(worst, v * m.local)
            return 1.0 + max(0.0, worst)
        cost = np.where(hops > 0, v * (1.0 + m.beta * hops), v * m.local)
        return float((1.0 + self._comm(i, cost)).max())

    def _comm(self, i: int, cost: np.ndarray) -> np.ndarray:
        """Each process's communication time in phase ``i`` given its messages' costs: its slowest
        incoming message, plus (``sync``) each of its outgoing ones in message order."""
        p = self.active[i]
        src, dst = self.src[i], self.dst[i]
        comm = np.zeros(p)
        np.maximum.at(comm, dst, cost)
        if self.comm == "sync":
            out = self._out[i]
            if out == 1:
                comm += cost
            elif out == 2:
                comm += cost[:p]
                comm += cost[p:]
            else:
                np.add.at(comm, src, cost)
        return comm

    def phase_time(
        self, i: int, node_of: np.ndarray, osub: np.ndarray | float, geom: Geometry, traffic: np.ndarray
    ) -> tuple[float, np.ndarray]:
        """Seconds phase ``i`` takes with process ``k`` on node ``node_of[k]`` sharing its core
        with ``osub[k]`` processes, under ``traffic`` (other jobs' messages per node).
        ``osub`` may be one number for every process (``1.0``: no core shared).

        Returns the time and the phase's own traffic per node (to add while it runs).
        :meth:`phase_cost` with arrays in and out (the simulator calls that directly).
        """
        p = self.active[i]
        if p <= LOOP_PROCESSES:
            nodes: list[int] | np.ndarray = [int(x) for x in node_of[:p]]
            if isinstance(osub, np.ndarray):
                osub = [float(x) for x in osub[:p]]
        else:
            nodes = np.asarray(node_of)
        dur, own = self.phase_cost(i, nodes, osub, geom, [float(x) for x in traffic])
        dense = np.zeros(geom.nodes)
        for n, k in own.items():
            dense[n] = k
        return float(dur), dense

    def phase_cost(
        self,
        i: int,
        node_of: list[int] | np.ndarray,
        osub: float | list[float] | np.ndarray,
        geom: Geometry,
        traffic: list[float],
    ) -> tuple[float, dict[int, int]]:
        """Seconds phase ``i`` takes with process ``k`` on node ``node_of[k]`` sharing its core
        with ``osub[k]`` processes (one number for all: ``1.0`` when no core is shared), under
        ``traffic`` (other jobs' inter-node messages per node, whole numbers as floats).

        Returns the time and the phase's own traffic as ``{node: messages}`` (nodes without any
        left out), for the caller to add to ``traffic`` while the phase runs.  A phase of up to
        :data:`LOOP_PROCESSES` processes is worked out message by message in Python
        (``node_of`` and an ``osub`` per process are lists), a larger one with NumPy arrays
        (``node_of`` and an ``osub`` per process are arrays).  O(active processes + messages).

        The arithmetic is the cost model's, done the same way for each message and process
        as the straightforward form (a compute time ``c * osub[k]`` plus the process's
        communication time; the phase's time is the largest), so both forms give the same
        floats.  Two shortcuts keep them so: under ``async`` with one ``osub`` for all, the
        largest ``c * osub + comm[k]`` is ``c * osub + max(comm)`` (rounding is monotonic), and
        ``max(comm)`` is the largest message cost (every cost is >= 0); under ``sync``, a
        process's outgoing costs are added to its incoming maximum in message order, as
        ``np.add.at`` does.  The traffic counts are whole numbers (exact in floats), so the
        order in which they are added and taken away does not change them.
        """
        p = self.active[i]
        if p > LOOP_PROCESSES:
            return self._phase_cost_arrays(i, node_of, osub, geom, traffic)  # type: ignore[arg-type]
        c = self.c
        uniform = not isinstance(osub, list)
        lists = self._lists
        if lists is None:
            lists = self._lists = [None] * self.phases
        pair = lists[i]
        if pair is None:
            pair = lists[i] = (self.src[i].tolist(), self.dst[i].tolist())
        src, dst = pair
        if not src:
            if uniform:
                return c * osub, {}  # type: ignore[operator]
            return max([c * x for x in osub[:p]]), {}  # type: ignore[index]
        m = self.model
        v = m.kappa * c
        vl = v * m.local
        beta, gamma = m.beta, m.gamma
        rows = geom.hop_rows()
        hop = geom.hop
        own: dict[int, int] = {}
        get = own.get
        costs: list[float] = []
        append = costs.append
        for a, b in zip(src, dst):
            na = node_of[a]
            nb = node_of[b]
            if na == nb:  # one node: no hop (hop(n, n) == 0)
                append(vl)
                continue
            h = rows[na][nb] if rows is not None else hop(na, nb)
            if h > 0:
                x = v * (1.0 + beta * h) * (1.0 + gamma * ((traffic[na] + traffic[nb]) * 0.5))
                own[na] = get(na, 0) + 1
                own[nb] = get(nb, 0) + 1
            else:
                x = vl
            append(x)
        if uniform and self.comm == "async":
            top = max(costs)
            return c * osub + (top if top > 0.0 else 0.0), own  # type: ignore[operator]
        comm = [0.0] * p
        for b, x in zip(dst, costs):  # np.maximum.at: each process's slowest incoming message
            if x > comm[b]:
                comm[b] = x
        if self.comm == "sync":  # each process's outgoing messages, in message order
            for a, x in zip(src, costs):
                comm[a] += x
        if uniform:
            co = c * osub  # type: ignore[operator]
            return max([co + y for y in comm]), own
        return max([c * o + y for o, y in zip(osub, comm)]), own  # type: ignore[arg-type]

    def _phase_cost_arrays(
        self, i: int, node_of: np.ndarray, osub: np.ndarray | float, geom: Geometry, traffic: list[float]
    ) -> tuple[float, dict[int, int]]:
        """:meth:`phase_cost` of a large phase, with NumPy arrays."""
        p = self.active[i]
        m = self.model
        c = self.c
        src, dst = self.src[i], self.dst[i]
        uniform = not isinstance(osub, np.ndarray)
        if not len(src):
            return float(c * osub if uniform else (c * osub[:p]).max()), {}
        v = m.kappa * c
        ns, nd = node_of[src], node_of[dst]
        tab = geom.hop_table()
        hops = tab[ns, nd] if tab is not None else geom.hops(ns, nd)
        remote = hops > 0
        tr = np.array(traffic)
        load = (tr[ns] + tr[nd]) * 0.5
        cost = np.where(remote, v * (1.0 + m.beta * hops) * (1.0 + m.gamma * load), v * m.local)
        own: dict[int, int] = {}
        if remote.any():  # each inter-node message loads both end nodes
            nn = geom.nodes
            counts = np.bincount(ns[remote], minlength=nn) + np.bincount(nd[remote], minlength=nn)
            nz = np.flatnonzero(counts)
            own = dict(zip(nz.tolist(), counts[nz].tolist()))
        if uniform and self.comm == "async":
            return float(c * osub + max(0.0, float(cost.max()))), own
        comm = self._comm(i, cost)
        t = (c * osub + comm) if uniform else (c * osub[:p] + comm)
        return float(t.max()), own


_ZEROS: dict[int, np.ndarray] = {}
#: the messages of a phase of fewer than two processes (read-only)
_NO_MESSAGES = np.zeros(0, np.int64)
_NO_MESSAGES.setflags(write=False)
#: (type, processes) -> (senders, receivers, pattern) of the types without randomness (read-only)
_FIXED: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, int]] = {}


def _fixed_messages(jtype: int, p: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The messages of a phase of ``p`` processes of type 0 or 1, shared by every such phase."""
    got = _FIXED.get((jtype, p))
    if got is not None:
        return got
    out = 0
    if p < 2:
        s_, d_ = _NO_MESSAGES, _NO_MESSAGES
    elif jtype == 0:
        others = np.arange(1, p)
        s_ = np.concatenate([np.zeros(p - 1, np.int64), others])
        d_ = np.concatenate([others, np.zeros(p - 1, np.int64)])
    else:
        k = np.arange(p)
        s_ = np.concatenate([k, k])
        d_ = np.concatenate([(k + 1) % p, (k - 1) % p])
        out = 2
    for a in (s_, d_):
        a.setflags(write=False)
    if len(_FIXED) < 4096:
        _FIXED[(jtype, p)] = (s_, d_, out)
    return s_, d_, out


def _zeros(n: int) -> np.ndarray:
    """A shared read-only array of ``n`` zeros (a phase without inter-node messages adds no traffic)."""
    z = _ZEROS.get(n)
    if z is None:
        z = _ZEROS[n] = np.zeros(n)
        z.setflags(write=False)
    return z
