"""The machine the deadline simulator drives: one engine on a grid, and the strategies' adapters.

:class:`Machine` is an :class:`~fluxlite.api.Engine` on a W x H grid (or
torus) of nodes with ``cores_per_node`` cores, plus the node/core index
maps the simulator needs (node ``i``'s vertex, its cores' vertices and
paths, its coordinates).  All allocation state lives in the engine: a
static placement is one ``update_allocate`` of whole nodes over
``[start, start + requested)``; a leak process is one core allocated
(``update_allocate`` onto the running job, i.e. a grow) or released
(``shrink``); the end of a job is ``cancel``.  Free/busy questions are
asked of the engine's planner (``_avail`` over a window).

Strategies (``STRATEGIES``) choose *which* nodes or cores:

* static (advance reservation, accept/reject at submission): ``count``,
  ``hilbert``, ``manhattan``;
* dynamic (at run time, one process = one core): ``leak``,
  ``leak-noncontig``.

Two backends do the choosing.  ``grid`` (the default when present) is the
engine's own: ``fluxlite.grid`` machines, ``Engine(policy=strategy)`` with
``allocate_deadline`` for the static allocators and ``leak_start`` /
``grow(strategy=...)`` / ``leak_join`` for the leak policies; the simulator
only turns their results into its process placement.  ``interim`` is this
module's own choosers (written to the same spec before the grid branch
existed; kept as an independent cross-check): they read free-ness from the
engine's planner and allocate through ``update_allocate`` / ``shrink``.
Both keep all allocation state in the engine.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.sim.deadline.program import Geometry

__all__ = [
    "BACKENDS",
    "STATIC",
    "STRATEGIES",
    "Machine",
    "StaticStrategy",
    "grid_backend_available",
    "make_strategy",
    "snake_order",
]

STATIC: tuple[str, ...] = ("count", "hilbert", "manhattan")
DYNAMIC: tuple[str, ...] = ("leak", "leak-noncontig")
STRATEGIES: tuple[str, ...] = STATIC + DYNAMIC


def grid_backend_available() -> bool:
    """True when the grid branch's allocators are importable (``fluxlite.grid`` + ``allocate_deadline``)."""
    try:
        import fluxlite.grid as grid
    except ImportError:
        return False
    return (
        hasattr(grid, "generate_grid")
        and hasattr(Engine, "allocate_deadline")
        and hasattr(Engine, "leak_start")
    )


BACKENDS: tuple[str, ...] = ("auto", "grid", "interim")


class Machine:
    """An engine on a grid of ``width x height`` nodes, ``cores_per_node`` cores each.

    ``backend`` says who chooses nodes: ``grid`` (the engine's own grid
    allocators and leak policies, ``fluxlite.grid``: ``Engine(policy=strategy)``,
    ``allocate_deadline``, ``leak_start``/``grow``/``leak_join``), ``interim``
    (this module's choosers over the engine's planner, then ``update_allocate``
    / ``shrink``), or ``auto`` (grid when available).  ``strategy`` is the
    run's strategy (a static one becomes the engine's match policy).
    """

    def __init__(
        self,
        width: int = 16,
        height: int = 8,
        cores_per_node: int = 4,
        torus: bool = False,
        strategy: str = "count",
        backend: str = "auto",
    ) -> None:
        if width < 1 or height < 1 or cores_per_node < 1:
            raise InputError(f"bad machine {width}x{height}x{cores_per_node}")
        if backend not in BACKENDS:
            raise InputError(f"unknown backend {backend!r} (use {', '.join(BACKENDS)})")
        if strategy not in STRATEGIES:
            raise InputError(f"unknown strategy {strategy!r} (use {', '.join(STRATEGIES)})")
        if backend == "auto":
            backend = "grid" if grid_backend_available() else "interim"
        elif backend == "grid" and not grid_backend_available():
            raise InputError("the grid backend (fluxlite.grid allocators) is not available in this build")
        self.backend = backend
        self.strategy = strategy
        self.width, self.height, self.cpn, self.torus = width, height, cores_per_node, torus
        self.nodes = width * height
        self.cores = self.nodes * cores_per_node
        self.geom = Geometry(width, height, torus, cores_per_node)
        if backend == "grid":
            from fluxlite.grid import GridInfo, generate_grid  # type: ignore[attr-defined]

            g = generate_grid(width, height, cores=cores_per_node, torus=torus)
            policy = strategy if strategy in STATIC else "first"
            self.engine = Engine(g, policy=policy, prune_filters="ALL:core,ALL:node")
            info = GridInfo.from_graph(g)
            self.grid_info = info
            nodes = [int(info.node_vid[i]) for i in range(info.n)]
            xs = [info.xy(i)[0] for i in range(info.n)]
            ys = [info.xy(i)[1] for i in range(info.n)]
            self.core_v: list[int] = [int(c) for i in range(info.n) for c in info.cores[i]]
        else:
            g, xs, ys = _plain_graph(width, height, cores_per_node)
            self.engine = Engine(g, policy="first", prune_filters="ALL:core,ALL:node")
            self.grid_info = None
            nodes = sorted(g.by_type("node"), key=lambda v: g.v_id[v])
            self.core_v = []
            for nv in nodes:
                cores = sorted((v for v in g.subtree(nv) if g.v_type[v] == "core"), key=lambda v: g.v_id[v])
                self.core_v.extend(cores)
        if len(self.core_v) != self.cores:
            raise InputError(f"the grid graph has {len(self.core_v)} cores, expected {self.cores}")
        self.geom.set_coordinates(xs, ys)
        self.node_v: list[int] = nodes
        self.core_index = {v: i for i, v in enumerate(self.core_v)}
        self.core_path = [g.path(v) for v in self.core_v]
        tr = self.engine.traverser
        plans = tr.subplan[tr.dom]
        root_plan = plans[g.roots[tr.dom]]
        self._node_plan = [plans[nv] for nv in nodes]
        ci = self._node_plan[0].index_of("core") if self._node_plan[0] is not None else None
        if root_plan is None or ci is None or root_plan.index_of("core") is None:
            raise InputError("the engine keeps no core aggregates (pruning filter ALL:core needed)")
        self._core_i = ci
        self._node_core = [p.planner_at(ci) for p in self._node_plan]
        self._root_core = root_plan.planner_at(root_plan.index_of("core"))
        self.pos = {(int(self.geom.x[i]), int(self.geom.y[i])): i for i in range(self.nodes)}
        self.neighbours: list[list[int]] = []
        for i in range(self.nodes):
            x, y = int(self.geom.x[i]), int(self.geom.y[i])
            out = []
            for dx, dy in ((1, 0), (-1, 0), (0, 1), (0, -1)):
                nx, ny = x + dx, y + dy
                if torus:
                    nx, ny = nx % width, ny % height
                j = self.pos.get((nx, ny))
                if j is not None and j != i and j not in out:
                    out.append(j)
            self.neighbours.append(out)

    # ------------------------------------------------------------ planner questions
    def core_free(self, core: int, at: int, duration: int) -> bool:
        return self.engine.traverser._avail(self.core_v[core], at, duration) >= 1

    def node_free(self, node: int, at: int, duration: int) -> bool:
        """All cores of ``node`` free over ``[at, at + duration)`` (the node's core aggregate)."""
        return self._node_core[node].avail_resources_during(at, duration) >= self.cpn

    def start_times(self, on_or_after: int, duration: int, cores: int, latest: int) -> Iterator[int]:
        """Candidate start times, earliest first, at which the machine has ``cores`` free cores
        for ``duration``, up to ``latest``: ``on_or_after`` itself, then the points of the root
        aggregate's timeline (the planner's earliest-fit iteration, as Fluxion's reserve does)."""
        p = self._root_core
        if on_or_after > latest:
            return
        if p.avail_resources_during(on_or_after, duration) >= cores:
            yield on_or_after
        t = p.avail_time_first(on_or_after + 1, duration, cores)
        while t is not None and t <= latest:
            yield t
            t = p.avail_time_next()

    def free_cores_of(self, node: int, at: int, duration: int) -> list[int]:
        base = node * self.cpn
        return [c for c in range(base, base + self.cpn) if self.core_free(c, at, duration)]

    # ------------------------------------------------------------ engine operations
    def allocate_nodes(self, jobid: int, nodes: Iterable[int], at: int, duration: int) -> None:
        """Allocate whole nodes (their cores, exclusively) to a new job over a window."""
        items = [(self.core_v[c], 1, True) for n in nodes for c in range(n * self.cpn, (n + 1) * self.cpn)]
        self.engine._allocate_items(jobid, items, at, duration, None, False)

    def allocate_cores(self, jobid: int, cores: Iterable[int], at: int, duration: int) -> None:
        """Allocate cores to a job (a new one, or a grow of a running one) over a window."""
        items = [(self.core_v[c], 1, True) for c in cores]
        self.engine._allocate_items(jobid, items, at, duration, None, False)

    def release_cores(self, jobid: int, cores: Iterable[int]) -> bool:
        """Shrink: give cores of a running job back; True if the job holds nothing more."""
        return self.engine.shrink(jobid, paths=[self.core_path[c] for c in cores])

    def release(self, jobid: int) -> None:
        """Cancel: free everything the job holds (no error if it holds nothing)."""
        if jobid in self.engine.jobs:
            if self.backend == "grid":
                self.engine.grid.cancel(jobid)  # its window table follows at once
            else:
                self.engine.cancel(jobid)
        if self.backend == "grid":
            self.engine.leak_jobs.pop(jobid, None)


def _plain_graph(width: int, height: int, cpn: int):  # type: ignore[no-untyped-def]
    """A cluster of ``width * height`` nodes (one socket of ``cpn`` cores); node ``i`` at ``(i % W, i // W)``."""
    from fluxlite.readers.generate import generate_graph

    g = generate_graph(nodes=width * height, sockets=1, cores=cpn)
    n = width * height
    return g, [i % width for i in range(n)], [i // width for i in range(n)]


def snake_order(m: Machine) -> list[int]:
    """Nodes row by row, alternating direction (boustrophedon)."""
    out = []
    for y in range(m.height):
        xs = range(m.width) if y % 2 == 0 else range(m.width - 1, -1, -1)
        out.extend(m.pos[(x, y)] for x in xs)
    return out


def hilbert_order(width: int, height: int) -> list[tuple[int, int]]:
    """A generalized Hilbert curve ("gilbert", J. Cerveny) over any W x H rectangle: unit steps."""
    out: list[tuple[int, int]] = []

    def sgn(v: int) -> int:
        return (v > 0) - (v < 0)

    def gen(x: int, y: int, ax: int, ay: int, bx: int, by: int) -> None:
        w = abs(ax + ay)
        h = abs(bx + by)
        dax, day = sgn(ax), sgn(ay)
        dbx, dby = sgn(bx), sgn(by)
        if h == 1:
            for _ in range(w):
                out.append((x, y))
                x, y = x + dax, y + day
            return
        if w == 1:
            for _ in range(h):
                out.append((x, y))
                x, y = x + dbx, y + dby
            return
        ax2, ay2 = ax // 2, ay // 2
        bx2, by2 = bx // 2, by // 2
        w2 = abs(ax2 + ay2)
        h2 = abs(bx2 + by2)
        if 2 * w > 3 * h:
            if (w2 % 2) and (w > 2):
                ax2, ay2 = ax2 + dax, ay2 + day
            gen(x, y, ax2, ay2, bx, by)
            gen(x + ax2, y + ay2, ax - ax2, ay - ay2, bx, by)
        else:
            if (h2 % 2) and (h > 2):
                bx2, by2 = bx2 + dbx, by2 + dby
            gen(x, y, bx2, by2, ax2, ay2)
            gen(x + bx2, y + by2, ax, ay, bx - bx2, by - by2)
            gen(
                x + (ax - dax) + (bx2 - dbx),
                y + (ay - day) + (by2 - dby),
                -bx2,
                -by2,
                -(ax - ax2),
                -(ay - ay2),
            )

    if width >= height:
        gen(0, 0, width, 0, 0, height)
    else:
        gen(0, 0, 0, height, width, 0)
    return out


class StaticStrategy(Protocol):
    """Chooses whole nodes free over ``[start, start + duration)`` on an engine's planner."""

    def choose(self, m: Machine, count: int, start: int, duration: int) -> list[int] | None: ...


class _Count:
    """Any ``count`` free nodes, in node order (no shape)."""

    def choose(self, m: Machine, count: int, start: int, duration: int) -> list[int] | None:
        out = []
        for n in range(m.nodes):
            if m.node_free(n, start, duration):
                out.append(n)
                if len(out) == count:
                    return out
        return None


class _Hilbert:
    """First fit of a contiguous run of Hilbert-curve positions whose nodes are all free."""

    def __init__(self, m: Machine) -> None:
        self.order = [m.pos[xy] for xy in hilbert_order(m.width, m.height)]

    def choose(self, m: Machine, count: int, start: int, duration: int) -> list[int] | None:
        run: list[int] = []
        for n in self.order:
            if m.node_free(n, start, duration):
                run.append(n)
                if len(run) == count:
                    return run
            else:
                run = []
        return None


class _Manhattan:
    """Greedy compact partition: grow from a first free node by the neighbour adding least distance."""

    def __init__(self, m: Machine) -> None:
        idx = np.arange(m.nodes)
        self.dist = m.geom.hops(idx[:, None], idx[None, :])  # all-pairs hop distances

    def choose(self, m: Machine, count: int, start: int, duration: int) -> list[int] | None:
        free = [m.node_free(n, start, duration) for n in range(m.nodes)]
        if sum(free) < count:
            return None
        if count == 1:
            return [free.index(True)]
        dist_m = self.dist
        nbrs = m.neighbours
        for first in range(m.nodes):
            if not free[first]:
                continue
            part = [first]
            inpart = {first}
            dist = dist_m[first].copy()  # sum of distances from each node to the partition
            border: set[int] = {j for j in nbrs[first] if free[j]}
            while len(part) < count and border:
                best = min(border, key=lambda j: (dist[j], j))
                border.discard(best)
                part.append(best)
                inpart.add(best)
                dist += dist_m[best]
                for j in nbrs[best]:
                    if free[j] and j not in inpart:
                        border.add(j)
            if len(part) == count:
                return part
        return None


def make_strategy(name: str, m: Machine) -> StaticStrategy | None:
    """The node chooser of a static strategy (None for the leak strategies, which place at run time)."""
    if name not in STRATEGIES:
        raise InputError(f"unknown strategy {name!r} (use {', '.join(STRATEGIES)})")
    if name == "count":
        return _Count()
    if name == "hilbert":
        return _Hilbert(m)
    if name == "manhattan":
        return _Manhattan(m)
    return None


def nodes_needed(procs: int, cpn: int) -> int:
    return max(1, math.ceil(procs / cpn))
