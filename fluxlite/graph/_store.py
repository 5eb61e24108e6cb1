"""The resource graph store: structure in rustworkx, attributes in columns.

A :class:`ResourceGraph` is a directed multigraph whose vertices are resources
(cluster, rack, node, socket, core, gpu, memory, ...) and whose edges carry a
*subsystem* label (``containment`` is the dominant tree; ``power``,
``network`` ... are extra relations on the same vertices).

Structure lives in a :class:`rustworkx.PyDiGraph` (``graph.rx``) so that users
can run any rustworkx algorithm on it; node payloads are the vertex handles
and edge payloads the edge handles.  Attributes live in plain Python lists
indexed by the vertex handle (*columns*), which keeps a million-vertex graph
in a few hundred MiB and makes the matcher's inner loop a list lookup instead
of an attribute fetch on a per-vertex object.

Handles (``vid``/``eid``) are rustworkx indices and are reused after removal:
they are never resource *identity*.  Identity is ``uniq_id`` and the path in
each subsystem; :attr:`ResourceGraph.by_path` maps a path to its vertex in
O(1), which is what makes attaching a subgraph cost O(subgraph), not O(graph).
Several vertices of different broker ranks may share a path (R of a test
instance: four ranks on one host); :attr:`ResourceGraph.shared` lists them.

Observers (the scheduler state that keeps per-vertex planners) register with
:meth:`ResourceGraph.add_observer` and are told about added and removed
vertices so their own columns stay aligned.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import compress, filterfalse, repeat
from operator import eq, sub
from typing import Any, Protocol

import rustworkx as rx

from fluxlite.errors import GraphFormatError

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed
    from fluxlite import _cyshim as cython

__all__ = ["CONTAINMENT", "DOWN", "UP", "FluxionIds", "GraphObserver", "ResourceGraph"]

CONTAINMENT = "containment"
UP = 0
DOWN = 1
STATUS_NAMES = {UP: "up", DOWN: "down"}
STATUS_VALUES = {"up": UP, "down": DOWN}

_EMPTY: tuple[int, ...] = ()


# ------------------------------------------------------------------ column scans
# Whole-column tests of a bulk attach (here and in readers.jgf / hierarchy._wire), as typed loops
# when compiled: the builtins they replace (``min``, ``max``, ``in``) compare each entry by the
# object protocol, a hundred instructions each where a typed loop takes a few.  Run pure, each is
# the builtin expression it stands for.
#
# The scans read ``lst[k]`` with the index checks off (``boundscheck(False)``, ``wraparound(False)``:
# a plain C array read, where the checked read is a helper call per entry).  That is safe only while
# ``0 <= k < len(lst)`` holds for every read, so each such loop keeps to this pattern:
#   * ``n = len(lst)`` is taken just before the loop, ``k`` runs over ``range(n)`` (or a tail of it);
#   * ``lst`` is a local name for a list, never rebound, and nothing in the loop runs Python code that
#     could change the list: each entry's type is tested (``type(o) is int`` / ``str`` / ``is None``)
#     before anything else is done with it, so a conversion or a length never calls back into Python,
#     and nothing in the loop allocates an object the garbage collector tracks (which could run a
#     finalizer).
# Any other index (a vertex id into a column, a value into a table) keeps its checks.


@cython.boundscheck(False)  # lst[0] with n > 0, lst[k] for k in range(1, n): see "column scans" above
@cython.wraparound(False)
@cython.locals(
    lst=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, x=cython.Py_ssize_t, lo=cython.Py_ssize_t, hi=cython.Py_ssize_t
)
def _typed_bounds(xs: Sequence[int]) -> tuple[int, int] | None:
    """``(min(xs), max(xs))`` by one typed pass, compiled, for a non-empty list whose entries are all
    ``int`` within the C range; None for any other entry or sequence, or run pure."""
    if not cython.compiled or type(xs) is not list:
        return None
    lst = xs
    n = len(lst)
    if n == 0:
        return None
    try:
        o = lst[0]
        if type(o) is not int:
            return None
        lo = hi = o
        for k in range(1, n):
            o = lst[k]
            if type(o) is not int:
                return None
            x = o
            if x < lo:
                lo = x
            elif x > hi:
                hi = x
    except OverflowError:
        return None
    return lo, hi


def int_bounds(xs: Sequence[int]) -> tuple[int, int]:
    """``(min(xs), max(xs))`` of a non-empty sequence (as values: a bool counts as its int).

    Compiled, one typed pass over a list whose entries are all ``int`` within the C range; any
    other entry (or sequence) takes the builtins."""
    got = _typed_bounds(xs)
    return got if got is not None else (min(xs), max(xs))


@cython.boundscheck(False)  # lst[k] for k < n, buf[k * w + j] for j < w: the buffer holds n * w bytes
@cython.wraparound(False)
@cython.locals(
    lst=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, j=cython.Py_ssize_t, w=cython.Py_ssize_t,
    x=cython.longlong, u=cython.ulonglong, buf=cython.uchar[:],
)  # fmt: skip
def pack_ints(xs: Sequence[int], width: int) -> bytes | None:
    """``array(typecode of width, xs).tobytes()`` on a little-endian machine: each entry as ``width``
    bytes (1, 2, 4 or 8), little-endian two's complement, for entries the caller knows fit that width
    (their bounds chose it).  Compiled, one typed pass over a list of ints (bools count as 0 / 1)
    within the C range writing the bytes, where the array converts each entry by the object
    protocol; None for any other entry or sequence, or run pure (the caller builds the array)."""
    if not cython.compiled or type(xs) is not list or width not in (1, 2, 4, 8):
        return None
    lst = xs
    n = len(lst)
    w = width
    out = bytearray(n * w)
    if n == 0:
        return b""
    buf = out
    try:
        for k in range(n):
            o = lst[k]
            if type(o) is int:
                x = o
            elif type(o) is bool:
                x = 1 if o is True else 0
            else:
                return None
            u = x
            for j in range(w):
                buf[k * w + j] = u & 0xFF
                u >>= 8
    except OverflowError:
        return None
    return bytes(out)


@cython.boundscheck(False)  # lst[k] for k in range(len(lst)), an identity test each: see "column scans"
@cython.wraparound(False)
@cython.locals(lst=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t)
def has_none(xs: Sequence[Any]) -> bool:
    """``None in xs`` for a sequence of strings (or None): compiled, an identity test per entry of a
    list where ``in`` compares each string with None by the object protocol.  (Other entries could
    compare equal to None without being it: only str / None columns are passed.)"""
    if cython.compiled and type(xs) is list:
        lst = xs
        n = len(lst)
        for k in range(n):
            if lst[k] is None:
                return True
        return False
    return None in xs


@cython.boundscheck(False)  # lst[k] for k in range(len(lst)), the length of an exact str each: see "column scans"
@cython.wraparound(False)
@cython.locals(lst=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, s=str)
def has_empty(xs: Sequence[str]) -> bool:
    """``"" in xs`` for a sequence of strings (compiled: a length test per ``str`` entry of a list, where
    ``in`` compares each with "" by the object protocol; any other entry or sequence takes ``in``)."""
    if cython.compiled and type(xs) is list:
        lst = xs
        n = len(lst)
        for k in range(n):
            o = lst[k]
            if type(o) is not str:
                break
            s = o  # (typed: the length is read from the string, where len(o) is a call)
            if len(s) == 0:
                return True
        else:
            return False
    return "" in xs


@cython.boundscheck(False)  # lst[k] for k in range(len(lst)), the length of an exact str each: see "column scans"
@cython.wraparound(False)
@cython.locals(lst=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, m=cython.Py_ssize_t, top=cython.Py_ssize_t, s=str)
def max_len(xs: Sequence[str]) -> int:
    """``max(map(len, xs))`` of a non-empty sequence of strings (compiled: a typed pass over a list of
    ``str``; anything else takes the builtins)."""
    if cython.compiled and type(xs) is list:
        lst = xs
        n = len(lst)
        if n > 0:
            top = 0
            for k in range(n):
                o = lst[k]
                if type(o) is not str:
                    break
                s = o  # (typed: the length is read from the string)
                m = len(s)
                if m > top:
                    top = m
            else:
                return top
    return max(map(len, xs))


@cython.boundscheck(False)  # lst[k] as in "column scans"; seen[x] only after the test 0 <= x <= top
@cython.wraparound(False)
@cython.locals(
    lst=list,
    n=cython.Py_ssize_t,
    k=cython.Py_ssize_t,
    x=cython.Py_ssize_t,
    lo=cython.Py_ssize_t,
    hi=cython.Py_ssize_t,
    top=cython.Py_ssize_t,
    seen=bytearray,
)
def ints_distinct(xs: Sequence[int]) -> bool:
    """``len(set(xs)) == len(xs)`` for a sequence of ints.

    Compiled, for a list of ``int`` within [-2**62, 2**62) whose range is at most about four times its
    length (a subtree's uniq ids): a typed pass for the bounds and one marking a byte per value, where
    the set hashes and inserts each entry.  Anything else takes the set."""
    bounds = _typed_bounds(xs)
    if bounds is not None:
        lst = xs  # type: ignore[assignment]
        lo, hi = bounds
        if (lo >> 62) in (0, -1) and (hi >> 62) in (0, -1) and hi - lo < 4 * len(lst) + 64:
            top = hi - lo
            seen = bytearray(top + 1)
            # (the entries were all ints within [lo, hi] in _typed_bounds; tested again here, as the
            # unchecked reads need nothing to have run in between: a changed list takes the set)
            n = len(lst)
            for k in range(n):
                o = lst[k]
                if type(o) is not int:
                    break
                x = o
                x -= lo
                if x < 0 or x > top:
                    break
                if seen[x]:
                    return False
                seen[x] = 1
            else:
                return True
    return len(set(xs)) == len(xs)


@cython.boundscheck(False)  # lst[k] for k in range(len(lst)) (see "column scans": the loop appends ints
@cython.wraparound(False)  # to a list of its own, which the collector never runs for); p[0] after len(p) > 0
@cython.locals(lst=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, p=str, roots=list)
def path_roots(paths: Sequence[str]) -> list[int] | None:
    """The positions of the one-component paths (``"/x"``: no "/" after the first character) when every
    path starts with "/"; None when one does not, or when run pure or given anything but a list of
    ``str`` (the caller then takes its own way: a C pass over the text).  Compiled: one typed pass."""
    if not cython.compiled or type(paths) is not list:
        return None
    lst = paths
    n = len(lst)
    roots = []
    for k in range(n):
        o = lst[k]
        if type(o) is not str:
            return None
        p = o
        if len(p) == 0 or p[0] != "/":
            return None
        if p.find("/", 1) < 0:
            roots.append(k)
    return roots


@cython.locals(lst=list, row=tuple, col=list, out=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t, j=cython.Py_ssize_t)
def rows_columns(rows: Sequence[tuple[Any, ...]], width: int) -> list[list[Any]]:
    """``[list(c) for c in zip(*rows)]`` (``width`` empty lists for no rows): the columns of rows of
    ``width`` entries (rows of other lengths: the zip's, up to the shortest).  Compiled, for a list of
    exact tuples of that length: a typed pass per column, where the star call makes an iterator per
    row; anything else takes the zip."""
    if cython.compiled and type(rows) is list and all(type(r) is tuple and len(r) == width for r in rows):
        lst = rows
        n = len(lst)
        out = []
        for j in range(width):
            col = []
            for k in range(n):
                row = lst[k]
                col.append(row[j])
            out.append(col)
        return out
    return [list(c) for c in zip(*rows)] if len(rows) else [[] for _ in range(width)]


@cython.locals(lst=list, c=list, d=dict, out=list, n=cython.Py_ssize_t, k=cython.Py_ssize_t)
def positions_of(ids: Sequence[int], col: Sequence[int], pos: dict[int, int]) -> list[int | None]:
    """``[pos.get(col[i]) for i in ids]``: where each id's entry of ``col`` sits (None: nowhere), as the
    hierarchy's encoder finds an edge's ends among the nodes sent.  Compiled, for lists: one typed
    loop (C reads, a dict lookup each), where two maps call a method per entry."""
    if cython.compiled and type(ids) is list and type(col) is list and type(pos) is dict:
        lst = ids
        c = col
        d = pos
        n = len(lst)
        out = []
        for k in range(n):
            out.append(d.get(c[lst[k]]))
        return out
    return list(map(pos.get, map(col.__getitem__, ids)))


def _inverse(handles: list[int], lo: int) -> list[int]:
    """For ``handles`` a permutation of ``lo..lo+n-1``: the position of ``lo + j`` at ``j`` (in C)."""
    order = [0] * len(handles)
    list(map(order.__setitem__, map(sub, handles, repeat(lo)), range(len(handles))))
    return order


@cython.locals(vals=list, out=list, table=dict, k=cython.Py_ssize_t, n=cython.Py_ssize_t)
def _interned_column(values: Sequence[str], intern: Any) -> list[str]:
    """``values`` with every string replaced by its interned copy.  O(n).

    One typed loop (compiled: list reads and dict lookups in C); a value that is the same object
    as the one before it (runs of one type in a subtree) takes the same copy without a lookup.  A
    column of one value (every entry equal to the first: counted in C, an identity test first) is
    that value's copy repeated."""
    vals = values if type(values) is list else list(values)
    n = len(vals)
    if n > 0 and vals.count(vals[0]) == n:
        return [intern(vals[0])] * n
    out = []  # (appended to: compiled, an append is inline where an indexed store calls a helper)
    table = {}
    last: Any = None
    got: Any = None
    for k in range(n):
        v = vals[k]
        if v is not last or k == 0:
            got = table.get(v)
            if got is None:
                got = intern(v)
                table[v] = got
            last = v
        out.append(got)
    return out


@cython.locals(rk=list, vids=list, a=cython.Py_ssize_t, k=cython.Py_ssize_t, n=cython.Py_ssize_t)
def _extend_runs(by_rank: dict[int, list[int]], rk: list[int], vids: list[int]) -> None:
    """``by_rank[rk[k]].append(vids[k])`` for every k, as one extend per run of equal ranks."""
    n = len(rk)
    a = 0
    for k in range(1, n + 1):
        if k < n:
            x = rk[k]
            y = rk[a]
            if x is y or x == y:
                continue
        lst = by_rank.get(rk[a])
        if lst is None:
            by_rank[rk[a]] = vids[a:k]
        else:
            lst.extend(vids[a:k])
        a = k


@cython.locals(xs=list, k=cython.Py_ssize_t, n=cython.Py_ssize_t, lo=cython.Py_ssize_t, x=cython.Py_ssize_t)
def _is_run(xs: list[int], lo: int) -> bool:
    """``xs == list(range(lo, lo + len(xs)))`` for a list of ints, without building the range."""
    n = len(xs)
    for k in range(n):
        x = xs[k]
        if x != lo + k:
            return False
    return True


@cython.boundscheck(False)  # (every handle is in range, checked by the caller; every k is below m)
@cython.wraparound(False)
@cython.locals(
    got=list, src=list, dst=list, ssc=list, relc=list, a=list, b=list, c=list, d=list, q=list,
    k=cython.Py_ssize_t, m=cython.Py_ssize_t, e=cython.Py_ssize_t,
)  # fmt: skip
def _scatter_edges(
    got: list[int], sources: Any, targets: Any, ss_col: list[str], rel_col: list[str], g: Any, seq0: int
) -> bool:
    """Write new edge ``k``'s columns at handle ``got[k]`` (handles that refill removed edges in another
    order), one typed pass (compiled: C stores, where a map per column calls a method per edge);
    False, having written nothing, unless every column is a list (then the caller maps them).
    The handles are in range (the caller checked them).  O(len(got))."""
    cols = (got, sources, targets, ss_col, rel_col, g.e_src, g.e_dst, g.e_ss, g.e_rel, g.e_seq)
    if any(type(x) is not list for x in cols):
        return False
    got, src, dst, ssc, relc, a, b, c, d, q = cols
    m = len(got)
    for k in range(m):
        e = got[k]
        a[e] = src[k]
        b[e] = dst[k]
        c[e] = ssc[k]
        d[e] = relc[k]
        q[e] = seq0 + k
    return True


@cython.locals(
    a=list, b=list, k=cython.Py_ssize_t, n=cython.Py_ssize_t, x=cython.Py_ssize_t, y=cython.Py_ssize_t
)
def _same_ints(a: list[int], b: list[int]) -> bool:
    """``a == b`` for two lists of ints (compiled: a C compare per entry, where ``==`` compares two
    int objects per entry)."""
    n = len(a)
    if len(b) != n:
        return False
    for k in range(n):
        x = a[k]
        y = b[k]
        if x != y:
            return False
    return True


def _guess(free: list[int], n: int) -> list[int] | None:
    """The ``n`` handles expected from rustworkx's next additions (``free``: the guessed free slots,
    the next one last), or None when fewer are known."""
    if n == 0 or len(free) < n:
        return None
    return free[: len(free) - n - 1 : -1] if len(free) > n else free[::-1]


def _take_guess(free: list[int], got: list[int], guess: list[int] | None = None) -> bool:
    """Drop the slots ``got`` used from ``free``; return whether ``got`` is ``guess`` (the payloads
    given are the handles).  A guess that failed, or additions off the guessed slots, empty ``free``
    (it is no longer known)."""
    n = len(got)
    if guess is None:
        guess = _guess(free, n)
    if guess is not None and (_same_ints(got, guess) if type(got) is list else got == guess):
        del free[len(free) - n :]
        return True
    free.clear()
    return False


class GraphObserver(Protocol):
    """Something that keeps per-vertex columns aligned with a graph."""

    def vertex_added(self, vid: int) -> None:
        """Called after vertex ``vid`` was created (its handle may be a reused one)."""

    def vertex_removed(self, vid: int) -> None:
        """Called before vertex ``vid`` is deleted."""

    # An observer may also define ``vertices_added(vids)`` and ``vertices_removed(vids)``,
    # called once for a bulk addition or removal instead of once per vertex.


class FluxionIds:
    """The uniq ids and ranks Fluxion's GRUG reader gives the vertices of one load.

    Fluxion numbers vertices as it generates them, one recipe edge at a time
    (every child of that edge, parent by parent), and gives a ``node`` the
    next rank and every other vertex the reader's rank, -1 in resource-query
    (``resource_reader_grug.cpp``: ``emit_vertex``).  The store keeps its own
    order (each node's subtree contiguous) and lets every vertex of a node
    carry the node's rank, which the matcher and the rank-based commands use;
    the writers translate with this.  ``uniq[u]`` is the Fluxion uniq id of
    the vertex whose store uniq id is ``u`` (for ``u < len(uniq)``);
    vertices added later keep their own.
    """

    __slots__ = ("_store", "uniq")

    def __init__(self, uniq: Sequence[int]) -> None:
        from array import array

        self.uniq = array("q", uniq)
        self._store: Any = None  # the inverse, made on first use

    def uniq_of(self, u: int) -> int:
        """The Fluxion uniq id of store uniq id ``u``."""
        return self.uniq[u] if 0 <= u < len(self.uniq) else u

    def store_uniqs(self, fluxion: Sequence[int]) -> list[int]:
        """The store uniq ids that :meth:`uniq_of` maps to ``fluxion`` (Fluxion uniq ids, e.g. a JGF
        document's, which fluxlite's writers and Fluxion's write): attached vertices keep their
        document's uniq id in what the writers write, as Fluxion keeps it.  An id outside the
        load's numbering is its own.  O(len(fluxion)) after an O(load) inverse on first use.
        """
        inv = self._store
        if inv is None:
            from array import array

            inv = array("q", [-1]) * (max(self.uniq, default=-1) + 1)
            for u, f in enumerate(self.uniq):
                inv[f] = u
            self._store = inv
        n = len(inv)
        return [inv[f] if 0 <= f < n and inv[f] >= 0 else f for f in fluxion]

    def rank_of(self, u: int, rtype: str, rank: int) -> int:
        """The rank Fluxion gives the vertex of store uniq id ``u``, type ``rtype`` and store rank ``rank``."""
        return rank if rtype == "node" or not 0 <= u < len(self.uniq) else -1

    def columns_of(self, uniqs: list[int], types: list[str], ranks: list[int]) -> tuple[list[int], list[int]]:
        """``(list(map(uniq_of, uniqs)), list(map(rank_of, uniqs, types, ranks)))``, column-wise.  O(n)."""
        n = len(self.uniq)
        if not uniqs or min(uniqs) < 0 or max(uniqs) >= n:
            return list(map(self.uniq_of, uniqs)), list(map(self.rank_of, uniqs, types, ranks))
        out = [-1] * len(ranks)
        for k in compress(range(len(types)), map(eq, types, repeat("node"))):
            out[k] = ranks[k]
        return list(map(self.uniq.__getitem__, uniqs)), out


class ResourceGraph:
    """A resource graph: rustworkx structure plus columnar vertex attributes.

    Complexity: adding a vertex or edge is O(1); ``vertex_by_path`` is O(1);
    ``ancestors`` is O(depth).
    """

    __slots__ = (
        "_efree",
        "_eseq",
        "_fluxion_ids",
        "_interned",
        "_live",
        "_next_uniq",
        "_observers",
        "_vfree",
        "by_path",
        "by_rank",
        "e_dst",
        "e_rel",
        "e_seq",
        "e_src",
        "e_ss",
        "jgf_ecache",
        "jgf_vcache",
        "out",
        "parent_edge",
        "paths",
        "roots",
        "rx",
        "shared",
        "v_basename",
        "v_id",
        "v_name",
        "v_props",
        "v_rank",
        "v_size",
        "v_status",
        "v_type",
        "v_uniq",
        "v_unit",
        "version",
        "wire_vcache",
    )

    def __init__(self) -> None:
        self.rx: rx.PyDiGraph = rx.PyDiGraph(multigraph=True)
        self.v_type: list[str] = []
        self.v_basename: list[str] = []
        self.v_name: list[str] = []
        self.v_id: list[int] = []
        self.v_uniq: list[int] = []
        self.v_rank: list[int] = []
        self.v_size: list[int] = []
        self.v_unit: list[str] = []
        self.v_status: list[int] = []
        self.v_props: dict[int, dict[str, str]] = {}
        #: how Fluxion's reader numbered and ranked the vertices, where that differs from the
        #: store's own (``FluxionIds`` of a GRUG load): what the match writers write
        self._fluxion_ids: FluxionIds | None = None
        #: the match writers' text of vertices / edges (:mod:`fluxlite.writers.jgf`): the store
        #: drops a vertex's entry whenever it changes what the writer prints of it (paths,
        #: properties, removal, a reused handle) and both caches when ``fluxion_ids`` changes
        self.jgf_vcache: dict[int, Any] = {}
        self.jgf_ecache: dict[int, str] = {}
        #: the columns wire form's row of a vertex (``hierarchy._wire``): everything in it is also in
        #: the vertex's text, so :meth:`_forget_text` drops both
        self.wire_vcache: dict[int, Any] = {}
        self._live: list[bool] = []
        #: subsystem -> {vid: path}
        self.paths: dict[str, dict[int, str]] = {}
        #: path -> vid (paths of every subsystem); for a shared path, its first vertex
        self.by_path: dict[str, int] = {}
        #: path -> every vid that has it, in creation order, for the paths that
        #: several vertices share (one host name on several broker ranks)
        self.shared: dict[str, list[int]] = {}
        #: rank -> vids in creation order
        self.by_rank: dict[int, list[int]] = {}
        #: subsystem -> root vid
        self.roots: dict[str, int] = {}
        # edges
        self.e_src: list[int] = []
        self.e_dst: list[int] = []
        self.e_ss: list[str] = []
        self.e_rel: list[str] = []
        #: insertion sequence number of each edge (its order among its siblings)
        self.e_seq: list[int] = []
        self._eseq = 0
        #: subsystem -> per-vertex list of out-edge ids in insertion order
        self.out: dict[str, list[Any]] = {}
        #: subsystem -> per-vertex first in-edge id (-1: none)
        self.parent_edge: dict[str, list[int]] = {}
        self._observers: list[GraphObserver] = []
        #: the slots of removed vertices / edges rustworkx is expected to hand back next, the next one
        #: last (it reuses a freed slot last-freed first): new vertices and edges are added with
        #: these handles as their payloads, which is checked against the handles rustworkx gives
        #: (a wrong guess costs a relabelling pass, as no guess does); see :meth:`remove_vertices`
        self._vfree: list[int] = []
        self._efree: list[int] = []
        self._interned: dict[str, str] = {}
        self._next_uniq = 0
        #: bumped on every structural change (attach/remove); caches key on it
        self.version = 0

    @property
    def fluxion_ids(self) -> FluxionIds | None:
        """How Fluxion's reader numbered and ranked the vertices (None: as the store does)."""
        return self._fluxion_ids

    @fluxion_ids.setter
    def fluxion_ids(self, ids: FluxionIds | None) -> None:
        self._fluxion_ids = ids
        self.jgf_vcache.clear()
        self.jgf_ecache.clear()
        self.wire_vcache.clear()

    # ------------------------------------------------------------------ build
    def _intern(self, s: str) -> str:
        got = self._interned.get(s)
        if got is None:
            self._interned[s] = s
            got = s
        return got

    def add_observer(self, obs: GraphObserver) -> None:
        """Register an observer; it is told about every later vertex addition/removal."""
        self._observers.append(obs)

    def remove_observer(self, obs: GraphObserver) -> None:
        if obs in self._observers:
            self._observers.remove(obs)

    def add_vertex(
        self,
        type: str,
        basename: str,
        name: str,
        id: int,
        uniq_id: int | None = None,
        rank: int = -1,
        size: int = 1,
        unit: str = "",
        status: int = UP,
        properties: Mapping[str, str] | None = None,
        paths: Mapping[str, str] | None = None,
    ) -> int:
        """Create a vertex and return its handle.

        ``paths`` maps subsystem name to the vertex's canonical path in that
        subsystem; each path is indexed.  A path already present is an error
        (identity is the path).  ``uniq_id`` defaults to the next unused one.
        O(1).
        """
        if paths:
            for p in paths.values():
                if p in self.by_path:
                    raise GraphFormatError(f"duplicate vertex path {p}", name=name)
        vid = self.rx.add_node(None)
        self.rx[vid] = vid
        _take_guess(self._vfree, [vid])
        self._forget_text(vid)
        if uniq_id is None:
            uniq_id = self._next_uniq
        if uniq_id >= self._next_uniq:
            self._next_uniq = uniq_id + 1
        t = self._intern(type)
        row = (
            t,
            self._intern(basename),
            name,
            id,
            uniq_id,
            rank,
            size,
            self._intern(unit),
            status,
        )
        if vid == len(self.v_type):
            self.v_type.append(row[0])
            self.v_basename.append(row[1])
            self.v_name.append(row[2])
            self.v_id.append(row[3])
            self.v_uniq.append(row[4])
            self.v_rank.append(row[5])
            self.v_size.append(row[6])
            self.v_unit.append(row[7])
            self.v_status.append(row[8])
            self._live.append(True)
            for col in self.out.values():
                col.append(_EMPTY)
            for pcol in self.parent_edge.values():
                pcol.append(-1)
        else:
            (
                self.v_type[vid],
                self.v_basename[vid],
                self.v_name[vid],
                self.v_id[vid],
                self.v_uniq[vid],
                self.v_rank[vid],
                self.v_size[vid],
                self.v_unit[vid],
                self.v_status[vid],
            ) = row
            self._live[vid] = True
            for col in self.out.values():
                col[vid] = _EMPTY
            for pcol in self.parent_edge.values():
                pcol[vid] = -1
        if properties:
            self.v_props[vid] = dict(properties)
        if paths:
            for ss, p in paths.items():
                ss = self._intern(ss)
                self.paths.setdefault(ss, {})[vid] = p
                self.by_path[p] = vid
        self.by_rank.setdefault(rank, []).append(vid)
        for obs in self._observers:
            obs.vertex_added(vid)
        self.version += 1
        return vid

    def add_vertices_bulk(
        self,
        types: Sequence[str],
        basenames: Sequence[str],
        names: Sequence[str],
        ids: Sequence[int],
        ranks: Sequence[int],
        sizes: Sequence[int],
        units: Sequence[str],
        *,
        uniq_ids: Sequence[int] | None = None,
        statuses: Sequence[int] | None = None,
        paths: Mapping[str, Sequence[str | None]] | None = None,
        properties: Mapping[int, Mapping[str, str]] | None = None,
        shared_paths: bool = False,
        fresh_paths: bool = False,
    ) -> list[int]:
        """Create many vertices at once; return their handles in order.

        All sequences are aligned (one entry per new vertex).  ``paths`` maps
        a subsystem to a sequence of paths aligned with the vertices (None:
        not a member); ``properties`` maps a position to a property dict.
        ``uniq_ids`` default to consecutive new ids.  Equivalent to calling
        :meth:`add_vertex` for each entry, but checks every path first (a
        path already present or repeated raises :class:`GraphFormatError`
        and changes nothing) and builds the columns in bulk.  O(n).

        ``shared_paths`` lets vertices of different ranks share a path, as
        Fluxion's path index does (a vector of vertices per path): several
        broker ranks on one host give several ``/cluster0/<host>`` vertices.
        A path repeated on one rank is still an error.

        ``fresh_paths``: the caller has checked that the paths are distinct and
        that none is in the index yet (``readers.jgf.attach_columns`` does, on
        the way to this call), so they are not checked again.
        """
        n = len(types)
        if not (len(basenames) == len(names) == len(ids) == len(ranks) == len(sizes) == len(units) == n):
            raise ValueError("add_vertices_bulk: columns differ in length")
        if uniq_ids is not None and len(uniq_ids) != n:
            raise ValueError("add_vertices_bulk: uniq_ids has the wrong length")
        if statuses is not None and len(statuses) != n:
            raise ValueError("add_vertices_bulk: statuses has the wrong length")
        paths = paths or {}
        bp = self.by_path
        all_new: list[str] = []
        for ss, col in paths.items():
            if len(col) != n:
                raise ValueError(f"add_vertices_bulk: paths[{ss!r}] has the wrong length")
            if has_none(col):
                all_new.extend(p for p in col if p is not None)
            else:
                all_new.extend(col)  # type: ignore[arg-type]
        start = len(self.v_type)
        #: the handles the new vertices get when the graph has no holes (int objects shared by all columns)
        expected = list(range(start, start + n))
        probe: dict[str, int] | None = None
        if not bp and len(paths) == 1 and len(all_new) == n:
            # the usual whole-graph load: one path per vertex into an empty index; the
            # table that checks the paths becomes the index (one hash table, not two)
            probe = dict(zip(all_new, expected))
            repeated = len(probe) != n
        elif fresh_paths:
            repeated = False  # (checked by the caller: no second set of the paths)
        else:
            uniq_new = set(all_new)
            repeated = len(uniq_new) != len(all_new) or not bp.keys().isdisjoint(uniq_new)
        if repeated:
            if not shared_paths:
                self._raise_duplicate_path(paths, names)
            self._check_shared_paths(paths, names, ranks)
        if n == 0:
            return []
        if uniq_ids is None:
            base = self._next_uniq
            uniq_ids = range(base, base + n)
            top = base + n - 1
        else:
            top = int_bounds(uniq_ids)[1]
        intern = self._intern
        contiguous = self.rx.num_nodes() == start  # no holes: new handles are start.. in order
        if contiguous:
            got = self.rx.add_nodes_from(expected)
            vids = list(got)
            if not _is_run(vids, start):
                self._label_nodes(vids)
                contiguous = False
            else:
                vids = expected
        else:
            # as add_node n times: holes first (labelled with the handles expected back, checked)
            guess = _guess(self._vfree, n)
            vids = list(self.rx.add_nodes_from(guess if guess is not None else [None] * n))
            if not _take_guess(self._vfree, vids, guess):
                self._label_nodes(vids)
        for vcache in (self.jgf_vcache, self.wire_vcache):
            if not contiguous and vcache:
                for v in vcache.keys() & vids:  # (a set built in C, not a step per new vertex)
                    del vcache[v]
        # the new handles fill exactly the holes lo..lo+n-1 (a removed subgraph's, in the
        # order rustworkx hands them back): every column is written with one slice
        lo = 0
        refill = False
        if not contiguous:
            lo, top_v = int_bounds(vids)
            refill = top_v - lo + 1 == n and top_v < len(self.v_type) and not any(self._live[lo : lo + n])
        tcol = _interned_column(types, intern)
        # (the basenames are usually the types, as a reader without basenames gives them: equal
        # entries take the same copies, and the columns are only read below)
        same = type(basenames) is list and type(types) is list and basenames == types
        bcol = tcol if same else _interned_column(basenames, intern)
        ucol = _interned_column(units, intern)
        scol = list(statuses) if statuses is not None else [UP] * n
        if contiguous and vids and vids[0] == len(self.v_type):
            self.v_type.extend(tcol)
            self.v_basename.extend(bcol)
            self.v_name.extend(names)
            self.v_id.extend(ids)
            self.v_uniq.extend(uniq_ids)
            self.v_rank.extend(ranks)
            self.v_size.extend(sizes)
            self.v_unit.extend(ucol)
            self.v_status.extend(scol)
            self._live.extend([True] * n)
            for col in self.out.values():
                col.extend([_EMPTY] * n)
            for pcol in self.parent_edge.values():
                pcol.extend([-1] * n)
        elif refill:
            # the k-th new vertex has handle vids[k]: slot lo+j takes entry order[j]
            if _is_run(vids, lo):  # handed back in order (the usual refill): no reordering

                def take(col: Sequence[Any]) -> list[Any]:
                    return col if isinstance(col, list) else list(col)

            else:
                order = _inverse(vids, lo)

                def take(col: Sequence[Any]) -> list[Any]:
                    return list(map(col.__getitem__, order))

            sl = slice(lo, lo + n)
            self.v_type[sl] = take(tcol)
            self.v_basename[sl] = take(bcol)
            self.v_name[sl] = take(names)
            self.v_id[sl] = take(ids)
            self.v_uniq[sl] = take(uniq_ids)
            self.v_rank[sl] = take(ranks)
            self.v_size[sl] = take(sizes)
            self.v_unit[sl] = take(ucol)
            self.v_status[sl] = take(scol)
            self._live[sl] = [True] * n
            for col in self.out.values():
                col[sl] = [_EMPTY] * n
            for pcol in self.parent_edge.values():
                pcol[sl] = [-1] * n
        else:
            uq = list(uniq_ids)
            for k, vid in enumerate(vids):
                row = (tcol[k], bcol[k], names[k], ids[k], uq[k], ranks[k], sizes[k], ucol[k], scol[k])
                if vid == len(self.v_type):
                    self.v_type.append(row[0])
                    self.v_basename.append(row[1])
                    self.v_name.append(row[2])
                    self.v_id.append(row[3])
                    self.v_uniq.append(row[4])
                    self.v_rank.append(row[5])
                    self.v_size.append(row[6])
                    self.v_unit.append(row[7])
                    self.v_status.append(row[8])
                    self._live.append(True)
                    for col in self.out.values():
                        col.append(_EMPTY)
                    for pcol in self.parent_edge.values():
                        pcol.append(-1)
                else:
                    (
                        self.v_type[vid],
                        self.v_basename[vid],
                        self.v_name[vid],
                        self.v_id[vid],
                        self.v_uniq[vid],
                        self.v_rank[vid],
                        self.v_size[vid],
                        self.v_unit[vid],
                        self.v_status[vid],
                    ) = row
                    self._live[vid] = True
                    for col in self.out.values():
                        col[vid] = _EMPTY
                    for pcol in self.parent_edge.values():
                        pcol[vid] = -1
        if top >= self._next_uniq:
            self._next_uniq = top + 1
        if properties:
            for k, props in properties.items():
                if props:
                    self.v_props[vids[k]] = dict(props)
        for ss, col in paths.items():
            ss = intern(ss)
            self._ensure_subsystem(ss)
            pcol2 = self.paths[ss]
            if has_none(col):
                pairs = [(vids[k], p) for k, p in enumerate(col) if p is not None]
                pcol2.update(pairs)
                if repeated:
                    for v, p in pairs:
                        self._index_path(p, v)
                else:
                    bp.update((p, v) for v, p in pairs)
            else:
                pcol2.update(zip(vids, col))
                if repeated:
                    for v, p in zip(vids, col):
                        self._index_path(p, v)  # type: ignore[arg-type]
                elif probe is not None and contiguous:
                    bp.update(probe)  # values are the handles: start.. in order
                else:
                    bp.update(zip(col, vids))  # type: ignore[arg-type]
        # by_rank: one extend per run of equal ranks (the run boundaries found in C)
        _extend_runs(self.by_rank, ranks if type(ranks) is list else list(ranks), vids)
        self._tell_observers("vertices_added", "vertex_added", vids)
        self.version += 1
        return vids

    def _tell_observers(self, bulk: str, one: str, vids: list[int]) -> None:
        """Each observer's ``bulk(vids)`` where it has one, else its ``one(vid)`` for each vertex."""
        for obs in self._observers:
            tell = getattr(obs, bulk, None)
            if tell is not None:
                tell(vids)
            else:
                each = getattr(obs, one)
                for vid in vids:
                    each(vid)

    def _label_nodes(self, vids: list[int]) -> None:
        """Give the new rustworkx nodes ``vids`` their handle as payload (as :meth:`add_vertex` does).

        rustworkx reuses removed slots last-freed first: removing ``vids`` in
        order and adding them back in reverse gives each slot back, now with
        its payload, in three C calls instead of one Python step per node.
        Checked; a step per node where the slots come back otherwise.  O(n).
        """
        if len(vids) > 8:
            self.rx.remove_nodes_from(vids)
            back = list(self.rx.add_nodes_from(vids[::-1]))
            if back == vids[::-1]:
                return
            vids[:] = back[::-1]  # pragma: no cover - rustworkx's slot reuse changed: label them one by one
        for v in vids:
            self.rx[v] = v

    def _raise_duplicate_path(self, paths: Mapping[str, Sequence[str | None]], names: Sequence[str]) -> None:
        seen: set[str] = set()
        for col in paths.values():
            for k, p in enumerate(col):
                if p is None:
                    continue
                if p in self.by_path or p in seen:
                    raise GraphFormatError(f"duplicate vertex path {p}", name=names[k])
                seen.add(p)

    def _check_shared_paths(
        self, paths: Mapping[str, Sequence[str | None]], names: Sequence[str], ranks: Sequence[int]
    ) -> None:
        """Raise GraphFormatError if a path repeats on one rank (new or already in the graph)."""
        v_rank = self.v_rank
        seen: set[tuple[str, int]] = set()
        for col in paths.values():
            for k, p in enumerate(col):
                if p is None:
                    continue
                key = (p, ranks[k])
                if key in seen or any(v_rank[u] == ranks[k] for u in self.vertices_by_path(p)):
                    raise GraphFormatError(f"duplicate vertex path {p} on rank {ranks[k]}", name=names[k])
                seen.add(key)

    def _index_path(self, path: str, vid: int) -> None:
        """Add ``vid`` to the path index (sharing the path if another vertex has it)."""
        first = self.by_path.get(path)
        if first is None or first == vid:
            self.by_path[path] = vid
            return
        lst = self.shared.get(path)
        if lst is None:
            self.shared[path] = [first, vid]
        elif vid not in lst:
            lst.append(vid)

    def _unindex_path(self, path: str, vid: int) -> None:
        """Remove ``vid`` from the path index (the next sharer, if any, becomes the first)."""
        lst = self.shared.get(path)
        if lst is None:
            if self.by_path.get(path) == vid:
                del self.by_path[path]
            return
        if vid in lst:
            lst.remove(vid)
        if self.by_path.get(path) == vid:
            self.by_path[path] = lst[0]
        if len(lst) == 1:
            del self.shared[path]

    def add_edges_bulk(
        self,
        sources: Sequence[int],
        targets: Sequence[int],
        subsystem: str | Sequence[str] = CONTAINMENT,
        relation: str | Sequence[str] = "contains",
    ) -> list[int]:
        """Add edges ``sources[k] -> targets[k]``; return their handles in order.

        ``subsystem`` and ``relation`` are one value for all edges or one per
        edge.  Equivalent to :meth:`add_edge` per pair, in order (so each
        vertex's out-edge order is the order given).  O(m).
        """
        m = len(sources)
        if len(targets) != m:
            raise ValueError("add_edges_bulk: sources and targets differ in length")
        if m == 0:
            return []
        intern = self._intern
        if isinstance(subsystem, str):
            ss_col = [intern(subsystem)] * m
        else:
            if len(subsystem) != m:
                raise ValueError("add_edges_bulk: subsystem has the wrong length")
            ss_col = _interned_column(subsystem, intern)
        if isinstance(relation, str):
            rel_col = [intern(relation)] * m
        else:
            if len(relation) != m:
                raise ValueError("add_edges_bulk: relation has the wrong length")
            rel_col = _interned_column(relation, intern)
        for ss in set(ss_col):
            self._ensure_subsystem(ss)
        e0 = len(self.e_src)
        expected = list(range(e0, e0 + m))
        holes = self.rx.num_edges() != e0
        if not holes:  # new handles are e0.. in order
            got = list(self.rx.add_edges_from(list(zip(sources, targets, expected))))
            labelled = _is_run(got, e0)
        else:  # holes first, labelled with the handles expected back (checked)
            guess = _guess(self._efree, m)
            if guess is None:
                got = list(self.rx.add_edges_from_no_data(list(zip(sources, targets))))
            else:
                got = list(self.rx.add_edges_from(list(zip(sources, targets, guess))))
            labelled = _take_guess(self._efree, got, guess)
        if not labelled:
            for e in got:
                self.rx.update_edge_by_index(e, e)
        in_order = labelled and not holes  # (with holes the first handle is one of them, below e0)
        seq0 = self._eseq
        self._eseq += m
        if in_order:
            self.e_src.extend(sources)
            self.e_dst.extend(targets)
            self.e_ss.extend(ss_col)
            self.e_rel.extend(rel_col)
            self.e_seq.extend(range(seq0, seq0 + m))
        elif (
            (lo := (bounds := int_bounds(got))[0]) + m - 1 == (top_e := bounds[1])
            and top_e < len(self.e_src)
            and self.e_ss[lo : lo + m].count(None) == m
        ):
            # the new handles refill exactly the removed edges lo..lo+m-1: one slice per column
            sl = slice(lo, lo + m)
            if _is_run(got, lo):  # handed back in order: the columns as given
                self.e_src[sl] = sources
                self.e_dst[sl] = targets
                self.e_ss[sl] = ss_col
                self.e_rel[sl] = rel_col
                self.e_seq[sl] = range(seq0, seq0 + m)
            elif not _scatter_edges(got, sources, targets, ss_col, rel_col, self, seq0):
                order = _inverse(got, lo)
                self.e_src[sl] = map(list(sources).__getitem__, order)
                self.e_dst[sl] = map(list(targets).__getitem__, order)
                self.e_ss[sl] = map(ss_col.__getitem__, order)
                self.e_rel[sl] = map(rel_col.__getitem__, order)
                self.e_seq[sl] = [seq0 + k for k in order]
        else:
            for k, (e, s, d, ss, rel) in enumerate(zip(got, sources, targets, ss_col, rel_col)):
                if e == len(self.e_src):
                    self.e_src.append(s)
                    self.e_dst.append(d)
                    self.e_ss.append(ss)
                    self.e_rel.append(rel)
                    self.e_seq.append(seq0 + k)
                else:
                    self.e_src[e] = s
                    self.e_dst[e] = d
                    self.e_ss[e] = ss
                    self.e_rel[e] = rel
                    self.e_seq[e] = seq0 + k
        if ss_col.count(ss_col[0]) == m and self._link_one_subsystem(got, sources, targets, ss_col[0]):
            self.version += 1
            return got
        last_ss = None
        col: list[Any] = []
        pcol: list[int] = []
        for e, s, d, ss in zip(got, sources, targets, ss_col):
            if ss is not last_ss:
                col = self.out[ss]
                pcol = self.parent_edge[ss]
                last_ss = ss
            lst = col[s]
            if lst is _EMPTY:
                col[s] = [e]
            else:
                lst.append(e)
            if pcol[d] == -1:
                pcol[d] = e
        self.version += 1
        return got

    @cython.locals(
        pcol=list,
        col=list,
        got=list,
        src=list,
        tgt=list,
        m=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        a=cython.Py_ssize_t,
        d=cython.Py_ssize_t,
        s0=cython.Py_ssize_t,
    )
    def _link_one_subsystem(self, got: list[int], sources: Sequence[int], targets: Sequence[int], ss: str) -> bool:
        """Out-edge lists and parent edges of new edges of one subsystem, a run of equal sources at a time.

        The same as appending each edge to its source's out-list and making it
        its target's parent edge where the target has none, edge by edge in
        order, when every target is distinct and has no parent edge yet (a
        subtree being attached): then no target's parent edge depends on the
        order, and each run of one source extends its list in order.  Returns
        False (nothing written) otherwise.  O(m): typed loops (compiled, C reads and writes of the
        columns) and one extend per run.
        """
        pcol = self.parent_edge[ss]
        m = len(got)
        tgt = targets if type(targets) is list else list(targets)
        # the parent edges in one pass: a target that has one already, or is met twice (its slot
        # is no longer -1), puts back the -1 of every slot written so far and refuses
        for k in range(m):
            d = tgt[k]
            if pcol[d] != -1:
                for j in range(k):
                    d = tgt[j]
                    pcol[d] = -1
                return False
            pcol[d] = got[k]
        col = self.out[ss]
        src = sources if type(sources) is list else list(sources)
        a = 0
        s0 = src[0]
        for k in range(1, m + 1):
            if k < m:
                d = src[k]
                if d == s0:
                    continue
            lst = col[s0]
            if lst is _EMPTY:
                col[s0] = got[a:k]
            else:
                lst.extend(got[a:k])
            a = k
            if k < m:
                s0 = d
        return True

    def drop_unused_subsystems(self, names: Iterable[str]) -> None:
        """Forget each subsystem of ``names`` that no vertex has a path in and no edge is in any more
        (what an attach rolled back registered).  O(vertices) per subsystem."""
        for ss in names:
            if self.paths.get(ss) or any(lst is not _EMPTY for lst in self.out.get(ss, ())):
                continue
            for d in (self.out, self.parent_edge, self.paths, self.roots):
                d.pop(ss, None)

    def _ensure_subsystem(self, ss: str) -> None:
        if ss not in self.out:
            n = len(self.v_type)
            self.out[ss] = [_EMPTY] * n
            self.parent_edge[ss] = [-1] * n
            self.paths.setdefault(ss, {})

    def add_edge(self, src: int, dst: int, subsystem: str = CONTAINMENT, relation: str = "contains") -> int:
        """Add an edge ``src -> dst`` in ``subsystem``; return its handle.  O(1)."""
        ss = self._intern(subsystem)
        self._ensure_subsystem(ss)
        eid = self.rx.add_edge(src, dst, None)
        self.rx.update_edge_by_index(eid, eid)
        _take_guess(self._efree, [eid])
        rel = self._intern(relation)
        seq = self._eseq
        self._eseq += 1
        if eid == len(self.e_src):
            self.e_src.append(src)
            self.e_dst.append(dst)
            self.e_ss.append(ss)
            self.e_rel.append(rel)
            self.e_seq.append(seq)
        else:
            self.e_src[eid] = src
            self.e_dst[eid] = dst
            self.e_ss[eid] = ss
            self.e_rel[eid] = rel
            self.e_seq[eid] = seq
        col = self.out[ss]
        lst = col[src]
        if lst is _EMPTY:
            col[src] = [eid]
        else:
            lst.append(eid)
        pcol = self.parent_edge[ss]
        if pcol[dst] == -1:
            pcol[dst] = eid
        self.version += 1
        return eid

    def set_root(self, subsystem: str, vid: int) -> None:
        """Declare ``vid`` the root of ``subsystem`` (at most one root per subsystem)."""
        ss = self._intern(subsystem)
        self._ensure_subsystem(ss)
        self.roots[ss] = vid

    def set_path(self, vid: int, subsystem: str, path: str) -> None:
        """Give ``vid`` a path in ``subsystem`` (replacing an old one)."""
        ss = self._intern(subsystem)
        self._ensure_subsystem(ss)
        self._forget_text(vid)
        col = self.paths[ss]
        old = col.get(vid)
        if old is not None:
            self._unindex_path(old, vid)
        col[vid] = path
        if path in self.shared:
            self._index_path(path, vid)
        else:
            self.by_path[path] = vid

    # --------------------------------------------------------------- removal
    def remove_vertices(self, vids: Iterable[int]) -> None:
        """Delete vertices and every edge touching them.  O(removed + their edges)."""
        vids = list(vids)
        dead = set(vids)
        self._tell_observers("vertices_removed", "vertex_removed", vids)
        # removed highest handle first: rustworkx reuses a freed slot last-freed first, so the next
        # vertices added get these slots back lowest first, in order (a run: an attach refills the
        # columns with one slice each).  Its edges go as rustworkx frees them, each with the first
        # of its ends removed: a vertex's outgoing edges, then its incoming ones, each list in
        # rustworkx's order; that order is what the next edges added are expected to get back.
        gone = sorted(dead, reverse=True)
        eids: set[int] = set()
        freed: list[int] = []
        for vid in gone:
            for es in (self.rx.out_edge_indices(vid), self.rx.in_edge_indices(vid)):
                for e in es:
                    if e not in eids:
                        eids.add(e)
                        freed.append(e)
        for eid in sorted(eids):
            self._forget_edge(eid, dead)
        for vid in vids:
            for ss, col in self.paths.items():
                p = col.pop(vid, None)
                if p is not None:
                    self._unindex_path(p, vid)
                if self.roots.get(ss) == vid:
                    del self.roots[ss]
            self.v_props.pop(vid, None)
            self._forget_text(vid)
            for col2 in self.out.values():
                col2[vid] = _EMPTY
            for pcol in self.parent_edge.values():
                pcol[vid] = -1
            self._live[vid] = False
        # each rank's list loses its removed vertices in one pass (not a scan per vertex)
        for r in {self.v_rank[v] for v in dead}:
            lst = self.by_rank.get(r)
            if lst is not None:
                lst[:] = filterfalse(dead.__contains__, lst)
                if not lst:
                    del self.by_rank[r]
        self.rx.remove_nodes_from(gone)  # (in this order, as remove_node each)
        self._vfree.extend(gone)  # (guesses: the additions check them)
        self._efree.extend(freed)
        self.version += 1

    def _forget_edge(self, eid: int, dead: set[int]) -> None:
        ss = self.e_ss[eid]
        if ss is None:
            return
        self.jgf_ecache.pop(eid, None)
        src, dst = self.e_src[eid], self.e_dst[eid]
        if src not in dead:
            lst = self.out[ss][src]
            if lst is not _EMPTY and eid in lst:
                lst.remove(eid)
                if not lst:
                    self.out[ss][src] = _EMPTY
        if dst not in dead and self.parent_edge[ss][dst] == eid:
            nxt = [e for e in self.rx.in_edge_indices(dst) if e != eid and self.e_ss[e] == ss]
            self.parent_edge[ss][dst] = nxt[0] if nxt else -1
        self.e_ss[eid] = None  # type: ignore[call-overload]

    # ----------------------------------------------------------------- query
    def __len__(self) -> int:
        return self.rx.num_nodes()

    @property
    def num_edges(self) -> int:
        return self.rx.num_edges()

    def vertices(self) -> Iterator[int]:
        """Live vertex handles in ascending order."""
        return iter(sorted(self.rx.node_indices()))

    def is_live(self, vid: int) -> bool:
        return 0 <= vid < len(self._live) and self._live[vid]

    def edges(self) -> Iterator[int]:
        return iter(sorted(self.rx.edge_indices()))

    def vertex_by_path(self, path: str) -> int | None:
        """The vertex whose path (in any subsystem) is ``path``, or None.  O(1).

        For a path that several vertices share (see :meth:`vertices_by_path`),
        the first one created.
        """
        return self.by_path.get(path)

    def vertices_by_path(self, path: str) -> list[int]:
        """Every vertex whose path is ``path``, in creation order (Fluxion's ``by_path`` entry).

        One vertex, except where several broker ranks share a host name.  O(sharers).
        """
        lst = self.shared.get(path)
        if lst is not None:
            return list(lst)
        v = self.by_path.get(path)
        return [] if v is None else [v]

    def vertex_at(self, path: str, rank: int) -> int | None:
        """The vertex with ``path`` on broker ``rank``, or None.  O(sharers)."""
        v = self.by_path.get(path)
        if v is None or self.v_rank[v] == rank:
            return v
        for u in self.shared.get(path, ()):
            if self.v_rank[u] == rank:
                return u
        return None

    def path(self, vid: int, subsystem: str = CONTAINMENT) -> str:
        return self.paths.get(subsystem, {}).get(vid, "")

    def vertex_paths(self, vid: int) -> dict[str, str]:
        """Paths of ``vid`` in every subsystem it belongs to, ordered by subsystem name."""
        return {ss: col[vid] for ss, col in sorted(self.paths.items()) if vid in col}

    def out_edges(self, vid: int, subsystem: str = CONTAINMENT) -> list[int] | tuple[int, ...]:
        col = self.out.get(subsystem)
        return col[vid] if col is not None else _EMPTY

    def children(self, vid: int, subsystem: str = CONTAINMENT) -> list[int]:
        dst = self.e_dst
        return [dst[e] for e in self.out_edges(vid, subsystem)]

    def parent(self, vid: int, subsystem: str = CONTAINMENT) -> int | None:
        pcol = self.parent_edge.get(subsystem)
        if pcol is None:
            return None
        e = pcol[vid]
        return None if e < 0 else self.e_src[e]

    def ancestors(self, vid: int, subsystem: str = CONTAINMENT) -> list[int]:
        """Ancestors of ``vid`` from its parent up to the root.  O(depth)."""
        out = []
        pcol = self.parent_edge.get(subsystem)
        if pcol is None:
            return out
        src = self.e_src
        e = pcol[vid]
        while e >= 0:
            vid = src[e]
            out.append(vid)
            e = pcol[vid]
        return out

    def subtree(self, vid: int, subsystem: str = CONTAINMENT) -> list[int]:
        """``vid`` and its descendants in ``subsystem``, in depth-first pre-order."""
        out: list[int] = []
        col = self.out.get(subsystem)
        if col is None:
            return [vid]
        dst = self.e_dst
        stack = [vid]
        seen: set[int] = set()
        while stack:
            v = stack.pop()
            if v in seen:
                continue
            seen.add(v)
            out.append(v)
            for e in reversed(col[v]):  # (a loop: a generator per vertex costs more than its children)
                stack.append(dst[e])
        return out

    def subsystems(self) -> list[str]:
        return list(self.out)

    def properties(self, vid: int) -> dict[str, str]:
        return self.v_props.get(vid, {})

    def _forget_text(self, vid: int) -> None:
        """Drop what the writers keep of vertex ``vid`` (its JGF text, its wire-form row): it changed."""
        self.jgf_vcache.pop(vid, None)
        self.wire_vcache.pop(vid, None)

    def set_property(self, vid: int, key: str, value: str) -> None:
        self.v_props.setdefault(vid, {})[key] = value
        self._forget_text(vid)

    def vertex_dict(self, vid: int) -> dict[str, Any]:
        """All attributes of one vertex as a plain dict (for writers and debugging)."""
        return {
            "type": self.v_type[vid],
            "basename": self.v_basename[vid],
            "name": self.v_name[vid],
            "id": self.v_id[vid],
            "uniq_id": self.v_uniq[vid],
            "rank": self.v_rank[vid],
            "size": self.v_size[vid],
            "unit": self.v_unit[vid],
            "status": STATUS_NAMES.get(self.v_status[vid], "unknown"),
            "properties": dict(self.properties(vid)),
            "paths": self.vertex_paths(vid),
        }

    def types(self) -> dict[str, int]:
        """Count of live vertices per type."""
        counts: dict[str, int] = {}
        vt = self.v_type
        for v in self.rx.node_indices():
            counts[vt[v]] = counts.get(vt[v], 0) + 1
        return counts

    def by_type(self, type: str) -> list[int]:
        vt = self.v_type
        return [v for v in self.vertices() if vt[v] == type]

    def next_uniq_id(self) -> int:
        return self._next_uniq
