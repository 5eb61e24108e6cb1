"""Fresh-subtree templates: one walk of an untouched subtree, replayed for its structural twins.

A large match (64 whole nodes) walks many subtrees that are entirely free and
shaped alike.  For such a subtree the select walk (scores, slots, marks) and
the update walk (spans, tags, aggregate spans, output lines) compute the
same thing up to vertex and edge ids.  This module owns that shortcut:

- the *shape* of a subtree (:class:`_Shape`): its vertices in preorder,
  which must be a contiguous range of handles, its edges, a contiguous range
  too, and what the walks read of the structure (types, sizes, ids below the
  subtree root, relative uniq ids, children lists); a *twin* is a subtree
  whose structure equals a shape shifted by a vertex and an edge offset
  (checked with list slices and ranges, cached per graph version).  The ids
  below the root must be equal, as GRUG numbers sockets and cores per node,
  so whole nodes are twins and the sockets of one node are not;
- *freshness*: no state on any vertex of the subtree (no span, allocation,
  reservation, tag or exclusive window; every vertex up; no aggregate span),
  no edge marked yet by the current select, and the same edge weights;
- the select template (:class:`_SelTmpl`), recorded for the first fresh
  subtree of a shape that a request visits and replayed for its twins, in
  this select pass and in later ones (see *the library* below):
  the marks it leaves on its edges, its pre/postorder counts, and the score
  it reports up (its root's id enters the score; a score factor of the root's
  type is recomputed for the twin, as the plain walk does);
- the update template (:class:`_UpdTmpl`), recorded for the first such
  subtree of an update walk (``simple`` output) and replayed for twins whose
  marks equal the recorded ones: the per-vertex dicts (leaf dicts shared by
  the allocation are the job's shared objects; own dicts are rebuilt with
  the job's id, window and span ids), aggregate spans, epochs, the first
  policy's child order, the per-job vertex index and the output lines (one
  string per twin);
- *clear over the window* (select only): a subtree that jobs used or will
  use, but whose vertices' spans, exclusive windows and aggregates show
  nothing during the match's window, every vertex up (and, for an
  allocation now, none allocated), is walked by select exactly as a fresh
  twin, so select templates are replayed there too (see
  ``_window_clear``); the update walk still walks it plainly;
- the library: templates are kept across matches, keyed by what the walks
  read besides the subtree -- for select the request's signature (its
  structure and pruning counts: jobspecs that differ only in duration share
  templates), pristine/exclusive flags, allocation kind, root and pruning
  types, not the window (a fresh or clear subtree reads it only in the
  aggregates' range checks, checked on each replay); for update the marks' context
  (needs, exclusivity, level), allocation kind, exclusive and pruning
  types -- with a
  few templates per key (a node's sockets are not twins of each other;
  edge weights left by earlier jobs differ from a new graph's).  A
  one-node match on a graph of identical nodes is then a replay from the
  second match on.  The library is dropped when the graph changes and
  bounded in size (contexts, keys per context, templates per key); a key
  whose recordings fail ``_ATTEMPTS`` times is given up.

Anything outside these conditions takes the plain walk, so results and state
are exactly the plain walk's (``Traverser.fresh = False`` turns the path off;
``tests/fluxlite/test_fresh.py`` compares the two).  Costs: recording is
O(subtree) once per request per select/update; a replay is O(subtree) in
C-level slice operations plus O(internal vertices) in Python.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from operator import itemgetter
from typing import Any

try:
    import cython
except ModuleNotFoundError:  # pure Python without Cython installed (see fluxlite._cyshim)
    from fluxlite import _cyshim as cython

from fluxlite.graph import UP
from fluxlite.match._common import AT_ALLOC, JobMeta, _request_sig, _Shared
from fluxlite.match._scoring import MATCH_MET, Dfu, Evals
from fluxlite.writers.jgf import JgfColumnsWriter
from fluxlite.writers.simple import SimpleWriter

#: subtrees with fewer vertices are walked plainly (a replay would not pay for its checks)
FRESH_MIN = 8
#: children of one vertex above which the walks use other indexes (never templated)
_WIDE = 64
#: failed recordings per library key before giving up on the key
_ATTEMPTS = 3
#: templates kept per library key (shapes, or edge weights and marks that differ)
_TMPLS_MAX = 6
#: distinct subtree structures known (one object each)
_SHAPES_KNOWN = 32
#: library contexts (start time, duration, ...) kept before the library is dropped
_LIB_MAX = 64
#: keys (request trees, flags) per context before the context starts over
_KEYS_MAX = 256
#: request signatures numbered (see _fresh_sig) before the table starts over
_SIGS_MAX = 1024
_NOPE = object()


def _picker(ks: list[int]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """``itemgetter(*ks)`` that returns a tuple for one position too (``ks`` not empty)."""
    return itemgetter(*ks) if len(ks) > 1 else (lambda xs, k=ks[0]: (xs[k],))


def _runs(rel: list[int]) -> list[tuple[int, int, int]]:
    """``rel`` as ranges (start, stop, step) of consecutive values, ascending or descending, in order."""
    out: list[list[int]] = []
    for r in rel:
        if out:
            last = out[-1]
            step = r - (last[1] - last[2])
            if (step == 1 or step == -1) and (last[1] - last[0] == last[2] or step == last[2]):
                last[2] = step
                last[1] = r + step
                continue
        out.append([r, r + 1, 1])
    return [tuple(x) for x in out]  # type: ignore[misc]


def _pattern(rel: list[int]) -> tuple[bool, list]:
    """A relative int pattern as a few ascending runs (checked with ranges), or the list itself."""
    runs: list[list[int]] = []  # [k0, k1, v0]: rel[k0:k1] == range(v0, v0 + k1 - k0)
    for k, v in enumerate(rel):
        if runs and runs[-1][2] + k - runs[-1][0] == v:
            runs[-1][1] = k + 1
        else:
            runs.append([k, k + 1, v])
    if len(runs) <= 4:
        return True, [tuple(r) for r in runs]
    return False, rel


def _matches(values: list[int], base: int, pat: tuple[bool, list]) -> bool:
    """``values == [base + r for r in rel]`` for the pattern of ``rel``: a typed loop compiled (a
    value past the C integer range takes the object compares below), C-level list compares pure."""
    if cython.compiled:
        try:
            return _matches_typed(values, base, pat)
        except OverflowError:
            pass
    as_runs, data = pat
    if not as_runs:
        return list(map(base.__add__, data)) == values
    if len(values) != (data[-1][1] if data else 0):
        return False
    for k0, k1, v0 in data:
        v = base + v0
        if values[k0:k1] != list(range(v, v + k1 - k0)):
            return False
    return True


#: bound of the base and pattern values :func:`_matches_typed` adds in C (sums stay below 2**62)
_TYPED_LIM = 1 << 61


def _matches_typed(values: list[int], base: int, pat: tuple[bool, list]) -> bool:
    """:func:`_matches` by typed index (:func:`_matches_all_typed` of the one compare).  OverflowError
    for a value past the C integer range, and for a base or pattern value of 2**61 or more in size:
    their sums then stay inside it (C arithmetic would wrap, and a wrapped sum could equal a value)."""
    return _matches_all_typed([(values, 0, -1, base, pat)])


@cython.locals(
    start=cython.Py_ssize_t,
    span=cython.Py_ssize_t,
    have=cython.Py_ssize_t,
    b=cython.Py_ssize_t,
    n=cython.Py_ssize_t,
    k=cython.Py_ssize_t,
    lo=cython.Py_ssize_t,
    hi=cython.Py_ssize_t,
    v=cython.Py_ssize_t,
    x=cython.Py_ssize_t,
    y=cython.Py_ssize_t,
    values=list,
    data=list,
    run=tuple,
    job=tuple,
    jobs=list,
    lim=cython.Py_ssize_t,
)
def _matches_all_typed(jobs: list[tuple[list[int], int, int, int, tuple[bool, list]]]) -> bool:
    """:func:`_matches_typed` of each ``(values, start, span, base, pattern)`` in ``jobs`` on the slice
    ``values[start : start + span]`` (``span`` -1: to the end), read in place, all in one call: the
    twin test makes five such compares per subtree, and the calls and slices cost more than the
    compares.  The same answer as :func:`_matches` of each slice (all true), and OverflowError where
    :func:`_matches_typed` raises it (the caller then takes :func:`_matches`)."""
    lim = _TYPED_LIM  # (a C local: the global is an object, each compare with it a conversion)
    for job in jobs:
        values = job[0]
        start = job[1]
        span = job[2]
        # the slice's length, as Python clips it
        have = len(values) - start
        if have < 0:
            have = 0
        if span >= 0 and span < have:
            have = span
        b = job[3]
        if b >= lim or b <= -lim:
            raise OverflowError("base too large for the typed compare")
        as_runs, data = job[4]
        n = len(data)
        if not as_runs:
            if have != n:
                return False
            for k in range(n):
                x = values[start + k]
                y = data[k]
                if y >= lim or y <= -lim:
                    raise OverflowError("pattern value too large for the typed compare")
                if x != b + y:
                    return False
            continue
        if have != (data[n - 1][1] if n else 0):
            return False
        for run in data:
            lo = run[0]
            hi = run[1]
            v = run[2]
            if v >= lim or v <= -lim:
                raise OverflowError("pattern value too large for the typed compare")
            v += b - lo
            for k in range(lo, hi):
                x = values[start + k]
                if x != v + k:
                    return False
    return True


def _wants_subtrees(resources: Sequence[Any]) -> bool:
    """Does some request (not a slot) have requests below it, so that it matches an internal vertex?"""
    for r in resources:
        if r.with_:
            if r.type != "slot":
                return True
            if _wants_subtrees(r.with_):
                return True
    return False


class _Shape:
    """What the walks read of a subtree's structure, relative to its root ``a`` and first edge ``e0``."""

    __slots__ = (
        "dst_rel",
        "internal",
        "kid_pats",
        "kids",
        "leafy",
        "m",
        "n",
        "sizes",
        "types",
        "uniq_rel",
        "vid_inner",
    )

    def __init__(self, g: Any, col: list[list[int]], a: int, n: int, e0: int) -> None:
        self.n = n
        self.m = n - 1
        self.types = g.v_type[a : a + n]
        self.sizes = g.v_size[a : a + n]
        self.vid_inner = g.v_id[a + 1 : a + n]
        ua = g.v_uniq[a]
        self.uniq_rel = [x - ua for x in g.v_uniq[a : a + n]]
        #: internal positions (with children) in preorder
        self.internal = [i for i in range(n) if col[a + i]]
        #: per internal position: its out-edges relative to e0, in order
        self.kids = [(i, [e - e0 for e in col[a + i]]) for i in self.internal]
        self.kid_pats = [(i, _pattern(erel)) for i, erel in self.kids]
        #: the target of every inner edge, relative to a
        self.dst_rel = _pattern([v - a for v in g.e_dst[e0 : e0 + n - 1]])
        #: (position, type) of each inner vertex whose children are all leaves of one type
        self.leafy = []
        for i in self.internal:
            kt = {g.v_type[g.e_dst[e]] for e in col[a + i]}
            if len(kt) == 1 and not any(col[g.e_dst[e]] for e in col[a + i]):
                self.leafy.append((i, kt.pop()))
        self.uniq_rel = _pattern(self.uniq_rel)


class _SelTmpl:
    __slots__ = (
        "avail",
        "evals",
        "factor",
        "ml",
        "mruns",
        "mslices",
        "post",
        "pre",
        "resources",
        "score_off",
        "shape",
        "weights",
        "x_in",
    )


class _UpdTmpl:
    __slots__ = (
        "acc",
        "fmt",
        "jv_pick",
        "marks",
        "n_ret",
        "okeys",
        "oweights",
        "own",
        "pick",
        "plans",
        "rec",
        "runs",
        "seq_delta",
        "shape",
        "visited",
        "w_before",
    )


class FreshStage:
    """Fresh-subtree templates of :class:`~fluxlite.match.Traverser` (a mixin over its state)."""

    # ------------------------------------------------------------ shapes, twins, the library
    def _fresh_sync(self) -> None:
        """Drop cached shapes and the template library when the graph changed.

        Called once at the start of each select and update pass that uses
        templates (the structure cannot change during a pass), so the shape
        and twin lookups below need no check of their own.
        """
        if self._fver != self.g.version:
            self._fshape = {}
            self._fshapes = []
            self._flib = {}
            self._fver = self.g.version

    def _fresh_lib(self, ctx: tuple) -> tuple[dict[tuple, Any], dict[tuple, int]]:
        """The library's (templates, failed recordings) for a walk context, created if new."""
        self._fresh_sync()
        lib = self._flib
        got = lib.get(ctx)
        if got is None:
            if len(lib) >= _LIB_MAX:
                lib.clear()
            got = lib[ctx] = ({}, {})
        return got

    def _fresh_twins(self, tms: list[Any], u: int) -> tuple[list[Any], int]:
        """The templates among ``tms`` whose shape ``u``'s subtree has, and ``u``'s first edge (-1: none)."""
        got = self._fshape.get(u)
        if got is None:
            for tm in tms:
                e0 = self._fresh_twin(tm.shape, u)
                if e0 is not None:
                    got = (tm.shape, e0)
                    break
            else:
                return [], -1
        shape, e0 = got
        return [tm for tm in tms if tm.shape is shape], e0

    def _fresh_shape(self, a: int) -> tuple[_Shape, int] | None:
        """The shape of ``a``'s subtree and its first edge, or None if it cannot be templated.  Cached."""
        g = self.g
        got = self._fshape.get(a, False)
        if got is not False:
            return got
        self._fshape[a] = None
        col = g.out[self.dom]
        dst = g.e_dst
        order = []
        edges: list[int] = []
        stack = [a]
        while stack:
            v = stack.pop()
            order.append(v)
            kids = col[v]
            if kids:
                if len(kids) > _WIDE:
                    return None
                edges.extend(kids)
                stack.extend(dst[e] for e in reversed(kids))
        n = len(order)
        if n < FRESH_MIN or order != list(range(a, a + n)):
            return None
        e0 = min(edges)
        if sorted(edges) != list(range(e0, e0 + n - 1)):
            return None
        for known in self._fshapes:  # one object per structure: templates of any key share it
            e1 = self._fresh_twin(known, a)
            if e1 is not None:
                return known, e1
        shape = _Shape(g, col, a, n, e0)
        if len(self._fshapes) < _SHAPES_KNOWN:
            self._fshapes.append(shape)
        got = self._fshape[a] = (shape, e0)
        return got

    @cython.locals(j=cython.Py_ssize_t, hi=cython.Py_ssize_t, m=cython.Py_ssize_t, col=list)
    def _fresh_twin(self, shape: _Shape, b: int) -> int | None:
        """The first edge of ``b``'s subtree if it has exactly ``shape`` (shifted), else None.  Cached."""
        g = self.g
        got = self._fshape.get(b)
        if got is not None and got[0] is shape:
            return got[1]
        n = shape.n
        hi = b + n
        col = g.out[self.dom]
        out_b = col[b]
        if (
            not out_b
            or hi > len(col)
            or g.v_type[b:hi] != shape.types
            or g.v_size[b:hi] != shape.sizes
            or g.v_id[b + 1 : hi] != shape.vid_inner
        ):
            return None
        # the subtree's edge count by a typed loop (compiled): sum(map(len, col[b:hi])) costs a
        # slice and a call of len per vertex, a quarter of this check, made once per node a match
        # first visits (a first-fit match visits a new node each time)
        m = 0
        for j in range(b, hi):
            m += len(col[j])
        if m != shape.m:
            return None
        e0 = out_b[0] - shape.kids[0][1][0]
        if e0 < 0:
            return None
        ok = None
        if cython.compiled:
            # the five compares below in one typed call (see _matches_all_typed)
            jobs = [(g.e_dst, e0, shape.m, b, shape.dst_rel)]
            for i, pat in shape.kid_pats:
                jobs.append((col[b + i], 0, -1, e0, pat))
            if self.stop_on_k:
                jobs.append((g.v_uniq, b, n, g.v_uniq[b], shape.uniq_rel))
            try:
                ok = _matches_all_typed(jobs)
            except OverflowError:
                ok = None  # a value past the C range: the object compares below
        if ok is None:
            ok = _matches(g.e_dst[e0 : e0 + shape.m], b, shape.dst_rel)
            for i, pat in shape.kid_pats:
                if not ok:
                    break
                ok = _matches(col[b + i], e0, pat)
            if ok and self.stop_on_k:
                ok = _matches(g.v_uniq[b:hi], g.v_uniq[b], shape.uniq_rel)
        if not ok:
            return None
        self._fshape[b] = (shape, e0)
        return e0

    @cython.locals(
        b=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        hi=cython.Py_ssize_t,
        i=cython.Py_ssize_t,
        v=cython.Py_ssize_t,
        vspans=list,
        allocs=list,
        resvs=list,
        tags=list,
        xspans=list,
        status=list,
    )
    def _fresh_state(self, shape: _Shape, b: int) -> bool:
        """Is ``b``'s subtree untouched: no state on any vertex, all up, no aggregate span?  O(subtree),
        one typed pass over its rows."""
        hi = b + shape.n
        vspans, allocs, resvs, tags, xspans = self.vspans, self.allocs, self.resvs, self.tags, self.xspans
        status = self.g.v_status
        up = UP
        for j in range(b, hi):
            if (
                vspans[j] is not None
                or allocs[j] is not None
                or resvs[j] is not None
                or tags[j] is not None
                or xspans[j] is not None
                or status[j] != up
            ):
                return False
        sub = self.subplan.get(self.dom)
        j2s = self.job2span.get(self.dom)
        for i in shape.internal:
            v = b + i
            if sub is not None and (p := sub[v]) is not None and p.span_size:
                return False
            if j2s is not None and j2s[v]:
                return False
        return True

    def _fresh_ready(self, meta: JobMeta, resources: Sequence[Any]) -> bool:
        """May this select pass use templates?  (Single subsystem, no constraint, id-monotone scores,
        and a request with requests below it.)"""
        return (
            self.fresh
            and _wants_subtrees(resources)
            and not getattr(self, "_alternatives", False)
            and len(self.subsystems) == 1
            and len(self.g.out) == 1
            and not self._variation
            and not self._locality
            and meta.constraint is None
        )

    @staticmethod
    def _fresh_room(tmpls: dict[tuple, Any], tries: dict[tuple, int], key: tuple, table: dict) -> None:
        """Before ``key`` enters ``table`` (one of the context's two dicts): a context holding
        ``_KEYS_MAX`` keys there starts over."""
        if key not in table and len(table) >= _KEYS_MAX:
            tmpls.clear()
            tries.clear()

    @classmethod
    def _fresh_keep(cls, tmpls: dict[tuple, Any], tries: dict[tuple, int], key: tuple, tm: Any) -> None:
        """Add template ``tm`` under ``key``."""
        cls._fresh_room(tmpls, tries, key, tmpls)
        tmpls.setdefault(key, []).append(tm)

    @classmethod
    def _fresh_failed(cls, tmpls: dict[tuple, Any], tries: dict[tuple, int], key: tuple) -> None:
        """Count a failed recording for ``key``; give the key up after ``_ATTEMPTS`` failures."""
        cls._fresh_room(tmpls, tries, key, tries)
        n = tries[key] = tries.get(key, 0) + 1
        if n >= _ATTEMPTS:
            tmpls[key] = _NOPE

    # ------------------------------------------------------------ select
    @cython.locals(
        e0=cython.Py_ssize_t, j=cython.Py_ssize_t, token=cython.Py_ssize_t, t=cython.Py_ssize_t, e_token=list
    )
    def _sel_clean(self, meta: JobMeta, shape: _Shape, b: int, e0: int, used: bool) -> int:
        """No edge of the subtree marked by this select pass yet, and its state: 1 fresh, 2 clear
        over the match's window (see :meth:`_window_clear`), 0 neither or a window the subtree's
        aggregates cannot hold (``used``: a job holds ``b``'s subtree, so it is not fresh)."""
        if meta.duration < 1:
            return 0
        token = self.token
        e_token = self.e_token
        for j in range(e0, e0 + shape.m):
            t = e_token[j]
            if t == token:
                return 0
        if not used and self._fresh_state(shape, b):
            return 1 if self._window_clear(meta, shape, b, True) else 0
        return 2 if self._window_clear(meta, shape, b, False) else 0

    @cython.locals(
        k=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        hi=cython.Py_ssize_t,
        b=cython.Py_ssize_t,
        i=cython.Py_ssize_t,
        total=cython.Py_ssize_t,
        r=cython.Py_ssize_t,
        times=list,
        rem=list,
        status=list,
        vspans=list,
        xspans=list,
    )
    def _window_clear(self, meta: JobMeta, shape: _Shape, b: int, fresh: bool) -> bool:
        """Does every test of the select walk in ``b``'s subtree answer as on a fresh twin, whatever
        the window?  (``fresh``: ``b``'s subtree is fresh; only the aggregates' ends are checked.)

        The walk in a fresh subtree reads the window only in the aggregate
        prunes, whose range checks pass when the window ends by each
        aggregate's plan end (``duration`` >= 1 is checked by the caller), so
        its templates are kept independently of the window.  A subtree that
        jobs used or will use, but not during the match's window ``[at, at +
        duration)``, walks as a fresh one when: every vertex is up; no span
        of a vertex (``vspans``) or exclusive window (``xspans``) meets the
        window, so each free count is the vertex's size and no exclusivity
        test fails; for an allocation now, no vertex is allocated
        (``allocs``); and each aggregate of an inner vertex has all its units
        free at every point the window sees, so each prune answers as an
        empty planner's.  Those are all the per-vertex states the select walk
        reads (tags, reservations and job spans only the update walk reads).
        Such a subtree is not fresh for the update walk (``_fok`` is not
        set).  O(subtree) in the worst case; the subtree root's aggregate
        (checked first) rules out a busy subtree in O(log spans).
        """
        at = meta.at
        end = at + meta.duration
        sub = self.subplan.get(self.dom)
        if sub is not None:
            for i in shape.internal:  # preorder: the root first
                p = sub[b + i]
                if p is None:
                    continue
                for pl in p._planners:
                    if end > pl._end:
                        return False
                    times = pl._times
                    if times is None:
                        continue
                    k = bisect_right(times, at) - 1
                    # k < 0: Fluxion's planner passes a window before its first point
                    if k >= 0:
                        rem = pl._rem
                        total = pl._total
                        hi = bisect_left(times, end, k)
                        # min(rem[k:hi]) < total, without the slice (rem[k] always counts)
                        r = rem[k]
                        if r < total:
                            return False
                        for j in range(k + 1, hi):
                            r = rem[j]
                            if r < total:
                                return False
        if fresh:
            return True
        # one pass over the subtree's rows (vertex b .. b + n - 1): every vertex up, none allocated
        # (for an allocation now), no span nor exclusive window meeting the window
        hi = b + shape.n
        status = self.g.v_status
        allocs = self.allocs if meta.alloc_type == AT_ALLOC else None
        vspans = self.vspans
        xspans = self.xspans
        seen_v = seen_x = None  # the leaves of one job share their dicts, side by side
        up = UP
        for j in range(b, hi):
            if status[j] != up:
                return False
            if allocs is not None and allocs[j]:
                return False
            sp = vspans[j]
            if sp is not None and sp is not seen_v:
                for iv in sp.values():
                    if iv[0] < end and iv[1] > at:
                        return False
                seen_v = sp
            sp = xspans[j]
            if sp is not None and sp is not seen_x:
                for iv in sp.values():
                    if iv[0] < end and iv[1] > at:
                        return False
                seen_x = sp
        return True

    def _fresh_sig(self, resources: Sequence[Any]) -> tuple[Any, int, frozenset[str]]:
        """``resources`` with its signature's number and its types, kept for this select pass.

        The library's keys hold the number, not the signature: a signature
        is a nested tuple (request structure and counts) whose hash Python
        recomputes on every lookup.  Equal signatures get the same number
        while the table holds them; a number is never reused (when the table
        is full it starts over with new numbers, and templates under the old
        ones are never found again).
        """
        s = _request_sig(resources, self._ud)
        ids = self._fsig_ids
        n = ids.get(s)
        if n is None:
            if len(ids) >= _SIGS_MAX:
                ids.clear()
            n = ids[s] = self._fsig_next
            self._fsig_next += 1
        got = self._fsigs[id(resources)] = (resources, n, frozenset(r.type for r in resources))
        return got

    def _fresh_sigs_of(self, primed: tuple) -> dict[int, tuple[Any, int, frozenset[str]]]:
        """The signatures (see :meth:`_fresh_sig`) of the requests of a primed immutable tree,
        kept from one select pass to the next while ``primed`` is its priming.

        The tree's requests are immutable and held by the tree, and their
        pruning counts are those of ``primed`` (the traverser's ``_ud`` for a
        match of that tree), so their signatures do not change: computing them
        again costs every select pass a walk of the request tree and hashes of
        its nested tuples.  A number given to a signature is never given to
        another, so one kept here still names its templates.  O(1).
        """
        keep = self._fsig_keep
        got = keep.get(id(primed[0]))
        if got is not None and got[0] is primed:
            return got[1]
        if len(keep) >= 2 * self._PRIMED_MAX:
            keep.clear()
        sigs: dict[int, tuple[Any, int, frozenset[str]]] = {}
        keep[id(primed[0])] = (primed, sigs)
        return sigs

    def _fresh_dfv(
        self, meta: JobMeta, u: int, resources: Sequence[Any], pristine: bool, excl: bool, to_parent: Dfu
    ) -> tuple[int, bool] | None:
        """``_dom_dfv`` of ``u`` from a template (or recording one); None: take the plain walk."""
        g = self.g
        if not g.out[self.dom][u]:
            return None
        used = self.tags[u] is not None  # a job uses u or something below it: not fresh
        if used:
            # a busy subtree's own aggregate usually rules it out (the first test of _window_clear)
            sub = self.subplan.get(self.dom)
            p = sub[u] if sub is not None else None
            if p is not None:
                at, end = meta.at, meta.at + meta.duration
                for pl in p._planners:
                    times = pl._times
                    if (
                        times is not None
                        and (k := bisect_right(times, at) - 1) >= 0
                        and min(pl._rem[k : bisect_left(times, end, k)]) < pl._total
                    ):
                        return None
        # templates are shared by requests alike (jobspecs that differ only in their duration)
        sig = self._fsigs.get(id(resources))
        if sig is None or sig[0] is not resources:
            sig = self._fresh_sig(resources)
        key = (sig[1], pristine, excl)
        tms = self._fsel.get(key)
        if tms is _NOPE:
            return None
        if tms is not None:
            twins, e0 = self._fresh_twins(tms, u)
            if twins:
                shape = twins[0].shape
                state = self._sel_clean(meta, shape, u, e0, used)
                if not state:
                    return None
                weights = self.e_weight[e0 : e0 + shape.m]
                for tm in twins:
                    if tm.weights == weights:
                        return self._sel_replay(tm, u, e0, to_parent, state == 1)
            if len(tms) >= _TMPLS_MAX:
                return None
        if g.v_type[u] not in sig[2] and "slot" not in sig[2]:
            # (a vertex below a slot request passes its slot options up: see _sel_evals)
            return None
        got = self._fresh_shape(u)
        if got is None:
            return None
        shape, e0 = got
        if self.factors and any(g.v_type[u + i] in self.factors for i in range(1, shape.n)):
            return None
        state = self._sel_clean(meta, shape, u, e0, used)
        if not state:
            return None
        return self._sel_record(meta, u, resources, pristine, excl, to_parent, key, shape, e0, state == 1)

    def _sel_record(
        self,
        meta: JobMeta,
        u: int,
        resources: Sequence[Any],
        pristine: bool,
        excl: bool,
        to_parent: Dfu,
        key: tuple,
        shape: _Shape,
        e0: int,
        fresh: bool = True,
    ) -> tuple[int, bool]:
        marked = self._marked
        m0, pre0, post0, ml0 = len(marked), self.preorder, self.postorder, self.multilevel
        err0 = (self.err_msg, self.errno)
        weights = self.e_weight[e0 : e0 + shape.m]
        cd = Dfu()
        rc, x_in = self._dom_dfv_plain(meta, u, resources, pristine, excl, cd)
        if rc == 0:
            if cd.evals:
                to_parent.merge(cd)
            to_parent.avail = cd.avail
            to_parent.overall_score = cd.overall_score
        new = marked[m0:]
        hi = e0 + shape.m
        ml_in = ml0 + (self.factors[self.g.v_type[u]].factor if self.g.v_type[u] in self.factors else 0)
        evals = self._sel_evals(cd, u, e0, hi, ml_in) if cd.evals else ()
        if (
            rc != 0
            or evals is None
            or (self.err_msg, self.errno) != err0
            or self.multilevel != ml0
            or cd.overall_score != MATCH_MET + ml0 + self.g.v_id[u] + 1
            or not all(e0 <= e < hi for e in new)
            or self.e_token[e0:hi].count(self.token) != len(new)
        ):
            self._fresh_failed(self._fsel, self._ftries, key)
            return rc, x_in
        tm = _SelTmpl()
        tm.resources = resources
        tm.shape = shape
        tm.weights = weights
        tm.pre = self.preorder - pre0
        tm.post = self.postorder - post0
        tm.x_in = x_in
        tm.avail = cd.avail
        tm.evals = evals
        tm.ml = ml_in
        tm.score_off = cd.overall_score - ml0 - self.g.v_id[u]
        tm.factor = self.g.v_type[u] in self.factors
        # the marks as runs of consecutive edges (replayed by slices) and their order in _marked
        e_needs, e_excl = self.e_needs, self.e_excl
        pos = sorted(e - e0 for e in new)
        runs = []
        i = 0
        while i < len(pos):
            j = i + 1
            while j < len(pos) and pos[j] == pos[j - 1] + 1:
                j += 1
            lo, hi = pos[i], pos[j - 1] + 1
            runs.append((lo, hi, e_needs[e0 + lo : e0 + hi], e_excl[e0 + lo : e0 + hi]))
            i = j
        tm.mruns = runs
        # their order in _marked as slices of the sources' out-edge lists (a twin's lists are the
        # same shifted, see _fresh_twin): replayed from those int objects, not made anew by ranges
        # (runs of one list's neighbours, ascending or descending: a first fit marks in its order)
        col = self.g.out[self.dom]
        src = self.g.e_src
        groups: list[list[int]] = []  # [source's position, first index, last index, step]
        for e in new:
            i = src[e] - u
            j = col[u + i].index(e)
            if groups and groups[-1][0] == i:
                last = groups[-1]
                step = j - last[2]
                if (step == 1 or step == -1) and (last[1] == last[2] or step == last[3]):
                    last[2] = j
                    last[3] = step
                    continue
            groups.append([i, j, j, 1])
        tm.mslices = [
            (i, slice(j0, j1 + 1) if st == 1 else slice(j0, j1 - 1 if j1 > 0 else None, -1))
            for i, j0, j1, st in groups
        ]
        self._fresh_keep(self._fsel, self._ftries, key, tm)
        if fresh:
            self._fok.add(u)
        return rc, x_in

    def _sel_evals(self, cd: Dfu, u: int, e0: int, hi: int, ml: int) -> tuple | None:
        """The options a subtree's walk passes up (``cd.evals``: e.g. the slots a node offers to a
        slot request above it) relative to its first edge ``e0``, or None if they cannot be replayed.

        Every edge must be in the subtree, and no bulk score array (``keys``)
        may ride along.  Their scores are the inner vertices' (ids below the
        root are equal in twins) plus, under a node-centric policy, the
        score factor ``ml`` the walk below ``u`` saw (``u``'s own factor and
        its ancestors'), which differs from twin to twin.  Without factors the
        scores are kept as they are; with them only slot options are kept,
        each checked to be what slot formation makes of its members
        (``MATCH_MET`` plus, per member edge, the member vertex's score
        ``MATCH_MET + ml + id + 1``), so a twin's score is the recorded one
        plus the change of ``ml`` per edge (see :meth:`_sel_replay`).
        """
        factors = bool(self.factors)
        vid, dst = self.g.v_id, self.g.e_dst
        out = []
        for t, ev in cd.evals.items():
            if ev.keys is not None or ev.best_k or (factors and t != "slot"):
                return None
            egs = []
            for sc, c, x, root, edges in ev.egroups:
                rel = []
                want = MATCH_MET
                for ec, nd, ex, eid in edges:
                    if not e0 <= eid < hi:
                        return None
                    rel.append((ec, nd, ex, eid - e0))
                    want += MATCH_MET + ml + vid[dst[eid]] + 1
                if factors and sc != want:
                    return None
                egs.append((sc, c, x, root, tuple(rel)))
            out.append((t, ev.qual_count, ev.total_count, egs))
        return tuple(out)

    def _sel_replay(
        self, tm: _SelTmpl, u: int, e0: int, to_parent: Dfu, fresh: bool = True
    ) -> tuple[int, bool] | None:
        g = self.g
        vid = g.v_id[u]
        ml = self.multilevel  # the factor the walk below u would see (u's own is added below)
        if tm.factor:
            if vid < -1:
                return None
            f = self.factors[g.v_type[u]]
            ml += f.calc(vid + 1, g.v_uniq[u])
        if tm.evals:
            # what Dfu.merge of the walk's options does, with this twin's edges and factor
            d = ml - tm.ml
            evs = to_parent.evals
            for t, qc, tc, egs in tm.evals:
                ev = evs.get(t)
                if ev is None:
                    ev = evs[t] = Evals()
                ev.qual_count += qc
                ev.total_count += tc
                if not ev.egroups:
                    ev.keys = None
                ev.egroups.extend(
                    [
                        (
                            sc + d * len(edges),
                            c,
                            x,
                            root,
                            tuple([(ec, nd, ex, e0 + r) for ec, nd, ex, r in edges]),
                        )
                        for sc, c, x, root, edges in egs
                    ]
                )
        self.preorder += tm.pre
        self.postorder += tm.post
        token = self.token
        e_needs, e_excl, e_token = self.e_needs, self.e_excl, self.e_token
        for lo, hi, nds, xs in tm.mruns:
            lo += e0
            hi += e0
            e_needs[lo:hi] = nds
            e_excl[lo:hi] = xs
            e_token[lo:hi] = [token] * (hi - lo)
        if tm.mslices:
            ext = self._marked.extend
            col = g.out[self.dom]
            for i, sl in tm.mslices:
                ext(col[u + i][sl])
        to_parent.avail = tm.avail
        to_parent.overall_score = tm.score_off + self.multilevel + vid
        if tm.shape.leafy:
            # what the walk's leaf test would have cached: the update walk reads it to
            # record runs of leaves inline (see _leaf_kids_of)
            if self._kids_version != g.version:
                self._kids_cache.clear()
                self._child_types.clear()
                self._leaf_kids.clear()
                self._kids_version = g.version
            lk = self._leaf_kids
            for i, t in tm.shape.leafy:
                lk[u + i] = t
        if fresh:  # the update walk may replay its own template here (see _upd_clean)
            self._fok.add(u)
            self._fhint.add(g.v_type[u])
        else:
            self.fresh_clear += 1
        self.fresh_stats[0] += 1
        return 0, tm.x_in

    # ------------------------------------------------------------ update
    @cython.locals(
        e0=cython.Py_ssize_t,
        m=cython.Py_ssize_t,
        hi=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        n=cython.Py_ssize_t,
        token=cython.Py_ssize_t,
        t=cython.Py_ssize_t,
        toks=list,
        needs=list,
        excl=list,
        mask=list,
        nd=list,
        xs=list,
    )
    def _marks_of(self, e0: int, m: int) -> tuple:
        """The marks of the last select on edges ``e0 .. e0+m-1`` (what the update walk reads of them):
        which edges are marked (True: all of them), and the needs and exclusivity of those.  Typed
        passes over the edges."""
        token = self.token
        hi = e0 + m
        toks = self.e_token
        n = 0
        for j in range(e0, hi):
            t = toks[j]
            if t == token:
                n += 1
        if n == m:
            return (True, self.e_needs[e0:hi], self.e_excl[e0:hi])
        needs = self.e_needs
        excl = self.e_excl
        mask = []
        nd = []
        xs = []
        for j in range(e0, hi):
            t = toks[j]
            if t == token:
                mask.append(True)
                nd.append(needs[j])
                xs.append(excl[j])
            else:
                mask.append(False)
        return (mask, nd, xs)

    @cython.locals(
        e0=cython.Py_ssize_t,
        m=cython.Py_ssize_t,
        hi=cython.Py_ssize_t,
        j=cython.Py_ssize_t,
        k=cython.Py_ssize_t,
        i=cython.Py_ssize_t,
        n=cython.Py_ssize_t,
        token=cython.Py_ssize_t,
        t=cython.Py_ssize_t,
        toks=list,
        needs=list,
        excl=list,
        mask=list,
        nd=list,
        xs=list,
    )
    def _marks_same(self, marks: tuple, e0: int, m: int) -> bool:
        """``self._marks_of(e0, m) == marks`` (a template's recorded marks), read in place: the
        update of every replay asked it, and building the mask and the two lists of the marks cost
        more than comparing them.  Typed passes over the edges."""
        token = self.token
        hi = e0 + m
        toks = self.e_token
        if marks[0] is True:
            for j in range(e0, hi):
                t = toks[j]
                if t != token:
                    return False
            return bool(self.e_needs[e0:hi] == marks[1] and self.e_excl[e0:hi] == marks[2])
        mask = marks[0]
        nd = marks[1]
        xs = marks[2]
        n = len(nd)
        if len(mask) != m or len(xs) != n:
            return False
        needs = self.e_needs
        excl = self.e_excl
        i = 0
        for k in range(m):
            j = e0 + k
            t = toks[j]
            if t == token:
                if mask[k] is not True or i >= n or needs[j] != nd[i] or excl[j] != xs[i]:
                    return False
                i += 1
            elif mask[k] is not False:
                return False
        return i == n

    def _upd_clean(self, shape: _Shape, b: int) -> bool:
        """Fresh, and no memoized marks wait inside (they are applied when the walk enters a vertex).

        Freshness seen by this token's select still holds: nothing changes the
        state between a select and its update but the update walk, which
        writes only the subtrees it walks (disjoint from ``b``'s before it
        enters ``b``).
        """
        if not (self._fok_token == self.token and b in self._fok) and not self._fresh_state(shape, b):
            return False
        d = self._deferred
        return not (d and any(b + i in d for i in shape.internal))

    def _fresh_upd(
        self,
        u: int,
        writer: Any,
        needs: int,
        excl: bool,
        meta: JobMeta,
        full: bool,
        to_parent: dict[str, int],
        emit_shadow: bool,
        excl_parent: bool,
    ) -> int | None:
        """``_upd_dfv`` of ``u`` from a template (or recording one); None: take the plain walk."""
        if self._deferred:
            marks = self._deferred.pop(u, None)
            if marks:
                self._replay(marks)
        if self.tags[u] is not None:
            return None
        key = (needs, excl, full, emit_shadow, excl_parent, self.trav_level)
        tms = self._fupd.get(key)
        if tms is _NOPE:
            return None
        if tms is not None:
            twins, e0 = self._fresh_twins(tms, u)
            if twins:
                shape = twins[0].shape
                if not self._upd_clean(shape, u):
                    return None
                w = self.e_weight[e0 : e0 + shape.m] if self.stop_on_k else None
                for tm in twins:
                    if (w is None or tm.w_before == w) and self._marks_same(tm.marks, e0, shape.m):
                        return self._upd_replay(tm, u, e0, meta, writer, to_parent)
            if len(tms) >= _TMPLS_MAX:
                return None
        if self.g.v_type[u] not in self._fhint:
            return None
        got = self._fresh_shape(u)
        if got is None:
            return None
        shape, e0 = got
        if not self._upd_clean(shape, u):
            return None
        return self._upd_record(
            u, writer, needs, excl, meta, full, to_parent, emit_shadow, excl_parent, key, shape, e0
        )

    def _upd_record(
        self,
        u: int,
        writer: Any,
        needs: int,
        excl: bool,
        meta: JobMeta,
        full: bool,
        to_parent: dict[str, int],
        emit_shadow: bool,
        excl_parent: bool,
        key: tuple,
        shape: _Shape,
        e0: int,
    ) -> int:
        a = u
        marks = self._marks_of(e0, shape.m)
        w_before = self.e_weight[e0 : e0 + shape.m]
        seq0 = self._span_seq
        jv = self._jv
        # where the writer's output of this subtree starts: the simple writer's lines, or the lazy
        # JGF writer's records (vertices, edges, and its extras, which a template cannot hold)
        jv0 = len(jv)
        out0: Any
        if type(writer) is SimpleWriter:
            out0 = len(writer._out)
        else:
            out0 = (len(writer._rv), len(writer._re), len(writer._extra))
        acc0 = dict(to_parent)
        ep = self._epoch
        ep0 = [ep.get(a + i, 0) for i in shape.internal]
        log = self._ep_log
        log0 = len(log) if log is not None else 0
        n_ret = self._upd_dfv_plain(u, writer, needs, excl, meta, full, to_parent, emit_shadow, excl_parent)
        tm = self._upd_extract(
            shape, a, e0, meta, writer, seq0, jv0, out0, acc0, ep0, log0, to_parent, w_before
        )
        if tm is None or n_ret <= 0:
            self._fresh_failed(self._fupd, self._futries, key)
            return n_ret
        tm.marks = marks
        tm.w_before = w_before
        tm.n_ret = n_ret
        self._fresh_keep(self._fupd, self._futries, key, tm)
        return n_ret

    def _upd_extract(
        self,
        shape: _Shape,
        a: int,
        e0: int,
        meta: JobMeta,
        writer: Any,
        seq0: int,
        jv0: int,
        out0: Any,
        acc0: dict[str, int],
        ep0: list[int],
        log0: int,
        to_parent: dict[str, int],
        w_before: list[int],
    ) -> _UpdTmpl | None:
        """What the plain update walk of the fresh subtree at ``a`` did, relative to ``a`` and ``e0``."""
        g = self.g
        n = shape.n
        seq1 = self._span_seq
        tm = _UpdTmpl()
        tm.shape = shape
        tm.seq_delta = seq1 - seq0
        tm.w_before = w_before
        # the job's leaf dicts shared by the allocation, as (needs, index in _new_leaf_shared's tuple)
        shared_of = {id(o): (nd, k) for nd, objs in self._leaf_shared.items() for k, o in enumerate(objs)}
        runs: list[tuple[int, int, int, int, int]] = []
        own: list[tuple[int, int, Any]] = []
        jobid = meta.jobid
        window = (meta.at, meta.at + meta.duration)
        cols = (self.vspans, self.allocs, self.resvs, self.tags, self.xspans)
        for ci, col in enumerate(cols):
            vals = col[a : a + n]
            lo = -1
            obj = None
            for pos, d in enumerate(vals):
                if d is not None and type(d) is _Shared:
                    if lo >= 0 and d is obj:
                        continue
                    if lo >= 0:
                        runs.append((ci, lo, pos, *shared_of[id(obj)]))
                    if id(d) not in shared_of:
                        return None
                    lo, obj = pos, d
                    continue
                if lo >= 0:
                    runs.append((ci, lo, pos, *shared_of[id(obj)]))
                    lo = -1
                if d is None:
                    continue
                # an own dict: only this job's entries, with new span ids (replayed with the
                # replaying job's id, window and span ids)
                if ci == 0:
                    if not all(seq0 < s <= seq1 and v[:2] == window for s, v in d.items()):
                        return None
                    own.append((0, pos, tuple((s - seq0, v[2]) for s, v in d.items())))
                elif len(d) != 1 or jobid not in d:
                    return None
                elif ci < 3:
                    if not seq0 < d[jobid] <= seq1:
                        return None
                    own.append((ci, pos, d[jobid] - seq0))
                elif d[jobid] != (jobid if ci == 3 else window):
                    return None
                else:
                    own.append((ci, pos, None))
            if lo >= 0:
                runs.append((ci, lo, n, *shared_of[id(obj)]))
        tm.runs = runs
        tm.own = own
        sub = self.subplan.get(self.dom)
        j2s = self.job2span.get(self.dom)
        plans = []
        for i in shape.internal:
            d = j2s[a + i] if j2s is not None else None
            if not d:
                continue
            p = sub[a + i] if sub is not None else None
            if p is None or len(d) != 1 or jobid not in d or p.span_size != 1:
                return None
            plans.append((i, p.span_counts(d[jobid])))
        tm.plans = plans
        ep = self._epoch
        tm.visited = [i for i, old in zip(shape.internal, ep0, strict=True) if ep.get(a + i, 0) != old]
        log = self._ep_log
        if log is not None and log[log0:] != [a + i for i in tm.visited]:
            return None
        # the first policy's child order: final weights of the inner edges, final keys of their sources
        oweights: list[tuple[int, int]] = []
        okeys: list[tuple[int, list[tuple[int, int, int]]]] = []
        if self.stop_on_k:
            if not self._outedges_built:
                return None
            e_weight = self.e_weight
            oweights = [
                (k, w) for k, (w, w0) in enumerate(zip(e_weight[e0 : e0 + shape.m], tm.w_before)) if w != w0
            ]
            ua = g.v_uniq[a]
            src = g.e_src
            for i in sorted({src[e0 + k] - a for k, _w in oweights}):
                keys = self._outedges.get(a + i)
                if keys is None:
                    return None
                okeys.append((i, [(k0, k1 + ua, k2 - e0) for k0, k1, k2 in keys]))
        tm.oweights = oweights
        tm.okeys = okeys
        jv = self._jv
        rel = [v - a for v in jv[jv0:]]
        if not rel or not all(0 <= r < n for r in rel):
            return None
        # the vertices as positions in the edges' targets, the root after them: a twin's
        # e_dst[e0 + k] is its b + (this e_dst[e0 + k] - a) (see _fresh_twin), so the replay picks
        # those int objects rather than making new ones from ranges
        at_k = {g.e_dst[e0 + k] - a: k for k in range(shape.m)}
        at_k[0] = shape.m
        ks = [at_k[r] for r in rel]
        tm.jv_pick = _picker(ks)
        tm.acc = [(t, c - acc0.get(t, 0)) for t, c in to_parent.items() if c != acc0.get(t, 0)]
        if type(writer) is not SimpleWriter:
            tm.rec = self._upd_extract_rec(writer, out0, a, e0, n, shape.m, at_k)
            return tm if tm.rec is not None else None
        tm.rec = None
        lines = writer._out[out0:]
        if len(lines) != len(rel):
            return None
        # the lines as their pieces around the names; a twin's names fill the odd slots
        vname = g.v_name
        fmt: list[str] = []
        for r, line in zip(rel, lines, strict=True):
            name = vname[a + r]
            k = len(line) - len(line.lstrip(" -"))
            if not name or name[0] in " -" or not line.startswith(name, k):
                return None
            fmt.append(line[:k])
            fmt.append(name)
            fmt.append(line[k + len(name) :])
        tm.fmt = fmt
        tm.pick = _picker(rel)
        return tm

    @staticmethod
    def _upd_extract_rec(
        writer: Any, out0: tuple[int, int, int], a: int, e0: int, n: int, m: int, at_k: dict[int, int]
    ) -> tuple[Any, list[int], list[bool], list[int]] | None:
        """What the lazy JGF writer recorded of the subtree at ``a`` (see :meth:`_upd_record`), as
        (a pick of the vertices from the edges' targets and the root, as ``jv_pick``; their needs;
        their exclusivity; the edges relative to ``e0``); None if a record is not the subtree's
        own or a vertex has extras (an agfilter or ephemeral: a template holds none)."""
        v0, ed0, x0 = out0
        if len(writer._extra) != x0:
            return None
        rel = [v - a for v in writer._rv[v0:]]
        erel = [e - e0 for e in writer._re[ed0:]]
        if not rel or not all(0 <= r < n for r in rel) or not all(0 <= k < m for k in erel):
            return None
        return _picker([at_k[r] for r in rel]), writer._rn[v0:], writer._rx[v0:], erel

    def _upd_replay(
        self, tm: _UpdTmpl, b: int, e0: int, meta: JobMeta, writer: Any, to_parent: dict[str, int]
    ) -> int:
        ep = self._epoch
        for i in tm.visited:
            v = b + i
            ep[v] = ep.get(v, 0) + 1
        if self._ep_log is not None:
            self._ep_log.extend([b + i for i in tm.visited])
        cols = (self.vspans, self.allocs, self.resvs, self.tags, self.xspans)
        leaf_shared = self._leaf_shared
        for ci, lo, hi, nd, k in tm.runs:
            objs = leaf_shared.get(nd)
            if objs is None:
                objs = self._new_leaf_shared(nd, meta)
            cols[ci][b + lo : b + hi] = [objs[k]] * (hi - lo)
        base = self._span_seq
        jobid = meta.jobid
        at = meta.at
        window = (at, at + meta.duration)
        for ci, pos, x in tm.own:
            if ci == 0:
                cols[0][b + pos] = {base + r: (at, window[1], nd) for r, nd in x}
            elif ci < 3:
                cols[ci][b + pos] = {jobid: base + x}
            else:
                cols[ci][b + pos] = {jobid: jobid if ci == 3 else window}
        self._span_seq += tm.seq_delta
        if tm.plans:
            # _add_job_span for a vertex without a span of this job (it was fresh)
            dom = self.dom
            sub = self.subplan[dom]
            j2s = self.job2span[dom]
            jobid, at, dur = meta.jobid, meta.at, meta.duration
            for i, counts in tm.plans:
                v = b + i
                d2 = j2s[v]
                if d2 is None:
                    d2 = j2s[v] = {}
                d2[jobid] = sub[v].add_span(at, dur, counts)
                self._agg_touched(dom, v)
        if tm.oweights:
            e_weight = self.e_weight
            for k, w in tm.oweights:
                e_weight[e0 + k] = w
            ub = self.g.v_uniq[b]
            oe = self._outedges
            for i, keys in tm.okeys:
                oe[b + i] = [(k0, k1 - ub, k2 + e0) for k0, k1, k2 in keys]
        vs = self.g.e_dst[e0 : e0 + tm.shape.m]
        vs.append(b)
        self._jv.extend(tm.jv_pick(vs))
        rec = tm.rec
        if rec is not None:
            # the lazy JGF writer's records, as its emit_vtx / emit_edg calls append them
            writer._rv.extend(rec[0](vs))
            writer._rn.extend(rec[1])
            writer._rx.extend(rec[2])
            writer._re.extend(map(e0.__add__, rec[3]))
        else:
            # one string for the subtree's lines (the writer joins its pieces: same text)
            parts = tm.fmt
            parts[1::3] = tm.pick(self.g.v_name[b : b + tm.shape.n])
            writer._add("".join(parts))
        for t, c in tm.acc:
            to_parent[t] = to_parent.get(t, 0) + c
        self.fresh_stats[1] += 1
        return tm.n_ret

    def _fresh_upd_ready(self, writer: Any) -> bool:
        """May this update walk use templates?  (Only if its select replayed some subtree, and only
        for a writer whose output a template can replay: the simple format's lines, or the records
        of a lazy :class:`~fluxlite.writers.jgf.JgfColumnsWriter`.)"""
        return (
            bool(self._fhint)
            and self.fresh
            and (type(writer) is SimpleWriter or (type(writer) is JgfColumnsWriter and writer.lazy))
            and len(self.g.out) == 1
            and len(self.subsystems) == 1
        )
