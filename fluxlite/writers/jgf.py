"""The JSON Graph Format match writers: ``jgf`` and ``jgf_shorthand``.

Output (one line, jansson ``JSON_INDENT(0)``, then a newline)::

    {"graph": {"nodes": [NODE, ...], "edges": [EDGE, ...]}}

with nodes and edges each in emission order.  A node is::

    {"id": "<uniq_id>", "metadata": {"type": T, "basename": B, "name": N,
     "id": <id>, "rank": <rank>, "properties": {..},
     "exclusive": true, "size": <needs>, "paths": {..}, "ephemeral": {..},
     "agfilter": {..}}}

where every key after ``type`` is optional and appears only when it carries
information, always in this order: ``basename`` if it differs from the type,
``name`` if it is not basename+id, ``id`` and ``rank`` always,
``properties`` if any (sorted by key), ``unit`` if not empty, ``exclusive``
only when true, ``size`` only when ``needs != 1``, ``paths`` if any (one
entry per subsystem, containment first), ``ephemeral`` and ``agfilter`` if
given (sorted by key).  An edge is ``{"source": "<uniq>", "target":
"<uniq>"}`` plus ``"metadata": {"subsystem": S}`` for non-containment edges.

Each node and edge is rendered to text as it is emitted (no per-vertex
dict).  What does not depend on the match (a node's text but for
``exclusive``/``size``/``ephemeral``/``agfilter``, an edge's whole text) is
kept in the graph's ``jgf_vcache``/``jgf_ecache``, which the store clears for
whatever it changes, so a vertex written again costs one lookup and one
concatenation.  :meth:`JgfWriter.emit_json` parses the assembled text back (orjson
keeps key order), so ``emit`` and ``find`` output cannot diverge.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import orjson

from fluxlite.writers._jansson import quote
from fluxlite.writers.base import EmitError

if TYPE_CHECKING:
    from fluxlite.graph import ResourceGraph

__all__ = [
    "JgfColumnsWriter",
    "JgfShorthandWriter",
    "JgfWriter",
    "edge_json",
    "subgraph_jgf",
    "subsystem_order",
    "vertex_json",
]

CONTAINMENT = "containment"

# Fluxion keys vertex paths by interned subsystem name, i.e. in interning
# order: containment (a static) first, then the names resource-query interns
# when it sets up its matchers, then anything else in the order it was read.
_INTERN_ORDER = {
    n: i for i, n in enumerate(("containment", "ibnet", "pfs1bw", "power", "ibnetbw", "virtual1"))
}

_QCACHE: dict[str, str] = {}


def _q(s: str) -> str:
    """``quote`` memoised for the small vocabularies (types, basenames, subsystems)."""
    got = _QCACHE.get(s)
    if got is None:
        got = quote(s)
        if len(_QCACHE) < 4096:
            _QCACHE[s] = got
    return got


def subsystem_order(g: ResourceGraph) -> list[str]:
    """Subsystems of ``g`` in the order Fluxion lists a vertex's paths."""
    names = list(g.paths)
    if len(names) <= 1:
        return names
    known = sorted((n for n in names if n in _INTERN_ORDER), key=_INTERN_ORDER.__getitem__)
    return known + [n for n in names if n not in _INTERN_ORDER]


def _smap(m: Mapping[str, str]) -> str:
    """A string->string map as a JSON object with keys in byte order (a ``std::map``)."""
    return (
        "{"
        + ", ".join(f"{quote(k)}: {quote(v if isinstance(v, str) else str(v))}" for k, v in sorted(m.items()))
        + "}"
    )


#: at most this many vertices' (and edges') texts are kept per graph (a whole-graph
#: allocation of a million vertices is written without filling the cache further)
_CACHE_MAX = 1 << 18

_EXCL = ', "exclusive": true'


def _vertex_parts(g: ResourceGraph, vid: int, subsystems: list[str] | None, fluxion: bool) -> tuple[str, str]:
    """The parts of vertex ``vid``'s node that do not depend on the match: ``(head, paths)``.

    ``head`` runs from ``{"id"`` to the ``unit`` key, ``paths`` is the
    ``, "paths": {..}`` member (empty when the vertex has none).
    """
    t = g.v_type[vid]
    b = g.v_basename[vid]
    i = g.v_id[vid]
    uniq = g.v_uniq[vid]
    rank = g.v_rank[vid]
    fids = g.fluxion_ids if fluxion else None
    if fids is not None:
        rank = fids.rank_of(uniq, t, rank)
        uniq = fids.uniq_of(uniq)
    s = f'{{"id": "{uniq}", "metadata": {{"type": {_q(t)}'
    if b != t:
        s += f', "basename": {_q(b)}'
    n = g.v_name[vid]
    if n != f"{b}{i}":
        s += f', "name": {quote(n)}'
    s += f', "id": {i}, "rank": {rank}'
    props = g.v_props.get(vid)
    if props:
        s += ', "properties": ' + _smap(props)
    unit = g.v_unit[vid]
    if unit:
        s += f', "unit": {quote(unit)}'
    paths = g.paths
    ptxt = ""
    if len(paths) == 1:
        for ss, col in paths.items():
            p = col.get(vid)
            if p is not None:
                ptxt = f', "paths": {{{_q(ss)}: {quote(p)}}}'
    elif paths:
        items = []
        for ss in subsystems if subsystems is not None else subsystem_order(g):
            p = paths[ss].get(vid)
            if p is not None:
                items.append(f"{_q(ss)}: {quote(p)}")
        if items:
            ptxt = ', "paths": {' + ", ".join(items) + "}"
    return s, ptxt


def _cached_parts(g: ResourceGraph, vid: int, subsystems: list[str] | None) -> tuple[str, str]:
    """:func:`_vertex_parts` (Fluxion's ids) through the graph's text cache."""
    cache = g.jgf_vcache
    got = cache.get(vid)
    if got is None:
        got = _vertex_parts(g, vid, subsystems, True)
        if len(cache) < _CACHE_MAX:
            cache[vid] = got
    return got


def vertex_json(
    g: ResourceGraph,
    vid: int,
    needs: int,
    agfilter: Mapping[str, str] | None,
    exclusive: bool,
    ephemeral: Mapping[str, str] | None = None,
    subsystems: list[str] | None = None,
    fluxion: bool = True,
) -> str:
    """One JGF node as jansson text (see the module docstring for the layout).

    ``fluxion``: the uniq id and rank Fluxion's reader gave the vertex
    (``g.fluxion_ids``, GRUG loads) rather than the store's own.  The parts
    that do not depend on the match come from ``g.jgf_vcache``.
    """
    if fluxion or g.fluxion_ids is None:
        head, ptxt = _cached_parts(g, vid, subsystems)
    else:
        head, ptxt = _vertex_parts(g, vid, subsystems, False)
    if exclusive:
        head += _EXCL
    if needs != 1:
        head += f', "size": {needs}'
    head += ptxt
    if ephemeral:
        head += ', "ephemeral": ' + _smap(ephemeral)
    if agfilter:
        head += ', "agfilter": ' + _smap(agfilter)
    return head + "}}"


def _edge_text(g: ResourceGraph, eid: int) -> str:
    uniq = g.v_uniq
    src, dst = uniq[g.e_src[eid]], uniq[g.e_dst[eid]]
    fids = g.fluxion_ids
    if fids is not None:
        src, dst = fids.uniq_of(src), fids.uniq_of(dst)
    s = f'{{"source": "{src}", "target": "{dst}"'
    ss = g.e_ss[eid]
    if ss != CONTAINMENT:
        s += f', "metadata": {{"subsystem": {_q(ss)}}}'
    return s + "}"


def edge_json(g: ResourceGraph, eid: int) -> str:
    """One JGF edge as jansson text (the vertices' Fluxion uniq ids, as :func:`vertex_json`)."""
    cache = g.jgf_ecache
    got = cache.get(eid)
    if got is None:
        got = _edge_text(g, eid)
        if len(cache) < _CACHE_MAX:
            cache[eid] = got
    return got


class JgfWriter:
    """Fluxion's ``jgf`` format (``jgf_match_writers_t``)."""

    __slots__ = ("_e", "_ss", "_v", "complete", "counts")
    emit_exclusive_subtrees = True
    emits_edges = True
    #: the ``"writer"`` key of an incomplete graph (Fluxion's get_uri; None: never written)
    uri: str | None = None

    def __init__(self) -> None:
        self._v: list[str] = []
        self._e: list[str] = []
        self._ss: tuple[tuple[str, ...], list[str]] = ((), [])
        #: False once a matched vertex was left out (below an exclusive one): the text
        #: then carries ``"writer": uri``, as Fluxion's jgf_shorthand writer does, and from then
        #: on: Fluxion's ``m_complete`` is never set back (one writer per session, find included)
        self.complete = True

    def _subsystems(self, g: ResourceGraph) -> list[str] | None:
        if len(g.paths) <= 1:
            return None
        key = tuple(g.paths)
        if self._ss[0] != key:
            self._ss = (key, subsystem_order(g))
        return self._ss[1]

    def emit_vtx(
        self,
        prefix: str,
        g: ResourceGraph,
        vid: int,
        needs: int,
        agfilter: Mapping[str, str] | None = None,
        exclusive: bool = False,
        ephemeral: Mapping[str, str] | None = None,
    ) -> None:
        """Append one node."""
        cache = g.jgf_vcache
        got = cache.get(vid)
        if got is None:
            got = _vertex_parts(g, vid, self._subsystems(g), True)
            if len(cache) < _CACHE_MAX:
                cache[vid] = got
        if agfilter or ephemeral:
            self._v.append(vertex_json(g, vid, needs, agfilter, exclusive, ephemeral, self._subsystems(g)))
        elif needs == 1:
            self._v.append(f"{got[0]}{_EXCL}{got[1]}}}}}" if exclusive else f"{got[0]}{got[1]}}}}}")
        elif exclusive:
            self._v.append(f'{got[0]}{_EXCL}, "size": {needs}{got[1]}}}}}')
        else:
            self._v.append(f'{got[0]}, "size": {needs}{got[1]}}}}}')

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Append one edge."""
        self._e.append(edge_json(g, eid))

    def emit_tm(self, start: int, end: int) -> None:
        """JGF carries no times."""

    def emit_attrs(self, key: str, value: str) -> None:
        """JGF carries no attributes."""

    def take_text(self) -> str | None:
        """The graph object as text (None if nothing is pending) and reset.

        Raises :class:`EmitError` (``ENOENT``) and keeps everything when only
        one of the node and edge lists is empty, as Fluxion does.
        """
        nv = len(self._v)
        ne = len(self._e)
        if not nv and not ne:
            return None
        if not nv or not ne:
            raise EmitError("JGF needs both vertices and edges", errno.ENOENT, vertices=nv, edges=ne)
        text = '{"graph": {"nodes": [' + ", ".join(self._v) + '], "edges": [' + ", ".join(self._e) + "]}"
        if not self.complete and self.uri is not None:
            text += f', "writer": "{self.uri}"'
        self.counts = (nv, ne)
        self._v = []
        self._e = []
        return text + "}"

    def emit(self) -> str:
        """The JGF line (empty if nothing was emitted); resets."""
        text = self.take_text()
        return "" if text is None else text + "\n"

    def emit_json(self) -> object | None:
        """The JGF object (None if nothing was emitted); resets."""
        text = self.take_text()
        return None if text is None else orjson.loads(text)

    def empty(self) -> bool:
        """True when no node and no edge is pending."""
        return not self._v and not self._e

    def reset(self) -> None:
        """Drop pending nodes and edges."""
        self._v = []
        self._e = []


class JgfColumnsWriter(JgfWriter):
    """The ``jgf`` writer that also keeps what it emitted, for a columnar encoding of the same match.

    The text is :class:`JgfWriter`'s.  After :meth:`take_text`, ``emitted``
    is ``(vertices, needs, exclusive, edges)`` of that text, in its order
    (``hierarchy._wire`` encodes them; a hierarchy instance installs this
    writer with :meth:`fluxlite.api.Engine.set_writer`).  Not registered as
    a match format: its output is ``jgf``'s.

    With ``lazy`` set, a match only records what it emits: :meth:`take_text`
    returns ``""`` (the same errors as ever when it cannot emit) and the
    text is written on demand by :meth:`render`, from the same records
    through the same code, so it is byte for byte the text an eager match
    writes, as long as the graph has not changed in between (the caller
    renders before it lets anything change the graph).
    """

    __slots__ = ("_extra", "_re", "_rn", "_rv", "_rx", "emitted", "extra", "lazy")

    def __init__(self) -> None:
        super().__init__()
        self._rv: list[int] = []
        self._rn: list[int] = []
        self._rx: list[bool] = []
        self._re: list[int] = []
        self._extra: dict[int, tuple[Mapping[str, str] | None, Mapping[str, str] | None]] = {}
        self.emitted: tuple[list[int], list[int], list[bool], list[int]] | None = None
        #: ``emitted``'s (agfilter, ephemeral) by node index, where a node had either (lazy only)
        self.extra: dict[int, tuple[Mapping[str, str] | None, Mapping[str, str] | None]] = {}
        #: record only; the text is written by :meth:`render` (see the class docstring)
        self.lazy = False

    def emit_vtx(
        self,
        prefix: str,
        g: ResourceGraph,
        vid: int,
        needs: int,
        agfilter: Mapping[str, str] | None = None,
        exclusive: bool = False,
        ephemeral: Mapping[str, str] | None = None,
    ) -> None:
        """Append one node and remember it."""
        if not self.lazy:
            JgfWriter.emit_vtx(self, prefix, g, vid, needs, agfilter, exclusive, ephemeral)
        elif agfilter or ephemeral:
            self._extra[len(self._rv)] = (agfilter, ephemeral)
        self._rv.append(vid)
        self._rn.append(needs)
        self._rx.append(exclusive)

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Append one edge and remember it."""
        if not self.lazy:
            self._e.append(edge_json(g, eid))
        self._re.append(eid)

    def take_text(self) -> str | None:
        """As :meth:`JgfWriter.take_text`; ``emitted`` then describes the text (None if there is none).

        ``lazy``: ``""`` in place of the text (None and the errors as without it)."""
        if self.lazy:
            nv, ne = len(self._rv), len(self._re)
            if not nv and not ne:
                return None
            if not nv or not ne:
                raise EmitError("JGF needs both vertices and edges", errno.ENOENT, vertices=nv, edges=ne)
            self.counts = (nv, ne)
            text: str | None = ""
        else:
            text = JgfWriter.take_text(self)
        self.emitted = (self._rv, self._rn, self._rx, self._re) if text is not None else None
        self.extra = self._extra if text is not None else {}
        if text is not None:
            self._rv, self._rn, self._rx, self._re, self._extra = [], [], [], [], {}
        return text

    def render(self, g: ResourceGraph) -> str:
        """The JGF text of ``emitted`` (what the match wrote, or would have written, without ``lazy``).

        O(emitted); ``g`` must be the graph matched, unchanged since."""
        if self.emitted is None:
            raise EmitError("nothing was emitted", errno.ENOENT, vertices=0, edges=0)
        vids, needs, excl, eids = self.emitted
        extra = self.extra
        pending = self._v, self._e
        self._v, self._e = [], []
        try:
            emit = JgfWriter.emit_vtx
            for k, (vid, need, x) in enumerate(zip(vids, needs, excl)):
                a, e = extra.get(k, (None, None))
                emit(self, "", g, vid, need, a, x, e)
            self._e = list(map(edge_json, [g] * len(eids), eids))
            text = JgfWriter.take_text(self)
        finally:
            self._v, self._e = pending
        assert text is not None
        return text

    def reset(self) -> None:
        """Drop pending nodes and edges (``emitted``, the last text's, stays)."""
        JgfWriter.reset(self)
        self._rv, self._rn, self._rx, self._re, self._extra = [], [], [], [], {}


class JgfShorthandWriter(JgfWriter):
    """Fluxion's ``jgf_shorthand``: JGF without the insides of exclusive subtrees.

    The text is JGF's; the difference is that the traverser, seeing
    ``emit_exclusive_subtrees`` False, does not emit the non-root vertices of
    exclusively allocated subtrees.
    """

    __slots__ = ()
    emit_exclusive_subtrees = False
    uri = "fluxion:jgf_shorthand"


def subgraph_jgf(
    g: ResourceGraph,
    vids: Iterable[int],
    *,
    exclusive: Iterable[int] = (),
    subsystem: str = "containment",
) -> bytes:
    """JGF for ``vids`` (each with its full size) and the ``subsystem`` edges among them.

    The layout is the match writer's, so the result can be attached,
    allocated with ``update`` or released with ``partial-cancel``/``shrink``.
    O(len(vids)).
    """
    order = list(dict.fromkeys(vids))
    inset = set(order)
    excl = set(exclusive)
    size = g.v_size
    uniq = g.v_uniq
    nodes = [vertex_json(g, v, size[v], None, v in excl, fluxion=False) for v in order]
    edges = []
    for v in order:
        p = g.parent(v, subsystem)
        if p is not None and p in inset:
            e = f'{{"source": "{uniq[p]}", "target": "{uniq[v]}"'
            if subsystem != "containment":
                e += f', "metadata": {{"subsystem": "{subsystem}"}}'
            edges.append(e + "}")
    text = '{"graph": {"nodes": [' + ", ".join(nodes) + '], "edges": [' + ", ".join(edges) + "]}}"
    return text.encode()
