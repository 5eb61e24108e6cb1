"""Grid allocators and leak policies on the engine: read free-ness from it, hand it the chosen resources.

:class:`GridOps` is attached to an :class:`~fluxlite.api.Engine` (``eng.grid``).
It keeps no allocation state: which node or core is free over a window is
read from the traverser's ``xspans`` column (every job that uses a vertex or
anything below it, with its window) and the vertex status; the chosen
resources are allocated with the engine's exact-item path
(``Engine._allocate_items`` -> ``Traverser.update_allocate``), which updates
the planner spans and the subtree aggregates like any match, and released
with ``Traverser.release_groups`` (shrink) or ``Engine.cancel``.  What it does
keep is policy state: the leak entry node that rotates from job to job and
each leak job's processes (which core, or oversubscribed on which node).
"""

from __future__ import annotations

import math
import operator
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from typing import TYPE_CHECKING, Any

import numpy as np

from fluxlite.errors import BusyError, DeadlineError, InputError, PlannerError, StateError, UnsatisfiableError
from fluxlite.graph import UP
from fluxlite.grid.alloc import ABLATION_ALLOCATORS, ALLOCATORS
from fluxlite.grid.machine import GridInfo

if TYPE_CHECKING:
    from fluxlite.api import Engine, MatchResult

__all__ = [
    "GRID_POLICIES",
    "LEAK_STRATEGIES",
    "ForkBatch",
    "GridOps",
    "LeakJob",
    "Proc",
    "placer",
    "request_size",
]

#: static grid allocators usable as match policies (registered in fluxlite.match.policies.PLACEMENTS)
GRID_POLICIES = tuple(ALLOCATORS)
#: a free row of the window table: a window that meets no interval
_NEVER_S = np.iinfo(np.int64).max
_NEVER_E = np.iinfo(np.int64).min

#: the window table's time buckets: 2**15 s (about 9 hours) each; a window over more is filed
#: under each bucket it meets, up to _BUCKETS_MAX of them (a wider one is looked at by every query)
_BUCKET_BITS = 15
_BUCKETS_MAX = 64
#: the stamp of a node whose windows were never read (matches no dict)
_UNREAD = object()


def _getter(keys: Sequence[int]) -> Any:
    """``col -> tuple(col[k] for k in keys)``, done by one :func:`operator.itemgetter` call."""
    if len(keys) > 1:
        return operator.itemgetter(*keys)
    return lambda col: tuple(col[k] for k in keys)


#: grow/shrink strategies (registered in fluxlite.match.policies.PLACEMENTS)
LEAK_STRATEGIES = ("leak", "leak-noncontig")


@dataclass(slots=True)
class Proc:
    """One process of a leak job: on core ``core`` of grid node ``node``, or oversubscribed there."""

    node: int
    core: int | None
    oversubscribed: bool = False


@dataclass
class LeakJob:
    """A job placed by a leak policy: its processes and how many are oversubscribed."""

    jobid: int
    strategy: str
    start: int
    end: int
    entry: int
    procs: list[Proc] = field(default_factory=list)
    #: processes currently running on top of another process's core
    oversubscribed: int = 0
    #: processes ever placed by oversubscription
    oversubscribed_total: int = 0

    def nodes(self) -> list[int]:
        """Grid indices the job's processes run on (first-use order, no repeats)."""
        return list(dict.fromkeys(p.node for p in self.procs))


def _jobspec_counts(jobspec: Any) -> tuple[int, int, float]:
    """(nodes, cores, duration) a jobspec asks for; counts multiply down the resource tree."""
    from fluxlite.jobspec import Jobspec, parse_jobspec

    if not isinstance(jobspec, Jobspec):
        jobspec = parse_jobspec(jobspec)
    nodes = cores = 0

    def walk(rs: Sequence[Any], mult: int) -> None:
        nonlocal nodes, cores
        for r in rs:
            m = mult * r.count.min
            if r.type == "node":
                nodes += m
            elif r.type == "core":
                cores += m
            walk(r.with_, m)

    walk(jobspec.resources, 1)
    return nodes, cores, jobspec.duration


def request_size(request: Any, cores_per_node: int, duration: int | None) -> tuple[int, int]:
    """(whole nodes, duration) of a request: a node count, or a jobspec (its nodes, else its cores)."""
    if isinstance(request, bool):
        raise InputError("a grid request is a node count or a jobspec")
    if isinstance(request, int):
        k = request
        if duration is None:
            raise InputError("a request given as a node count needs a duration")
    else:
        nodes, cores, js_dur = _jobspec_counts(request)
        if nodes:
            k = nodes
        elif cores:
            k = math.ceil(cores / max(cores_per_node, 1))
        else:
            raise InputError("the jobspec asks for neither nodes nor cores")
        if duration is None:
            duration = math.ceil(js_dur) if js_dur > 0 else 0
            if duration <= 0:
                from fluxlite.match import SYSTEM_DEFAULT_DURATION

                duration = SYSTEM_DEFAULT_DURATION
    if k <= 0:
        raise InputError(f"a grid request needs at least one node, got {k}")
    if duration is None or duration <= 0:
        raise InputError(f"duration must be positive, got {duration}")
    return k, int(duration)


class ForkBatch:
    """The forks of one leak job at one time, allocated together (see :meth:`GridOps.fork_batch`).

    The engine's state does not change inside a batch (the allocation is made at its end), so
    what each node has free over the window is read from the engine once, and the cores this
    batch took are skipped with a pointer per node (a fork always takes a node's first free
    core).  A node found with nothing free stays so for the rest of the batch, which lets the
    search over "the job's nodes, each then its neighbours" resume where the last fork found a
    core instead of starting over (the sequence only grows at its end, as the job gains nodes).
    The placements are those of one :meth:`GridOps.fork` each.
    """

    def __init__(self, ops: GridOps, job: LeakJob, now: int) -> None:
        self.ops = ops
        self.job = job
        self.now = now
        self.d = job.end - now
        self.taken: set[int] = set()
        self.new: list[Proc] = []
        #: node -> its free cores over the window (read once), and how many of them this batch took
        self._free: dict[int, list[int]] = {}
        self._used: dict[int, int] = {}
        eng = ops.eng
        self.full = ops._no_free_core(eng.traverser.g.roots[eng.traverser.dom], now, self.d)
        #: the job's nodes in first-use order (``job.nodes()``), kept up to date as forks land
        self._nodes: list[int] = job.nodes()
        self._node_set = set(self._nodes)
        #: the search over the job's nodes and their neighbours: every candidate before
        #: (node index, step) has nothing free; step 0 is the node itself, k > 0 its k-th neighbour
        self._cur = (0, 0)

    def _first_free(self, u: int) -> int | None:
        cores = self._free.get(u)
        if cores is None:
            cores = self._free[u] = self.ops._free_cores(u, self.now, self.d)
            self._used[u] = 0
        k = self._used[u]
        return cores[k] if k < len(cores) else None

    def has_free(self, u: int) -> bool:
        """Node ``u`` has a core free over the job's window that no fork of this batch took."""
        return not self.full and self._first_free(u) is not None

    def _near_job(self) -> tuple[int, int] | None:
        """The first free core on one of the job's nodes or a neighbour of it (nodes in first-use order)."""
        ff = self._first_free
        nb = self.ops.gi.neighbours
        nodes = self._nodes
        i, k = self._cur
        while i < len(nodes):
            u = nodes[i]
            seq = nb(u)
            while k <= len(seq):
                w = u if k == 0 else seq[k - 1]
                c = ff(w)
                if c is not None:
                    self._cur = (i, k)
                    return w, c
                k += 1
            i += 1
            k = 0
        self._cur = (i, 0)
        return None

    def _snake(self, start: int) -> tuple[int, int] | None:
        """The first node in snake order from position ``start`` with a free core (as ``_snake_scan``)."""
        ops = self.ops
        order = ops._snake_list
        n = ops.gi.n
        ff = self._first_free
        for k in range(n):
            i = order[(start + k) % n]
            c = ff(i)
            if c is not None:
                return i, c
        return None

    def _add(self, p: Proc) -> None:
        self.job.procs.append(p)
        self.new.append(p)
        if p.node not in self._node_set:
            self._node_set.add(p.node)
            self._nodes.append(p.node)

    def fork(self, parent: int, only: Sequence[int] | None = None) -> Proc | None:
        """Place one process next to grid node ``parent`` (as :meth:`GridOps.fork`); ``only``: look
        on these nodes alone, in order (a local fork), and return None when none has a free core.
        None also when the non-contiguous leak finds no core anywhere (:meth:`GridOps.fork` raises)."""
        ops, job = self.ops, self.job
        if not 0 <= parent < ops.gi.n:
            raise InputError(f"parent node {parent} is not a grid index", jobid=job.jobid)
        place: tuple[int, int] | None = None
        ff = self._first_free
        if only is not None:
            if not self.full:
                for u in only:
                    c = ff(u)
                    if c is not None:
                        place = (u, c)
                        break
            if place is None:
                return None
        elif not self.full:
            c = ff(parent)
            if c is not None:
                place = (parent, c)
            else:
                for w in ops.gi.neighbours(parent):
                    c = ff(w)
                    if c is not None:
                        place = (w, c)
                        break
                if place is None:
                    place = self._near_job()
        if place is None:
            if job.strategy == "leak":
                p = Proc(parent, None, True)
                self._add(p)
                job.oversubscribed += 1
                job.oversubscribed_total += 1
                return p
            if not self.full:
                place = self._snake(int(ops.gi.snake_pos[job.procs[0].node if job.procs else job.entry]))
            if place is None:
                return None
        node, core = place
        self.taken.add(core)
        self._used[node] += 1
        p = Proc(node, core)
        self._add(p)
        return p

    def __enter__(self) -> ForkBatch:
        return self

    def _undo(self) -> None:
        job = self.job
        gone = {id(p) for p in self.new}
        job.procs = [p for p in job.procs if id(p) not in gone]
        over = sum(p.core is None for p in self.new)
        job.oversubscribed -= over
        job.oversubscribed_total -= over
        self.new = []

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is not None:
            self._undo()
            return
        items = [(p.core, 1, True) for p in self.new if p.core is not None]
        if items:
            try:
                self.ops.eng._allocate_items(self.job.jobid, items, self.now, self.d, None, False)
            except BaseException:
                self._undo()
                raise


def placer(eng: Engine, policy: str | None = None) -> GridOps:
    """The provider factory the placement registry names (``fluxlite.match.policies.PLACEMENTS``)."""
    return GridOps(eng, policy)


class GridOps:
    """Grid allocators and leak strategies over one engine (see the module docstring)."""

    def __init__(self, eng: Engine, policy: str | None = None) -> None:
        self.eng = eng
        self.policy = policy
        self.gi = GridInfo.from_graph(eng.graph, eng.traverser.dom)
        gi = self.gi
        self.cores_per_node = max((len(c) for c in gi.cores), default=0)
        self._node_vid = gi.node_vid
        self._cores = gi.cores
        #: grid index -> the exact items of a whole-node allocation (the node and its cores, exclusive)
        self._node_items = [
            [(v, 1, True), *((c, 1, True) for c in cs)] for v, cs in zip(gi.node_vid, gi.cores)
        ]
        self._snake_list = [int(i) for i in gi.snake_order]
        #: the next leak job's entry position in snake order
        self._entry = 0
        #: jobid -> LeakJob
        self.leak_jobs: dict[int, LeakJob] = {}
        # the window table (see _windows), checked against the engine at every call: per grid
        # index, the node's xspans dict when last read with the vertex's change counter and the
        # dict's length, a copy of the dict, and its jobs' rows; the rows (grid index, start, end;
        # a free row is (-1, _NEVER_S, _NEVER_E)) and the free rows
        self._cols: list[Any] | None = None
        #: the stamps, one list per part, by grid index: the dict (held, so its id is not reused
        #: while compared), the change counter (None: never bumped) and the length (-1: no dict)
        self._st_xs: list[Any] = [_UNREAD] * gi.n
        self._st_ep: list[int | None] = [None] * gi.n
        self._st_len: list[int] = [-1] * gi.n
        #: the nodes' vertices as one getter (a tuple of their entries in one C call)
        self._node_get = _getter(gi.node_vid)
        self._copy: list[dict[int, Any]] = [{} for _ in range(gi.n)]
        self._rows: list[dict[int, int]] = [{} for _ in range(gi.n)]
        #: jobid -> the grid indices where it has a row (see _follow)
        self._job_nodes: dict[int, set[int]] = {}
        self._wi = np.full(64, -1, dtype=np.int64)
        self._ws = np.full(64, _NEVER_S, dtype=np.int64)
        self._we = np.full(64, _NEVER_E, dtype=np.int64)
        self._free_rows: list[int] = list(range(63, -1, -1))
        self._flat: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        #: the rows by time: bucket (time >> _BUCKET_BITS) -> rows whose window meets it; wide rows
        self._buckets: dict[int, set[int]] = {}
        self._wide: set[int] = set()
        #: the nodes' statuses when last read, and the mask of the nodes down then
        self._down_st: tuple[int, ...] | None = None
        self._down_mask = np.zeros(0, dtype=bool)

    # ------------------------------------------------------------ state, read from the engine
    def _windows(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every job window on every node as a table of rows (grid index, start, end), read from ``xspans``.

        A row not in use reads ``(-1, _NEVER_S, _NEVER_E)``: a window that meets no
        interval, so a test "starts before T and ends after T0" never picks it.  The
        arrays are the table itself (read them before the next call; do not write).

        Read from the engine at every call, node by node: a node's rows change only when
        the engine changed its ``xspans`` since the last read.  A change is seen through
        the traverser's per-vertex change counter (``_epoch``: bumped by every update and
        release walk through the vertex, and by every purge of a vertex's job state), the
        identity of the node's dict (a vertex added or removed, a restore) and its length.
        A changed node's jobs are compared with a copy of its dict as last read: rows are
        added for new jobs and freed for gone ones, and if any job's window changed the
        node's rows are all read again.  So the table is a cache checked against the
        engine at each call, never a second source of truth; the cost of a call is the
        number of nodes plus the size of the changed nodes' dicts.  The stamps of all the
        nodes are read and compared a part at a time, each in one C-level pass (a call that
        finds no change does no Python work per node).
        """
        tr = self.eng.traverser
        xspans = tr.xspans
        if xspans is not self._cols:  # another traverser or column: read everything again
            self._cols = xspans
            n = len(self._st_xs)
            self._st_xs = [_UNREAD] * n
            self._st_ep = [None] * n
            self._st_len = [-1] * n
            for i in range(n):
                self._drop_rows(i, list(self._rows[i]))
                self._copy[i] = {}
            self._flat = None
        # the stamps of every node, each part read in one pass (C loops), compared as lists
        xss = self._node_get(xspans)
        eps = list(map(tr._epoch.get, self._node_vid))
        lens = [len(x) if x is not None else -1 for x in xss]
        old_xs, ep_old, len_old = self._st_xs, self._st_ep, self._st_len
        if eps == self._st_ep and lens == self._st_len and all(map(operator.is_, xss, old_xs)):
            return self._wi, self._ws, self._we
        self._st_ep = eps
        self._st_len = lens
        self._st_xs = list(xss)
        self._flat = None
        ne = operator.ne
        moved = map(operator.or_, map(ne, eps, ep_old), map(ne, lens, len_old))
        for i in compress(range(len(xss)), map(operator.or_, moved, map(operator.is_not, xss, old_xs))):
            xs = xss[i]
            old = self._copy[i]
            if not xs:
                self._drop_rows(i, list(self._rows[i]))
                old.clear()
                continue
            if lens[i] == len(old) + 1:  # one job more? a new key is the dict's last
                j = next(reversed(xs))
                if j not in old:
                    old[j] = xs[j]
                    if old == xs:
                        self._add_rows(i, (j,), old)
                        continue
                    del old[j]
            self._reread(i, xs, old)
        return self._wi, self._ws, self._we

    def _reread(self, i: int, xs: dict[int, Any], old: dict[int, Any]) -> None:
        """Node ``i``'s rows follow its windows ``xs``, given ``old``, the windows they hold now
        (updated to ``xs``): the (job, window) pairs in one and not the other are the changes."""
        try:
            diff = xs.items() ^ old.items()
        except TypeError:  # a window that cannot be hashed: every row of the node again
            self._drop_rows(i, list(self._rows[i]))
            old.clear()
            old.update(xs)
            self._add_rows(i, list(old), old)
            return
        missing = _UNREAD
        gone = [j for j, w in diff if xs.get(j, missing) != w]  # gone, or the old window of a changed one
        new = [j for j, w in diff if xs.get(j, missing) == w]  # new, or the new window of a changed one
        if gone:
            self._drop_rows(i, gone)
            for j in gone:
                del old[j]
        for j in new:
            old[j] = xs[j]
        self._add_rows(i, new, old)

    def _drop_rows(self, i: int, jobs: Any) -> None:
        """Free node ``i``'s rows of ``jobs`` (each still in the node's copy, with its row's window)."""
        rows = self._rows[i]
        free = self._free_rows
        where = self._job_nodes
        copy = self._copy[i]
        for j in jobs:
            r = rows.pop(j)
            on = where[j]
            on.discard(i)
            if not on:
                del where[j]
            s, e = copy[j]
            self._unfile(r, s, e)
            self._wi[r] = -1
            self._ws[r] = _NEVER_S
            self._we[r] = _NEVER_E
            free.append(r)

    def _add_rows(self, i: int, jobs: Any, windows: dict[int, Any]) -> None:
        rows = self._rows[i]
        free = self._free_rows
        wi, ws, we = self._wi, self._ws, self._we
        for j in jobs:
            if not free:  # grow the table: twice the rows
                n = len(wi)
                wi = self._wi = np.concatenate([wi, np.full(n, -1, dtype=np.int64)])
                ws = self._ws = np.concatenate([ws, np.full(n, _NEVER_S, dtype=np.int64)])
                we = self._we = np.concatenate([we, np.full(n, _NEVER_E, dtype=np.int64)])
                free.extend(range(2 * n - 1, n - 1, -1))
            r = free.pop()
            rows[j] = r
            on = self._job_nodes.get(j)
            if on is None:
                self._job_nodes[j] = {i}
            else:
                on.add(i)
            s, e = windows[j]
            wi[r] = i
            ws[r] = s
            we[r] = e
            self._file(r, s, e)

    def _file(self, r: int, s: int, e: int) -> None:
        """Row ``r`` (window ``[s, e)``) joins the time buckets it meets (or the wide rows)."""
        lo, hi = s >> _BUCKET_BITS, (e - 1) >> _BUCKET_BITS
        if e <= s or hi - lo > _BUCKETS_MAX:  # (an empty window still passes the exact test)
            self._wide.add(r)
            return
        bk = self._buckets
        for b in range(lo, hi + 1):
            got = bk.get(b)
            if got is None:
                bk[b] = {r}
            else:
                got.add(r)

    def _unfile(self, r: int, s: int, e: int) -> None:
        lo, hi = s >> _BUCKET_BITS, (e - 1) >> _BUCKET_BITS
        if e <= s or hi - lo > _BUCKETS_MAX:
            self._wide.discard(r)
            return
        bk = self._buckets
        for b in range(lo, hi + 1):
            got = bk[b]
            got.discard(r)
            if not got:
                del bk[b]

    def _synced(self, i: int) -> bool:
        """Node ``i``'s rows are its windows in the engine now: its stamps are the engine's."""
        tr = self.eng.traverser
        if tr.xspans is not self._cols:
            return False
        v = self._node_vid[i]
        xs = tr.xspans[v]
        return (
            xs is self._st_xs[i]
            and tr._epoch.get(v) == self._st_ep[i]
            and (len(xs) if xs is not None else -1) == self._st_len[i]
        )

    def _follow(self, jobid: int, nodes: Sequence[int]) -> None:
        """The rows of ``nodes`` follow an allocation or cancel of ``jobid`` that this object just made.

        Each node was in step with the engine just before that call (:meth:`_synced`).  An
        allocation or cancel of one job changes only that job's entry of a vertex's ``xspans``
        (the jobs that use the vertex, each with its window: another job's use does not change
        when this one comes or goes), so the node's new windows are its old ones with that one
        entry added, changed or gone: that row alone is redone and the node's stamps become the
        engine's, without comparing its other windows (a node holds up to several hundred).  A
        node whose window count does not fit that keeps its old stamps, so the next
        :meth:`_windows` reads it again in full.
        """
        tr = self.eng.traverser
        xspans, ep = tr.xspans, tr._epoch
        for i in nodes:
            v = self._node_vid[i]
            xs = xspans[v]
            old = self._copy[i]
            had = jobid in old
            has = xs is not None and jobid in xs
            n = len(xs) if xs is not None else 0
            if n != len(old) - had + has:
                continue
            if had:
                self._drop_rows(i, (jobid,))
                del old[jobid]
            if has:
                old[jobid] = xs[jobid]
                self._add_rows(i, (jobid,), old)
            self._st_xs[i] = xs
            self._st_ep[i] = ep.get(v)
            self._st_len[i] = len(xs) if xs is not None else -1
            self._flat = None

    def cancel(self, jobid: int) -> None:
        """``Engine.cancel(jobid)``; the window table follows the nodes the job held (:meth:`_follow`)."""
        nodes = [i for i in self._job_nodes.get(jobid, ()) if self._synced(i)]
        self.eng.cancel(jobid)
        if nodes:
            self._follow(jobid, nodes)

    def _near(self, t0: int, limit: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(grid index, start, end) of the job windows on the nodes that meet ``[t0, limit)`` (read
        from the engine: :meth:`_windows` first), in no particular order.

        The rows are found through time buckets of ``2**_BUCKET_BITS`` seconds: a row is filed
        under every bucket its window meets (a window over more than ``_BUCKETS_MAX`` buckets
        is a wide row, always looked at), so every window that meets ``[t0, limit)`` is in a
        bucket that range meets; those rows are then tested exactly.  A range over more buckets
        than that tests the whole table.
        """
        wi, ws, we = self._windows()
        lo, hi = t0 >> _BUCKET_BITS, (limit - 1) >> _BUCKET_BITS
        if hi - lo > _BUCKETS_MAX:
            near = (ws < limit) & (we > t0)  # a free row meets no interval
            return wi[near], ws[near], we[near]
        bk = self._buckets
        rows = set(self._wide)
        for b in range(lo, hi + 1):
            got = bk.get(b)
            if got:
                rows |= got
        r = np.fromiter(rows, dtype=np.int64, count=len(rows))
        idx, s, e = wi.take(r), ws.take(r), we.take(r)
        near = (s < limit) & (e > t0)
        return idx[near], s[near], e[near]

    def _spans(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(grid index, start, end) of every job window on every node (from ``xspans``), read-only arrays.

        The rows in use of :meth:`_windows` (so read from the engine at every call); the
        order of the windows is not meaningful.
        """
        wi, ws, we = self._windows()
        if self._flat is None:
            live = wi >= 0
            idx, s, e = wi[live], ws[live], we[live]
            for arr in (idx, s, e):
                arr.setflags(write=False)
            self._flat = (idx, s, e)
        return self._flat

    def _down(self) -> np.ndarray:
        """Boolean mask by grid index: the node is not up (read-only; read from the graph at every
        call, the nodes' statuses in one pass, and built again only when one of them changed)."""
        st = self._node_get(self.eng.graph.v_status)
        if st != self._down_st:
            mask = np.array([x != UP for x in st], dtype=bool)
            mask.setflags(write=False)
            self._down_st, self._down_mask = st, mask
        return self._down_mask

    def free_nodes(self, at: int, duration: int) -> np.ndarray:
        """Boolean mask by grid index: node up and used by no job over ``[at, at + duration)``."""
        idx, s, e = self._spans()
        return self._free_mask(idx, s, e, self._down(), at, duration)

    def _free_mask(
        self, idx: np.ndarray, s: np.ndarray, e: np.ndarray, down: np.ndarray, at: int, duration: int
    ) -> np.ndarray:
        free = ~down
        if len(idx):
            hit = (s < at + duration) & (e > at)
            free[idx[hit]] = False
        return free

    def occupancy(self, at: int) -> np.ndarray:
        """Job id using each node at time ``at`` (0: none; the lowest id when several share a node), by grid index."""
        xspans = self.eng.traverser.xspans
        out = np.zeros(self.gi.n, dtype=np.int64)
        for i, v in enumerate(self._node_vid):
            xs = xspans[v]
            if xs:
                jobs = [j for j, (s, e) in xs.items() if s <= at < e]
                if jobs:
                    out[i] = min(jobs)
        return out

    def job_nodes(self, jobid: int) -> list[int]:
        """Grid indices of the nodes ``jobid`` uses (all of them or some cores), read from the engine."""
        tags = self.eng.traverser.tags
        return [i for i, v in enumerate(self._node_vid) if (tg := tags[v]) is not None and jobid in tg]

    # ------------------------------------------------------------ static allocators
    def allocate_deadline(
        self,
        request: Any,
        earliest: int,
        deadline: int | None,
        now: int = 0,
        duration: int | None = None,
        jobid: int | None = None,
        policy: str | None = None,
        fmt: str | None = None,
        busy_error: bool = False,
        nodes: list[int] | None = None,
    ) -> MatchResult:
        """Reserve whole nodes at the earliest start meeting the deadline (see :mod:`fluxlite.grid`).

        ``nodes``: a list to which the grid indices of the nodes placed are appended, in grid
        index order (:meth:`job_nodes` of the new job, without reading them back).
        """
        eng = self.eng
        policy = policy or self.policy or "hilbert"
        choose = ALLOCATORS.get(policy) or ABLATION_ALLOCATORS.get(policy)
        if choose is None:
            raise InputError(f"unknown grid allocator {policy!r} (known: {', '.join(ALLOCATORS)})")
        k, d = request_size(request, self.cores_per_node, duration)
        if jobid is None:
            jobid = eng._next_jobid
        if jobid in eng.jobs:
            raise StateError(f"job id {jobid} is already allocated or reserved", jobid=jobid)
        gi = self.gi
        down = self._down()
        if k > gi.n - int(down.sum()):
            raise UnsatisfiableError(
                f"the machine has {gi.n - int(down.sum())} nodes up, the job asks for {k}", jobid=jobid
            )
        t0 = max(earliest, now)
        limit = eng.traverser.graph_end if deadline is None else deadline
        if t0 + d > limit:
            if busy_error:
                raise BusyError("resources exist but are not free now", jobid=jobid)
            raise DeadlineError(
                f"cannot meet the deadline: earliest start {t0} + runtime {d} > {limit}", jobid=jobid
            )
        idx, s, e = self._near(t0, limit)  # only windows that meet [t0, limit) can stand in the way
        cands = np.unique(e[e > t0]) if len(e) else np.empty(0, dtype=np.int64)
        times = [t0, *cands[cands + d <= limit].tolist()]
        for t in times:
            free = self._free_mask(idx, s, e, down, t, d)
            if int(free.sum()) < k:
                continue
            chosen = choose(gi, free, k)
            if chosen is None:
                continue
            items: list[tuple[int, int, bool]] = []
            for i in chosen:
                items.extend(self._node_items[i])
            synced = [int(i) for i in chosen if self._synced(i)]  # all of them: _near has just read them
            got = eng._allocate_items(jobid, items, t, d, fmt, t > now)
            self._follow(jobid, synced)
            if nodes is not None:
                nodes.extend(sorted(chosen))
            return got
        if busy_error:
            raise BusyError("resources exist but are not free now", jobid=jobid)
        raise DeadlineError(
            f"cannot meet the deadline: no {k} nodes free for {d} s starting in [{t0}, {limit - d}]",
            jobid=jobid,
        )

    def match(self, jobspec: Any, op: str, jobid: int | None, fmt: str, at: int) -> MatchResult:
        """``Engine.match`` for a grid policy: allocate now, reserve later, or check satisfiability."""
        from fluxlite.api import MatchResult

        eng = self.eng
        if jobid is None:
            jobid = eng._next_jobid
        try:
            k, d = request_size(jobspec, self.cores_per_node, None)
        except InputError as exc:
            return MatchResult(ok=False, jobid=jobid, errno="EINVAL", error=f"match_allocate: ERROR: {exc}\n")
        down = int(self._down().sum())
        if op == "satisfiability":
            sat = k <= self.gi.n - down
            return MatchResult(ok=False, jobid=jobid, satisfiable=sat, errno=0 if sat else "ENODEV")
        deadline = None if op == "allocate_orelse_reserve" else at + d
        try:
            r = self.allocate_deadline(jobspec, at, deadline, now=at, jobid=jobid, fmt=fmt)
        except UnsatisfiableError:
            eng._next_jobid = max(eng._next_jobid, jobid + 1)
            return MatchResult(ok=False, jobid=jobid, satisfiable=False, errno="ENODEV", jobid_used=True)
        except DeadlineError:
            eng._next_jobid = max(eng._next_jobid, jobid + 1)
            return MatchResult(ok=False, jobid=jobid, satisfiable=True, errno="EBUSY", jobid_used=True)
        r.jobid_used = True  # a placement spends the id, as in Engine.match
        eng._next_jobid = max(eng._next_jobid, r.jobid + 1)
        return r

    # ------------------------------------------------------------ leak
    def _free_cores(self, i: int, at: int, duration: int) -> list[int]:
        """Core vertices of node ``i`` used by no job over the window (none if the node is down)."""
        g = self.eng.graph
        if g.v_status[self._node_vid[i]] != UP:
            return []
        xspans = self.eng.traverser.xspans
        end = at + duration
        out = []
        for c in self._cores[i]:
            xs = xspans[c]
            if xs:
                busy = False
                for s, e in xs.values():
                    if s < end and e > at:
                        busy = True
                        break
                if busy:
                    continue
            out.append(c)
        return out

    def _no_free_core(self, v: int, at: int, duration: int) -> bool:
        """True when vertex ``v``'s core aggregate (its subtree planner) has no core free over the window.

        A sound negative test only: a free count above zero may be spread over
        several cores, each busy for part of the window, so callers then look
        at the cores themselves.
        """
        tr = self.eng.traverser
        sp = tr.subplan[tr.dom][v]
        k = None if sp is None else sp.index_of("core")
        if k is None:
            return False
        try:
            return sp.planner_at(k).avail_resources_during(at, duration) <= 0
        except PlannerError:
            return False

    def _snake_scan(
        self,
        from_pos: int,
        at: int,
        duration: int,
        taken: set[int],
        known_busy: set[int] = frozenset(),
        empty: bool = False,
    ) -> tuple[int, list[int]] | None:
        """First node in snake order from position ``from_pos`` (wrapping) with a free core not in ``taken``.

        ``known_busy``: nodes the caller has just found without a free core over the same window.
        ``empty``: only a node whose every core is free counts.
        """
        order = self._snake_list
        n = self.gi.n
        for k in range(n):
            i = order[(from_pos + k) % n]
            if i in known_busy:
                continue
            cores = [c for c in self._free_cores(i, at, duration) if c not in taken]
            if cores and (not empty or len(cores) == len(self._cores[i])):
                return i, cores
        return None

    def leak_start(
        self,
        nprocs: Any,
        strategy: str = "leak",
        now: int = 0,
        duration: int | None = None,
        jobid: int | None = None,
        start_on: str = "core",
    ) -> LeakJob:
        """Start a leak job of ``nprocs`` processes (see :mod:`fluxlite.grid`); BusyError if no core is free.

        ``start_on``: the first process needs a node with a free core (``core``) or a node with no
        process at all (``empty``).
        """
        if start_on not in ("core", "empty"):
            raise InputError(f"start_on must be core or empty, got {start_on!r}")
        eng = self.eng
        if strategy not in LEAK_STRATEGIES:
            raise InputError(f"unknown leak strategy {strategy!r} (known: {', '.join(LEAK_STRATEGIES)})")
        if isinstance(nprocs, bool):
            raise InputError("nprocs must be a process count or a jobspec")
        if not isinstance(nprocs, int):
            nodes, cores, js_dur = _jobspec_counts(nprocs)
            nprocs = cores or nodes * self.cores_per_node
            if duration is None and js_dur > 0:
                duration = math.ceil(js_dur)
        if nprocs <= 0:
            raise InputError(f"a leak job needs at least one process, got {nprocs}")
        if duration is None or duration <= 0:
            raise InputError(f"duration must be positive, got {duration}")
        if jobid is None:
            jobid = eng._next_jobid
        if jobid in eng.jobs:
            raise StateError(f"job id {jobid} is already allocated or reserved", jobid=jobid)
        n = self.gi.n
        entry = self._entry
        # the engine's state does not change until the allocation at the end: look at each node once
        memo: dict[int, list[int]] = {}

        def free_cores(u: int) -> list[int]:
            got = memo.get(u)
            if got is None:
                got = memo[u] = self._free_cores(u, now, duration)
            return got

        if self._no_free_core(eng.traverser.g.roots[eng.traverser.dom], now, duration):
            raise BusyError("no node has a free core", jobid=jobid)
        found = self._snake_scan(entry, now, duration, set(), empty=start_on == "empty")
        if found is None:
            raise BusyError(f"no node has a free {'node' if start_on == 'empty' else 'core'}", jobid=jobid)
        start, _ = found
        job = LeakJob(jobid, strategy, now, now + duration, entry)
        taken: set[int] = set()
        procs: list[Proc] = []
        # breadth-first over nodes with free cores, from the start node
        seen = {start}
        queue = deque([start])
        nb = self.gi.neighbours
        while queue and len(procs) < nprocs:
            u = queue.popleft()
            for c in free_cores(u):
                if len(procs) >= nprocs:
                    break
                procs.append(Proc(u, c))
                taken.add(c)
            for w in nb(u):
                if w not in seen and free_cores(w):
                    seen.add(w)
                    queue.append(w)
        while len(procs) < nprocs:
            # the region is full: what a fork would do
            if strategy == "leak":
                real = [p for p in procs if p.core is not None]
                node = real[len(procs) % len(real)].node
                procs.append(Proc(node, None, True))
                job.oversubscribed += 1
                job.oversubscribed_total += 1
                continue
            got = self._snake_scan(self.gi.snake_pos[start], now, duration, taken)
            if got is None:
                break
            i, cores = got
            for c in cores:
                if len(procs) >= nprocs:
                    break
                procs.append(Proc(i, c))
                taken.add(c)
        if len(procs) < nprocs:
            raise BusyError(f"only {len(procs)} free cores for {nprocs} processes", jobid=jobid)
        items = [(p.core, 1, True) for p in procs if p.core is not None]
        eng._allocate_items(jobid, items, now, duration, None, False)
        job.procs = procs
        self.leak_jobs[jobid] = job
        # the next job enters the snake elsewhere: spread jobs over the machine
        self._entry = (entry + max(1, n // 7 + 1)) % n
        return job

    def grow(self, jobid: int, jobspec: Any, strategy: str, parent: int | None, now: int) -> Proc:
        """``Engine.grow(strategy=...)``: check the request and the job, then :meth:`fork`."""
        from fluxlite.errors import UnknownJobError

        if jobspec is not None:
            nodes, cores, _ = _jobspec_counts(jobspec)
            if nodes or cores != 1:
                raise InputError("a leak grow places one process: the jobspec must ask for one core")
        job = self.leak_jobs.get(jobid)
        if job is None:
            if jobid not in self.eng.jobs:
                raise UnknownJobError(f"nonexistent job {jobid}", jobid=jobid)
            raise StateError(f"job {jobid} was not started by a leak strategy", jobid=jobid)
        if job.strategy != strategy:
            raise StateError(f"job {jobid} runs with strategy {job.strategy}, not {strategy}", jobid=jobid)
        return self.fork(jobid, parent, now)

    def fork(self, jobid: int, parent: int | None = None, now: int = 0) -> Proc:
        """Place one new process of leak job ``jobid`` next to ``parent`` (a grid index); see :mod:`fluxlite.grid`.

        A batch of one (:meth:`fork_batch`): the rules live there.  BusyError when the
        non-contiguous leak finds no free core anywhere (nothing changed).
        """
        job = self.leak_jobs.get(jobid)
        if job is not None and parent is None:
            parent = job.procs[0].node if job.procs else job.entry
        with self.fork_batch(jobid, now) as b:
            p = b.fork(int(parent) if parent is not None else 0)
        if p is None:
            raise BusyError("no free core anywhere for the new process", jobid=jobid)
        return p

    def fork_batch(self, jobid: int, now: int) -> ForkBatch:
        """Several forks of one job at one time, placed one after the other and allocated in one engine call.

        ``with ops.fork_batch(jobid, now) as b: b.fork(parent)`` places each
        process by the rules of :meth:`fork` as if the forks before it in the
        batch were already allocated (their cores count as taken), and at the
        end of the block allocates all the new cores with one update of the
        ancestors' aggregates: the same placement as one :meth:`fork` each.
        If the block raises, or the allocation fails, nothing changed.
        """
        job = self.leak_jobs.get(jobid)
        if job is None:
            from fluxlite.errors import UnknownJobError

            raise UnknownJobError(f"job {jobid} is not a running leak job", jobid=jobid)
        if now >= job.end:
            raise StateError(f"job {jobid} ends at {job.end}: cannot fork at {now}", jobid=jobid)
        return ForkBatch(self, job, now)

    def join(self, jobid: int, proc: Proc | Sequence[Proc]) -> bool:
        """End process ``proc`` (or several, in order): cores are released at once; True when the job holds nothing.

        Several processes ending together (a phase boundary) are released in
        one engine call: the same result as one call each, with one update of
        the ancestors' aggregates.  A process that is not the job's refuses
        the whole call, nothing changed.
        """
        eng = self.eng
        job = self.leak_jobs.get(jobid)
        if job is None:
            from fluxlite.errors import UnknownJobError

            raise UnknownJobError(f"job {jobid} is not a running leak job", jobid=jobid)
        ending = [proc] if isinstance(proc, Proc) else list(proc)
        mine = {id(p) for p in job.procs}
        for p in ending:
            if id(p) not in mine:
                raise StateError(f"process {p} is not one of job {jobid}'s", jobid=jobid)
            mine.discard(id(p))  # the same process twice is refused too
        release: list[int] = []
        # the oversubscribed processes of each node, in the job's order: the first takes over a
        # core its node gives back (the processes still to end in this call are candidates too,
        # as when they end one call each)
        waiting: dict[int, deque[Proc]] = {}
        for q in job.procs:
            if q.core is None:
                waiting.setdefault(q.node, deque()).append(q)
        for p in ending:
            if p.core is None:
                w = waiting[p.node]
                del w[next(k for k, q in enumerate(w) if q is p)]  # by identity: equal Procs differ
                job.oversubscribed -= 1
                continue
            heirs = waiting.get(p.node)
            if heirs:
                heir = heirs.popleft()
                heir.core = p.core
                heir.oversubscribed = False
                job.oversubscribed -= 1
                continue
            release.append(p.core)
        gone = {id(p) for p in ending}
        job.procs = [q for q in job.procs if id(q) not in gone]
        if not release:
            return False
        tr = eng.traverser
        tr.total_preorder = 0
        tr.total_postorder = 0
        full = tr.release_groups(jobid, [(c, [c]) for c in release])
        if full:
            eng.jobs.pop(jobid, None)
            eng.job_at.pop(jobid, None)
            if not job.procs:
                self.leak_jobs.pop(jobid, None)
        return full

    def after_release(self, jobid: int, gone: bool) -> None:
        """Part of ``jobid`` was released outside :meth:`join` (shrink, partial cancel): drop its lost processes."""
        job = self.leak_jobs.get(jobid)
        if job is None:
            return
        if gone:
            self.leak_jobs.pop(jobid, None)
            return
        tags = self.eng.traverser.tags
        job.procs = [p for p in job.procs if p.core is None or jobid in (tags[p.core] or {})]

    def forget(self, jobid: int) -> None:
        """The engine removed ``jobid``: drop its leak bookkeeping."""
        self.leak_jobs.pop(jobid, None)
