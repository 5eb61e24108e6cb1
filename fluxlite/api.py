"""The Python API: one object that loads a graph and matches, allocates, cancels.

:class:`Engine` bundles a :class:`~fluxlite.graph.ResourceGraph`, a
:class:`~fluxlite.match.Traverser` configured with a match policy and
pruning filters, and the match writers.  It offers the operations of
Fluxion's resource-query as plain methods::

    from fluxlite import Engine, load_jobspec

    eng = Engine.from_file("cluster.graphml", policy="low")
    r = eng.allocate(load_jobspec("job.yaml"))      # raises BusyError / UnsatisfiableError
    print(r.jobid, r.at, r.text)                     # text in the chosen match format
    eng.cancel(r.jobid)

Every failed operation leaves the engine's state exactly as it was.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fluxlite.errors import (
    BusyError,
    CommandError,
    InputError,
    MatchError,
    StateError,
    UnknownJobError,
    UnsatisfiableError,
)
from fluxlite.graph import DOWN, UP, ResourceGraph
from fluxlite.match import Traverser, parse_policy
from fluxlite.match.policies import PLACEMENTS, load_placer, placements
from fluxlite.writers import EmitError, create_writer
from jgf import Columns

__all__ = ["MATCH_OPS", "Engine", "MatchResult"]

#: the match operations of Fluxion v0.54's ``match_op_t``
MATCH_OPS = (
    "allocate",
    "allocate_orelse_reserve",
    "allocate_with_satisfiability",
    "satisfiability",
    "without_allocating",
    "without_allocating_future",
)
_PLACING_OPS = frozenset(MATCH_OPS[:3])
#: match-only operations -> the operation whose match they show
_NO_ALLOC = {"without_allocating": "allocate", "without_allocating_future": "allocate_orelse_reserve"}


def _strerror(name: str | int) -> str:
    """The C library's text for an errno name ("EINVAL" -> "Invalid argument")."""
    import errno as _errno
    import os

    code = getattr(_errno, str(name), None)
    return os.strerror(code) if isinstance(code, int) else str(name)


def _errno_name(code: int) -> str:
    import errno as _errno

    return _errno.errorcode.get(code, str(code))


class _NullWriter:
    """A match writer that writes nothing (for updates whose output nobody reads)."""

    emit_exclusive_subtrees = True
    emits_edges = False
    #: the update walk may skip its calls to emit_vtx
    emits_nothing = True

    def emit_vtx(self, *args: Any, **kwargs: Any) -> None:
        pass

    def emit_edg(self, *args: Any) -> None:
        pass

    def emit_tm(self, start: int, end: int) -> None:
        pass

    def emit_attrs(self, key: str, value: str) -> None:
        pass

    def emit(self) -> str:
        return ""

    def reset(self) -> None:
        pass


_NULL_WRITER = _NullWriter()


@dataclass
class MatchResult:
    """Outcome of one match request."""

    ok: bool
    jobid: int
    at: int = 0
    text: str = ""
    satisfiable: bool = True
    errno: str | int = 0
    error: str = ""
    reserved: bool = False
    #: the job id is spent (the next match gets the next one)
    jobid_used: bool = False
    #: (vertices, edges) of ``text``, where the caller was told them (:meth:`Engine.grow` in
    #: ``jgf`` / ``jgf_shorthand``: what the writer wrote, without parsing the text again)
    counts: tuple[int, int] | None = None

    @property
    def busy(self) -> bool:
        """The request can be satisfied by this graph, just not now."""
        return not self.ok and self.satisfiable


#: documents at least this long are attached column-wise (below it the per-node reader is as fast).
#: Since a match writer's layout is read from the bytes (jgf._columns._writer_nodes), measured
#: attach+update medians, per-node vs columnar: 0.35 vs 0.37 ms at 0.6 kB, equal at 1.2 and 1.9 kB,
#: 0.52 vs 0.46 ms (best of 200) at 6.6 kB
ATTACH_COLUMNS_MIN_BYTES = 2 << 10


class Engine:
    """A resource graph plus a matcher: the operations of resource-query as methods."""

    def __init__(
        self,
        graph: ResourceGraph,
        policy: str = "first",
        subsystems: Sequence[str] = ("containment",),
        prune_filters: str = "ALL:core,ALL:node",
        traverser_policy: str = "simple",
    ) -> None:
        self.graph = graph
        #: a static grid allocator chooses the nodes (fluxlite.grid); the traverser keeps a plain policy
        self.grid_policy: str | None = policy if PLACEMENTS.get(policy, ("",))[0] == "static" else None
        if self.grid_policy is not None:
            import dataclasses

            self.policy = dataclasses.replace(parse_policy("first"), name=policy)
        else:
            self.policy = parse_policy(policy)
        self._grid: Any = None
        if traverser_policy == "simple":
            self.traverser = Traverser(graph, self.policy, subsystems, prune_filters)
        elif traverser_policy == "flexible":
            from fluxlite.match.flexible import FlexibleTraverser

            self.traverser = FlexibleTraverser(graph, self.policy, subsystems, prune_filters)
        else:
            raise InputError(f"unknown traverser policy {traverser_policy!r} (known: simple, flexible)")
        #: ``simple`` or ``flexible`` (Fluxion's ``-T``: or_slot/xor_slot alternatives need flexible)
        self.traverser_policy = traverser_policy
        try:
            self.traverser.initialize()
        except LookupError as exc:
            raise InputError(str(exc)) from exc
        self._writers: dict[str, Any] = {}
        #: jobid -> "allocated" | "reserved"
        self.jobs: dict[int, str] = {}
        self.job_at: dict[int, int] = {}
        self._next_jobid = 1
        if self.grid_policy is not None:
            _ = self.grid  # a grid policy needs a grid machine: say so now
        #: match-format text of the last attach with ``allocate_to`` (when ``fmt`` was given)
        self.last_text = ""

    # -------------------------------------------------------------- construction
    @classmethod
    def from_file(
        cls,
        path: str | Path,
        format: str = "grug",
        policy: str = "first",
        subsystems: Sequence[str] = ("containment",),
        prune_filters: str = "ALL:core,ALL:node",
        allowlist: str | None = None,
        traverser_policy: str = "simple",
    ) -> Engine:
        """Load a graph file (GRUG, JGF, R/rv1exec or hwloc XML) and build an engine on it."""
        from fluxlite.readers import load_graph

        graph = load_graph(Path(path), format=format, allowlist=allowlist)
        return cls(
            graph,
            policy=policy,
            subsystems=subsystems,
            prune_filters=prune_filters,
            traverser_policy=traverser_policy,
        )

    @property
    def dom(self) -> str:
        return self.traverser.dom

    @property
    def preorder_count(self) -> int:
        return self.traverser.total_preorder

    @property
    def postorder_count(self) -> int:
        return self.traverser.total_postorder

    # -------------------------------------------------------------- grid machines
    @property
    def grid(self) -> Any:
        """The grid allocators and leak strategies of this engine (:class:`fluxlite.grid.ops.GridOps`).

        Built on first use; raises :class:`InputError` if the graph is not a grid machine.
        """
        if self._grid is None:  # the provider registered for the grid placements (never imported here)
            self._grid = load_placer(self.grid_policy or placements("grow")[0])(self, self.grid_policy)
        return self._grid

    @property
    def grid_info(self) -> Any:
        """The machine's geometry (:class:`fluxlite.grid.GridInfo`)."""
        return self.grid.gi

    @property
    def leak_jobs(self) -> dict[int, Any]:
        """jobid -> :class:`fluxlite.grid.LeakJob` of the jobs started by a leak strategy."""
        return self.grid.leak_jobs

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
    ) -> MatchResult:
        """Reserve whole grid nodes at the earliest start ending by ``deadline`` (see :mod:`fluxlite.grid`).

        Raises :class:`DeadlineError`, :class:`UnsatisfiableError` or
        :class:`InputError`; then nothing changed.
        """
        return self.grid.allocate_deadline(
            request, earliest, deadline, now=now, duration=duration, jobid=jobid, policy=policy, fmt=fmt
        )

    def job_nodes(self, jobid: int) -> list[int]:
        """Grid indices of the nodes job ``jobid`` uses (read from the engine's state)."""
        return self.grid.job_nodes(jobid)

    def leak_start(
        self,
        nprocs: Any,
        strategy: str = "leak",
        now: int = 0,
        duration: int | None = None,
        jobid: int | None = None,
        start_on: str = "core",
    ) -> Any:
        """Start a job with a leak strategy; returns its :class:`fluxlite.grid.LeakJob` (see :mod:`fluxlite.grid`).

        ``start_on``: the first process needs a node with a free core (``core``) or an empty node.
        """
        return self.grid.leak_start(
            nprocs, strategy, now=now, duration=duration, jobid=jobid, start_on=start_on
        )

    def leak_join(self, jobid: int, proc: Any) -> bool:
        """End one process of a leak job, or a list of them (cores freed at once); True when the job is gone."""
        return self.grid.join(jobid, proc)

    def writer(self, fmt: str) -> Any:
        """The match writer this engine uses for format ``fmt`` (made on first use)."""
        return self._writer(fmt)

    def set_writer(self, fmt: str, writer: Any) -> None:
        """Use ``writer`` for match format ``fmt`` from now on (a writer with the same output and more
        state, e.g. :class:`fluxlite.writers.jgf.JgfColumnsWriter` for ``jgf``)."""
        self._writers[fmt] = writer

    def _writer(self, fmt: str) -> Any:
        w = self._writers.get(fmt)
        if w is None:
            w = self._writers[fmt] = create_writer(fmt)
        return w

    # -------------------------------------------------------------- matching
    @staticmethod
    def with_hosts(jobspec: Any, hosts: str | Iterable[str] | None) -> Any:
        """``jobspec`` restricted to the named nodes (its own constraint and-ed with them).

        ``hosts`` is an RFC 29 hostlist (``"node[0-7]"``) or an iterable of
        exact host names; None returns ``jobspec`` unchanged.  The result is
        the jobspec with an RFC 31 constraint added, so every operation
        treats it as a full match filtered to those nodes, and the matcher
        walks only the paths to them (see ``docs/matcher.md``).  Raises
        :class:`InputError` for a bad hostlist or name.
        """
        if hosts is None:
            return jobspec
        import dataclasses

        from fluxlite.jobspec import ConditionalConstraint, HostlistConstraint
        from fluxlite.match._restrict import MAX_HOST_NAME, HostSetConstraint

        c: Any
        if isinstance(hosts, str):
            if len(hosts) > 64 * MAX_HOST_NAME:
                raise InputError(f"hostlist of {len(hosts)} characters is too long")
            try:
                c = HostlistConstraint((hosts,))
            except ValueError as exc:
                raise InputError(f"invalid hostlist {hosts[:80]!r}") from exc
        else:
            names = frozenset(hosts)
            for name in names:
                if not isinstance(name, str) or not name or len(name) > MAX_HOST_NAME:
                    raise InputError(f"invalid host name {str(name)[:80]!r}: a non-empty string is expected")
            c = HostSetConstraint(names)
        own = getattr(jobspec, "constraint", None)
        if own is not None:
            c = ConditionalConstraint("and", (own, c))
        return dataclasses.replace(jobspec, constraint=c)

    def match(
        self,
        jobspec: Any,
        op: str = "allocate",
        jobid: int | None = None,
        fmt: str = "simple",
        at: int = 0,
        _grow: bool = False,
        hosts: str | Iterable[str] | None = None,
    ) -> MatchResult:
        """Run one match; never raises for a request that cannot be placed (see ``ok``/``errno``).

        ``op`` is one of :data:`MATCH_OPS`: ``allocate``,
        ``allocate_orelse_reserve``, ``allocate_with_satisfiability``,
        ``satisfiability``, or ``without_allocating`` /
        ``without_allocating_future`` (Fluxion's match-only forms of
        ``allocate`` / ``allocate_orelse_reserve``: the resources are chosen
        and written, nothing is recorded and the job id is not used).

        ``ok`` is True exactly when the engine now holds the job (or, for the
        match-only forms, when resources were found); after a failure the
        state is what it was before.  ``jobid_used`` says whether the id is
        spent, as in Fluxion: by a placement, and by a failure that says
        busy (EBUSY) or never (ENODEV), but not by bad input or by the
        match-only and satisfiability operations.

        ``hosts`` (a hostlist or host names) restricts the match to those
        nodes (:meth:`with_hosts`): the answer of the full match filtered to
        them, at a cost that follows the named nodes, not the graph.
        """
        jobspec = self.with_hosts(jobspec, hosts)
        if op not in MATCH_OPS:
            raise InputError(f"unknown match operation {op!r} (known: {', '.join(MATCH_OPS)})")
        if jobid is None:
            jobid = self._next_jobid
        if jobid in self.jobs and not _grow:
            raise StateError(f"job id {jobid} is already allocated or reserved", jobid=jobid)
        if self.grid_policy is not None and not _grow:
            return self.grid.match(jobspec, op, jobid, fmt, at)
        no_alloc = op in _NO_ALLOC
        tr = self.traverser
        w = self._writer(fmt)
        w.reset()
        rc, got_at = tr.run(jobspec, w, _NO_ALLOC.get(op, op), jobid, at)
        errno = tr.errno
        if rc == 0:
            errno = 0
        elif not errno:
            # The walk found resources but the update could not record them
            # (e.g. a slot placed below a level the jobspec skipped).  Fluxion
            # then fails the match with the errno its walk left, EBUSY.  Whatever
            # a failed update did record is undone, so the state is as before.
            errno = "EBUSY"
            if not _grow and op != "satisfiability":
                self._roll_back(jobid, only_if_held=True)
        error = ""
        if rc != 0:
            # as Fluxion's match_allocate: the traverser's message, else the errno's
            # text unless it is plain busy/unsatisfiable; ignored when the match succeeded
            if tr.err_msg:
                error = f"match_allocate: ERROR: {tr.err_msg}\n"
            elif errno not in ("EBUSY", "ENODEV"):
                error = f"match_allocate: ERROR: traverser: {_strerror(errno)}\n"
        ok = rc == 0 and op != "satisfiability"
        text = ""
        # As Fluxion's match_allocate: the writer emits whenever the walk succeeded or failed with
        # busy / unsatisfiable (also for satisfiability, and with nothing gathered), and a writer
        # that cannot emit fails the match with its errno; the job is not recorded and its id is
        # not spent.  (Fluxion leaves what the walk allocated held by that unrecorded id; here the
        # state is rolled back, as after any failed match.)
        if rc == 0 or errno in ("EBUSY", "ENODEV"):
            try:
                if not ok:
                    w.reset()  # nothing was emitted: an empty writer (R_lite's then fails, EINVAL)
                text = w.emit() if ok else (w.emit() and "")
            except EmitError as exc:
                if ok and not _grow:
                    self._roll_back(jobid)
                ok, text = False, ""
                errno = _errno_name(exc.errno)
                error += f"match_allocate: ERROR: match writer emit: {exc.strerror}\n"
        w.reset()
        if ok and no_alloc:
            self._roll_back(jobid)
        used = op in _PLACING_OPS and (ok or errno in ("EBUSY", "ENODEV"))
        if used:
            self._next_jobid = max(self._next_jobid, jobid + 1)
        res = MatchResult(
            ok=ok,
            jobid=jobid,
            at=got_at if ok else 0,
            text=text,
            satisfiable=errno not in ("ENODEV", "ENOENT"),
            errno=errno,
            error=error,
            reserved=ok and got_at != at and not no_alloc,
            jobid_used=used,
        )
        if ok and not _grow and not no_alloc:
            self.jobs[jobid] = "reserved" if got_at != at else "allocated"
            self.job_at[jobid] = got_at
        return res

    def _roll_back(self, jobid: int, only_if_held: bool = False) -> None:
        """Free what ``jobid`` took: a match only to be shown, or a failed update's leftovers.

        The visit counts and error text stay those of the match.  O(job's
        vertices); with ``only_if_held`` a scan of the graph first.
        """
        tr = self.traverser
        if only_if_held and not tr.job_vertices(jobid):
            return
        pre, post = tr.total_preorder, tr.total_postorder
        msg = tr.err_msg
        rc = tr.remove(jobid)
        tr.total_preorder, tr.total_postorder, tr.err_msg = pre, post, msg
        if rc != 0:
            raise StateError("could not undo a match made without allocating", jobid=jobid)

    def _place(self, jobspec: Any, op: str, jobid: int | None, fmt: str, hosts: Any = None) -> MatchResult:
        from fluxlite.match.flexible import check_jobspec

        check_jobspec(jobspec, self.traverser_policy)  # slot alternatives it cannot honour: JobspecError
        r = self.match(jobspec, op=op, jobid=jobid, fmt=fmt, hosts=hosts)
        if r.ok:
            return r
        if r.error:
            raise MatchError(r.error.strip(), jobid=r.jobid)
        if r.satisfiable:
            raise BusyError("resources exist but are not free now", jobid=r.jobid)
        raise UnsatisfiableError("no state of this graph can satisfy the request", jobid=r.jobid)

    def allocate(
        self, jobspec: Any, jobid: int | None = None, fmt: str = "simple", *, hosts: Any = None
    ) -> MatchResult:
        """Allocate now; raise :class:`BusyError` or :class:`UnsatisfiableError` otherwise.

        ``hosts``: only on these nodes (a hostlist or host names, see :meth:`with_hosts`).
        """
        return self._place(jobspec, "allocate_with_satisfiability", jobid, fmt, hosts)

    def allocate_orelse_reserve(
        self, jobspec: Any, jobid: int | None = None, fmt: str = "simple", *, hosts: Any = None
    ) -> MatchResult:
        """Allocate now or reserve at the earliest time; raise :class:`UnsatisfiableError` if impossible.

        ``hosts``: only on these nodes (a hostlist or host names, see :meth:`with_hosts`).
        """
        return self._place(jobspec, "allocate_orelse_reserve", jobid, fmt, hosts)

    def grow(
        self,
        jobid: int,
        jobspec: Any = None,
        fmt: str = "jgf",
        *,
        strategy: str | None = None,
        parent: int | None = None,
        now: int = 0,
        hosts: Any = None,
        satisfiability: bool = True,
    ) -> Any:
        """MatchGrow locally: find more resources for running job ``jobid``.

        ``hosts``: only on these nodes (a hostlist or host names, see :meth:`with_hosts`).

        ``satisfiability``: when the grow cannot be placed now, find out whether
        this graph could ever place it (a second walk, at the end of the
        planning window) to raise :class:`UnsatisfiableError` rather than
        :class:`BusyError`.  A caller that asks elsewhere whichever the
        answer (a hierarchy level with a parent) passes False: a failure is
        then a :class:`BusyError` that says the question was not asked.

        ``now`` is the time (the engine's integer seconds) the new resources are
        needed from, for the jobspec's duration (a simulator's or queue's clock).

        The new resources carry the job's id; nothing the job already holds
        changes.  Returns the new resources (only them) in ``fmt``; raises
        :class:`UnknownJobError`, :class:`BusyError` or
        :class:`UnsatisfiableError` (then nothing changed).

        With ``strategy="leak"`` or ``"leak-noncontig"`` the job is a leak job
        and the grow is one fork next to grid node ``parent`` at time ``now``
        (``jobspec``: None or one core); returns a :class:`fluxlite.grid.Proc`.
        """
        if strategy is not None:
            if PLACEMENTS.get(strategy, ("",))[0] != "grow":
                known = ", ".join(placements("grow"))
                raise InputError(f"unknown grow strategy {strategy!r} (known: {known})")
            return self.grid.grow(jobid, jobspec, strategy, parent, now)
        if jobspec is None:
            raise InputError("grow needs a jobspec")
        if jobid not in self.jobs:
            raise UnknownJobError(f"nonexistent job {jobid}", jobid=jobid)
        if self.jobs[jobid] != "allocated":
            raise StateError("only a running (allocated) job can grow", jobid=jobid)
        op = "allocate_with_satisfiability" if satisfiability else "allocate"
        r = self.match(jobspec, op=op, jobid=jobid, fmt=fmt, at=now, _grow=True, hosts=hosts)
        if r.ok:
            if fmt in ("jgf", "jgf_shorthand"):
                r.counts = self._writer(fmt).counts
            return r
        if r.error:
            raise MatchError(r.error.strip(), jobid=jobid)
        if not satisfiability:
            raise BusyError(
                "no free resources for the grow here (whether this graph could ever place it was not checked)",
                jobid=jobid,
            )
        if r.satisfiable:
            raise BusyError("no free resources for the grow here", jobid=jobid)
        raise UnsatisfiableError("this graph can never satisfy the grow", jobid=jobid)

    def update_allocate(
        self,
        jobid: int,
        r_text: str | bytes,
        format: str = "jgf",
        at: int = 0,
        duration: int | None = None,
        fmt: str | None = "simple",
        reserve: bool = False,
    ) -> MatchResult:
        """Allocate to ``jobid`` exactly the resources listed in a JGF or R document (Fluxion's ``update``).

        ``format`` is ``jgf``, ``jgf_shorthand`` (a JGF whose exclusive
        vertices stand for their whole containment subtree, as ``-F
        jgf_shorthand`` writes it) or ``rv1exec``.  A JGF vertex is exclusive
        when its metadata says ``"exclusive": true``; its ``size`` is the
        number of units taken.  If ``jobid`` already runs,
        the resources are added to it (the receiving end of a MatchGrow).
        Raises :class:`InputError` for a bad document and :class:`StateError`
        when a listed resource is not free; then nothing changed.
        """
        from fluxlite.readers import locate_vertices, parse_rv1exec
        from fluxlite.readers.jgf import read_update_vertices

        g = self.graph
        items: list[tuple[int, int, bool]] = []
        if format in ("jgf", "jgf_shorthand"):
            nodes, has_dom_edges = read_update_vertices(r_text, self.dom)
            if not has_dom_edges:
                # Fluxion prints the update by walking the dominant subsystem's edges the
                # file marks; a file without any (JGF of -S CA loaded under -S PA) prints
                # nothing, though the resources are still allocated
                fmt = None
            vids = locate_vertices(g, nodes)
            items = [(v, n.size, bool(n.exclusive)) for v, n in zip(vids, nodes)]
            if format == "jgf_shorthand":
                # the shorthand lists an exclusive vertex, not what it holds: all of its
                # containment subtree comes with it, exclusively (Fluxion's jgf_shorthand reader)
                listed = {v for v, _, _ in items}
                for v, _, excl in list(items):
                    if excl:
                        for d in g.subtree(v, "containment")[1:]:
                            if d not in listed:
                                listed.add(d)
                                items.append((d, g.v_size[d], True))
        elif format == "rv1exec":
            r = parse_rv1exec(r_text, require_nodelist=False)
            # Fluxion's rv1exec updater: every listed vertex must exist on its rank (else
            # the update fails and rolls back); the rank's node is taken exclusively
            # when all the rank's other vertices are listed, shared otherwise
            for rank, children in r.ranks.items():
                vids = g.by_rank.get(rank)
                if not vids:
                    raise CommandError(f"rank {rank} not found in the resource graph")
                root = self.traverser._rank_root(vids)
                have = {(g.v_type[v], g.v_id[v]): v for v in vids if v != root}
                picked: list[int] = []
                for t, ids in children.items():
                    for i in ids:
                        v = have.get((t, i))
                        if v is None:
                            raise CommandError(f"couldn't find vertex in graph for {t}{i} on rank {rank}")
                        picked.append(v)
                items.extend((v, g.v_size[v], True) for v in picked)
                if root is not None:
                    items.append((root, g.v_size[root], len(picked) == len(vids) - 1))
        else:
            raise InputError(f"unsupported reader {format!r} (use jgf, jgf_shorthand or rv1exec)")
        return self._allocate_items(jobid, items, at, duration, fmt, reserve)

    def _allocate_items(
        self,
        jobid: int,
        items: list[tuple[int, int, bool]] | None,
        at: int,
        duration: int | None,
        fmt: str | None,
        reserve: bool,
        columns: tuple[list[int], list[int], list[bool]] | None = None,
    ) -> MatchResult:
        """Allocate ``items`` (or the same as three ``columns``, see :meth:`update_allocate`) to ``jobid``."""
        if not (items if columns is None else columns[0]):
            raise InputError("the document lists no resources")
        if duration is None:
            duration = self.traverser.graph_end - at
        grow = jobid in self.jobs
        if grow and self.jobs[jobid] != ("reserved" if reserve else "allocated"):
            raise StateError(
                f"job {jobid} is {self.jobs[jobid]}: cannot add resources to it that way", jobid=jobid
            )
        w = self._writer(fmt) if fmt is not None else _NULL_WRITER
        w.reset()
        rc = self.traverser.update_allocate(w, jobid, items, at, duration, reserve=reserve, columns=columns)
        if rc != 0:
            w.reset()
            raise StateError(self.traverser.err_msg.strip() or "update failed", jobid=jobid)
        if not grow:
            self.jobs[jobid] = "reserved" if reserve else "allocated"
            self.job_at[jobid] = at
            self._next_jobid = max(self._next_jobid, jobid + 1)
        return MatchResult(ok=True, jobid=jobid, at=at, text=w.emit(), reserved=reserve)

    def satisfiable(self, jobspec: Any, *, hosts: Any = None) -> bool:
        """True if this graph could ever satisfy ``jobspec`` (no state changes); ``hosts``: on these nodes."""
        jobspec = self.with_hosts(jobspec, hosts)
        tr = self.traverser
        w = self._writer("simple")
        w.reset()
        rc, _ = tr.run(jobspec, w, "satisfiability", self._next_jobid, 0)
        w.reset()
        return rc == 0

    def cancel(self, jobid: int) -> None:
        """Free everything ``jobid`` holds; raise :class:`UnknownJobError` for an unknown id."""
        if jobid not in self.jobs:
            raise UnknownJobError(f"nonexistent job {jobid}", jobid=jobid)
        self.remove_job(jobid)

    def remove_job(self, jobid: int) -> None:
        """Remove whatever state ``jobid`` holds in the graph (no error if it holds none)."""
        tr = self.traverser
        tr.err_msg = ""
        rc = tr.remove(jobid)
        if rc != 0:
            msg = tr.err_msg.strip() or "traverser failed to remove the job"
            raise StateError(msg, jobid=jobid)
        self.jobs.pop(jobid, None)
        self.job_at.pop(jobid, None)
        if self._grid is not None:
            self._grid.forget(jobid)

    # -------------------------------------------------------------- graph elasticity
    def attach(
        self,
        jgf_text: str | bytes | Columns,
        source: str = "<jgf>",
        *,
        allocate_to: int | None = None,
        at: int = 0,
        duration: int | None = None,
        fmt: str | None = None,
    ) -> list[int]:
        """Attach a JGF subgraph; vertices whose path exists are reused.  Returns new vertex handles.

        With ``allocate_to``, the listed resources are also allocated to that
        job over ``[at, at + duration)`` exactly as :meth:`update_allocate`
        would (the receiving end of a MatchGrow), from one parse of the
        document; if the job already runs, they are added to it.  ``fmt``
        names a match writer whose output is kept in ``last_text`` (None:
        no output is produced).  All or nothing: a bad document, or
        resources that are not free, raise and leave the graph and every
        job unchanged.  Cost O(subgraph + ancestors of the attach points).

        ``jgf_text`` may also be the document already read as :class:`jgf.Columns`
        (a hierarchy's columns wire form): the same attach without reading text.
        """
        from fluxlite.readers._common import no_gc
        from fluxlite.readers.jgf import attach_columns, attach_document, parse_jgf
        from jgf import columns_jgf, read_columns

        g = self.graph
        subsystems = set(g.paths) | set(g.out)
        with no_gc():
            # the columnar path (no object per vertex) for the subgraphs a MatchGrow hands down;
            # anything else, or any error, goes through the per-node reader, which reports it
            if isinstance(jgf_text, Columns):
                cols = jgf_text
                got = attach_columns(self.graph, cols)
                if got is None:
                    jgf_text = columns_jgf(cols)  # off the simple case: the per-node reader decides
            else:
                big = len(jgf_text) >= ATTACH_COLUMNS_MIN_BYTES
                cols = read_columns(jgf_text) if big else None
                got = attach_columns(self.graph, cols) if cols is not None else None
            if got is not None:
                new, handles, sizes, excls = got
            else:
                doc = parse_jgf(jgf_text, source=source)
                new, handles = attach_document(self.graph, doc, source=source)
                sizes = [n.size for n in doc.nodes]
                excls = [bool(n.exclusive) for n in doc.nodes]
            self.traverser.attach_update(new)
            if allocate_to is None:
                return new
            try:  # (the items as the columns they are: no tuple per item)
                res = self._allocate_items(allocate_to, None, at, duration, fmt, False, (handles, sizes, excls))
            except BaseException:
                if new:
                    self._detach(new)
                g.drop_unused_subsystems((set(g.paths) | set(g.out)) - subsystems)
                raise
            self.last_text = res.text
            return new

    def _detach(self, new: Sequence[int]) -> None:
        """Remove vertices attached a moment ago (free, so no job is affected)."""
        g = self.graph
        dom = self.traverser.dom
        newset = set(new)
        roots = [v for v in new if (p := g.parent(v, dom)) is None or p not in newset]
        self.traverser.account_removal(roots)
        g.remove_vertices(list(new))

    def holders(self, vids: Iterable[int]) -> dict[int, list[int]]:
        """Jobs holding state on any of ``vids``: job id -> those vertices."""
        tr = self.traverser
        out: dict[int, list[int]] = {}
        cols = (tr.tags, tr.allocs, tr.resvs)
        vids = vids if isinstance(vids, list) else list(vids)
        # most callers ask about free vertices (a removal, a hand-back): a C-level pass per column
        # finds nothing held, where the loop below looks at each vertex three times in Python
        if not any(any(map(col.__getitem__, vids)) for col in cols):
            return out
        for v in vids:
            for col in cols:
                d = col[v]
                if d:
                    for j in d:
                        lst = out.setdefault(j, [])
                        if not lst or lst[-1] != v:
                            lst.append(v)
        return out

    def remove_subgraph(
        self,
        path: str | None = None,
        ranks: Iterable[int] | None = None,
        force: bool = False,
        *,
        paths: Iterable[str] = (),
    ) -> list[int]:
        """Remove the subtree at ``path`` (or every subtree of broker ``ranks``) from the graph.

        ``paths``: several subtrees at once, all or nothing (a subtree inside
        another one listed is part of it); one pass over the aggregates and
        the graph, where a call per path would update the ancestors each time.
        The resources must be free; with ``force``, jobs holding them lose them
        first (as a partial release, so aggregates stay exact).  Raises
        :class:`CommandError` for an unknown path/rank and :class:`StateError`
        naming the jobs that hold the resources; nothing is removed then.
        Returns the removed handles.
        """
        g = self.graph
        tr = self.traverser
        dom = tr.dom
        roots: list[int] = []
        named = ([path] if path is not None else []) + list(paths)
        for p in named:
            sharers = g.vertices_by_path(p)
            if not sharers:
                raise CommandError(f"could not find path {p} in resource graph")
            if sharers[-1] not in roots:
                roots.append(sharers[-1])  # Fluxion's remove_subgraph takes the last of a shared path
        for r in ranks or ():
            vids = g.by_rank.get(r)
            if not vids:
                raise CommandError(f"rank {r} not found in resource graph")
            root = tr._rank_root(vids)
            if root is not None and root not in roots:
                roots.append(root)
        if not roots:
            raise CommandError("nothing to remove")
        if g.roots.get(dom) in roots:
            raise CommandError("cannot remove the root of the graph")
        if len(roots) > 1:  # a root inside another one's subtree goes with it
            rset = set(roots)
            roots = [r for r in roots if not any(a in rset for a in g.ancestors(r, dom))]
        doomed: list[int] = []
        for r in roots:
            doomed.extend(g.subtree(r, dom))
        held = self.holders(doomed)
        if held and not force:
            jobs = ", ".join(str(j) for j in sorted(held))
            raise StateError(
                f"resources are in use by job(s) {jobs}", path=",".join(named), ranks=list(ranks or [])
            )
        for jobid, vids in held.items():
            groups = []
            vset = set(vids)
            for r in roots:
                sub = [v for v in g.subtree(r, dom) if v in vset]
                if sub:
                    groups.append((r, sub))
            if tr.release_groups(jobid, groups):
                self.jobs.pop(jobid, None)
                self.job_at.pop(jobid, None)
        tr.account_removal(roots)
        g.remove_vertices(doomed)
        return doomed

    # -------------------------------------------------------------- partial release
    def shrink(
        self,
        jobid: int,
        paths: Iterable[str] = (),
        jgf: str | bytes | None = None,
        r: str | bytes | None = None,
    ) -> bool:
        """Release the subtrees at ``paths`` (or listed in a JGF / R document) from running job ``jobid``.

        Every released subtree must be held by the job (its root at least);
        whatever the job holds below it is released, the rest of the job stays
        allocated and each ancestor's aggregate drops by what was released.
        Returns True when nothing of the job is left (it is then gone).
        Raises :class:`UnknownJobError`, :class:`CommandError` (unknown path),
        :class:`StateError` (not the job's, or a reservation) or
        :class:`InputError` (bad document); then nothing changed.
        O(released subtrees + ancestors).
        """
        if r is not None:
            return self.partial_cancel(jobid, r, "rv1exec")
        from fluxlite.readers import locate_vertices, read_vertices

        if jobid not in self.jobs:
            raise UnknownJobError(f"nonexistent job {jobid}", jobid=jobid)
        if self.jobs[jobid] != "allocated":
            raise StateError("only a running (allocated) job can shrink", jobid=jobid)
        g = self.graph
        tr = self.traverser
        dom = tr.dom
        picked: list[int] = []
        for path in paths:
            sharers = g.vertices_by_path(path)
            if not sharers:
                raise CommandError(f"could not find path {path} in resource graph")
            # a path several ranks share names the job's own vertex (or vertices) there
            held = [v for v in sharers if (t := tr.tags[v]) is not None and jobid in t]
            picked.extend(held or sharers[:1])
        if jgf is not None:
            listed = locate_vertices(g, read_vertices(jgf))
            lset = set(listed)
            # a match's JGF also lists the ancestors the job shares (the cluster, a
            # node it holds only a socket of): those are not released themselves
            below = {a for v in listed for a in g.ancestors(v, dom) if a in lset}
            own = tr.allocs
            picked.extend(
                v
                for v in listed
                if v not in below or (own[v] is not None and jobid in own[v] and v != g.roots.get(dom))
            )
        if not picked:
            raise InputError("nothing to release")
        pset = set(picked)
        roots = []
        for v in dict.fromkeys(picked):
            if not any(a in pset for a in g.ancestors(v, dom)):
                roots.append(v)
        if g.roots.get(dom) in roots:
            raise StateError("cannot shrink a job by the root of the graph; cancel it instead", jobid=jobid)
        for root in roots:
            tg = tr.tags[root]
            if tg is None or jobid not in tg:
                raise StateError(f"job {jobid} does not hold {g.path(root, dom)}", jobid=jobid)
        under = tr.job_vertices_under(jobid, roots)
        groups = [(root, under[root]) for root in roots]
        tr.total_preorder = 0
        tr.total_postorder = 0
        full = tr.release_groups(jobid, groups, under)
        if full:
            del self.jobs[jobid]
            self.job_at.pop(jobid, None)
        if self._grid is not None:
            self._grid.after_release(jobid, full)
        return full

    def partial_cancel(self, jobid: int, r_text: str | bytes, format: str = "rv1exec") -> bool:
        """Release part of job ``jobid`` described by an R (``rv1exec``) or ``jgf`` document.

        Returns True when nothing of the job is left (it is then gone).  Raises
        :class:`UnknownJobError`, :class:`StateError` (reservations, or a
        release the job cannot satisfy) or :class:`InputError` (bad document);
        on any error the state is unchanged.
        """
        from fluxlite.readers import locate_vertices, parse_rv1exec, read_vertices

        if jobid not in self.jobs:
            raise UnknownJobError(f"nonexistent job {jobid}", jobid=jobid)
        if self.jobs[jobid] != "allocated":
            raise StateError("reservations not currently supported by partial cancel", jobid=jobid)
        tr = self.traverser
        if format == "rv1exec":
            r = parse_rv1exec(r_text, require_nodelist=False)
            kwargs: dict[str, Any] = {"ranks": sorted(r.ranks)}
        elif format == "jgf":
            kwargs = {"vertices": locate_vertices(self.graph, read_vertices(r_text))}
        else:
            raise InputError(f"unsupported reader {format!r} (use jgf or rv1exec)")
        try:
            plan = tr.plan_partial_release(jobid, **kwargs)
        except ValueError as exc:
            raise StateError(str(exc), jobid=jobid) from exc
        tr.total_preorder = 0
        tr.total_postorder = 0
        full = tr.release(jobid, plan)
        if full:
            del self.jobs[jobid]
            self.job_at.pop(jobid, None)
        if self._grid is not None:
            self._grid.after_release(jobid, full)
        return full

    # -------------------------------------------------------------- persistence
    def job_items(self, jobid: int) -> list[tuple[str, int, bool]]:
        """What ``jobid`` holds as (path, units, exclusive): enough to rebuild it with ``update_allocate``."""
        dom = self.traverser.dom
        return [(self.graph.path(v, dom), units, excl) for v, units, excl in self._job_item_vertices(jobid)]

    def _job_item_vertices(self, jobid: int, within: set[int] | None = None) -> list[tuple[int, int, bool]]:
        """:meth:`job_items` as vertices; with ``within``, only those of its vertices (same order)."""
        tr = self.traverser
        g = self.graph
        dom = tr.dom
        out = []
        vids = tr.job_vertices(jobid)
        if within is not None:
            vids = [v for v in vids if v in within]
        size = g.v_size
        tables = (tr.allocs, tr.resvs)
        vspans = tr.vspans
        outcol = g.out.get(dom, [()])
        for v in vids:
            units, excl = size[v], False
            for table in tables:
                d = table[v]
                if d is not None and jobid in d:
                    sp = vspans[v]
                    units = sp[d[jobid]][2] if sp is not None and d[jobid] in sp else size[v]
                    excl = True
            if excl or not outcol[v]:
                out.append((v, units, excl))
        return out

    def _saved_items(self, jobid: int) -> list[tuple[Any, ...]]:
        """:meth:`job_items`, with the rank added where a path is shared by several ranks."""
        g = self.graph
        dom = self.traverser.dom
        out: list[tuple[Any, ...]] = []
        for v, units, excl in self._job_item_vertices(jobid):
            path = g.path(v, dom)
            out.append((path, units, excl, g.v_rank[v]) if path in g.shared else (path, units, excl))
        return out

    def save_state(self) -> bytes:
        """The whole state (graph, jobs, their windows and resources) as JSON bytes."""
        import orjson

        tr = self.traverser
        jobs = []
        for jobid, kind in sorted(self.jobs.items()):
            window = None
            for v in tr.job_vertices(jobid):
                xs = tr.xspans[v]
                if xs is not None and jobid in xs:
                    window = xs[jobid]
                    break
            at, end = window if window is not None else (self.job_at.get(jobid, 0), tr.graph_end)
            jobs.append(
                {
                    "jobid": jobid,
                    "state": kind,
                    "at": at,
                    "duration": end - at,
                    "items": self._saved_items(jobid),
                }
            )
        doc = {
            "version": 1,
            "policy": self.policy.name,
            "subsystems": tr.subsystems,
            "prune_filters": str(tr.prune),
            "graph": orjson.Fragment(self._graph_text()),
            "statuses": {
                self.graph.path(v, tr.dom): "down"
                for v in self.graph.vertices()
                if self.graph.v_status[v] != UP
            },
            "jobs": jobs,
            "next_jobid": self._next_jobid,
        }
        return orjson.dumps(doc)

    #: (graph, its version, its status column, its properties, the graph's JGF) of the last save
    _saved_graph: tuple[Any, int, list[int], dict[int, dict[str, str]], bytes] | None = None

    def _graph_text(self) -> bytes:
        """The graph as compact JGF for :meth:`save_state`, written again only when it changed.

        The text is what dumping the parsed Fluxion-layout text gives, byte for byte, without
        parsing it back (1.4 MB for a 128-node graph).  It depends on the graph's structure and
        attributes, which change only with its version (vertices and edges added or removed), on
        the status column (``mark``) and on the properties (``set_property``): those two are
        compared with a copy kept from the last write, O(V) in C, against 12-15 ms to write a
        128-node graph again, which an instance's state file did after every change."""
        from fluxlite.readers import graph_to_jgf

        g = self.graph
        last = self._saved_graph
        if (
            last is not None
            and last[0] is g
            and last[1] == g.version
            and last[2] == g.v_status
            and last[3] == g.v_props
        ):
            return last[4]
        text = graph_to_jgf(g, style="compact")
        self._saved_graph = (g, g.version, list(g.v_status), {v: dict(p) for v, p in g.v_props.items()}, text)
        return text

    @classmethod
    def restore_state(cls, data: bytes | str) -> Engine:
        """Rebuild an engine from :meth:`save_state` output."""
        import orjson

        from fluxlite.readers import load_graph

        doc = orjson.loads(data)
        if doc.get("version") != 1:
            raise InputError(f"unsupported state version {doc.get('version')!r}")
        graph = load_graph(orjson.dumps(doc["graph"]), format="jgf")
        eng = cls(
            graph, policy=doc["policy"], subsystems=doc["subsystems"], prune_filters=doc["prune_filters"]
        )
        for path, status in doc.get("statuses", {}).items():
            eng.set_status(path, status)
        for job in doc["jobs"]:
            items = []
            for path, units, excl, *rank in job["items"]:
                v = graph.vertex_at(path, rank[0]) if rank else graph.vertex_by_path(path)
                if v is None:
                    raise InputError(f"state names a vertex that is not in its graph: {path}")
                items.append((v, units, excl))
            w = eng._writer("simple")
            w.reset()
            rc = eng.traverser.update_allocate(
                w, job["jobid"], items, job["at"], job["duration"], reserve=job["state"] == "reserved"
            )
            w.reset()
            if rc != 0:
                raise StateError(f"cannot restore job {job['jobid']}: {eng.traverser.err_msg.strip()}")
            eng.jobs[job["jobid"]] = job["state"]
            eng.job_at[job["jobid"]] = job["at"]
        eng._next_jobid = doc.get("next_jobid", 1)
        return eng

    # -------------------------------------------------------------- status, find
    def _vertex(self, path: str) -> int:
        v = self.graph.vertex_by_path(path)
        if v is None:
            raise CommandError(f"could not find path {path} in resource graph")
        return v

    def set_status(self, path: str, status: str) -> None:
        """Mark the vertex at ``path`` up or down (its subtree is skipped by matches while down).

        Every vertex with that path (several ranks on one host share it), as Fluxion's ``mark``.
        """
        if status not in ("up", "down"):
            raise CommandError(f"unrecognized status {status!r}: expected up or down")
        self._vertex(path)
        for v in self.graph.vertices_by_path(path):
            self.traverser.mark(v, status == "up")

    def get_status(self, path: str) -> str:
        """Status of the (first) vertex at ``path``; :meth:`get_statuses` gives every sharer's."""
        return "up" if self.graph.v_status[self._vertex(path)] == UP else "down"

    def get_statuses(self, path: str) -> list[str]:
        """Status of every vertex at ``path``, in creation order (one per rank sharing it)."""
        self._vertex(path)
        vs = self.graph.v_status
        return ["up" if vs[v] == UP else "down" for v in self.graph.vertices_by_path(path)]

    def find_text(self, criteria: str, fmt: str = "simple") -> str:
        """Resources matching ``criteria`` (resource-query's ``find``), in the given format."""
        from fluxlite.match.find import find

        w = self._writer(fmt)
        w.reset()
        find_mode = getattr(w, "find_mode", None)
        if find_mode is not None:
            find_mode(True)
        try:
            find(self.traverser, w, criteria)
            from fluxlite.writers import format_find_output

            return format_find_output(w.emit_json())
        finally:
            if find_mode is not None:
                find_mode(False)


_ = DOWN
