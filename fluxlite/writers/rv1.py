"""RFC 20 resource sets: ``rlite``, ``rv1`` and ``rv1_nosched``.

``R_lite`` groups the matched compute nodes by what they contribute.  While
vertices arrive in post-order, core and gpu ids are collected; when a
``node`` vertex arrives the collected ids become that node's *children*
signature (``{"core": "0-3", "gpu": "0"}``, ids sorted and range-folded,
core before gpu, an empty kind left out) and the collection restarts.  A node
that arrives with nothing collected is not listed.  Nodes with equal
signatures share one entry whose ``rank`` is their folded rank list::

    [{"rank": "0-1", "children": {"core": "0-15", "gpu": "0-3"}}, ...]

Entries are ordered by the signature text (Fluxion keys a ``std::map`` by
it).  ``rlite`` prints just that array.  ``rv1_nosched`` prints::

    {"version": 1, "execution": {"R_lite": [...], "nodelist": ["node[0-1]"],
     "properties": {"<key>[=<value>]": "<ranks>"}, "starttime": S,
     "expiration": E}}

``nodelist`` holds one hostlist string of all listed nodes in rank order,
``properties`` (only when a listed node has properties) maps each property
to the ranks that have it.  ``rv1`` adds ``"scheduling": <the JGF graph>``
after ``execution`` and, once ``emit_attrs`` was called, ``"attributes":
{"system": {"scheduler": {<key>: <value>, ...}}}`` (keys sorted).
"""

from __future__ import annotations

import errno
from collections.abc import Mapping
from operator import itemgetter
from typing import TYPE_CHECKING

import orjson

from fluxlite.errors import InputError
from fluxlite.hostlist import HostList
from fluxlite.idset import compress_ids
from fluxlite.writers._jansson import quote
from fluxlite.writers.base import EmitError
from fluxlite.writers.jgf import JgfWriter

if TYPE_CHECKING:
    from fluxlite.graph import ResourceGraph

__all__ = ["RLiteWriter", "Rv1NoschedWriter", "Rv1Writer"]

_rank = itemgetter(0)


class RLiteWriter:
    """Fluxion's ``rlite`` format (``rlite_match_writers_t``); also the core of ``rv1``."""

    __slots__ = ("_gather", "_props", "_reducer")
    emit_exclusive_subtrees = True
    emits_edges = True

    def __init__(self) -> None:
        # Fluxion reduces exactly these types, core before gpu
        self._reducer: dict[str, list[int]] = {"core": [], "gpu": []}
        self._gather: dict[str, list[tuple[int, str]]] = {}
        self._props: dict[str, list[int]] = {}

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
        """Collect a core/gpu id, or close a node's signature."""
        t = g.v_type[vid]
        lst = self._reducer.get(t)
        if lst is not None:
            lst.append(g.v_id[vid])
        elif t == "node":
            self._gather_node(g, vid)

    def _gather_node(self, g: ResourceGraph, vid: int) -> None:
        parts = []
        for kind, ids in self._reducer.items():
            if ids:
                ids.sort()
                parts.append(f'"{kind}": "{compress_ids(ids)}"')
                ids.clear()
        if not parts:
            return
        rank = g.v_rank[vid]
        children = "{" + ", ".join(parts) + "}"
        group = self._gather.get(children)
        if group is None:
            self._gather[children] = [(rank, g.v_name[vid])]
        else:
            group.append((rank, g.v_name[vid]))
        props = g.v_props.get(vid)
        if props:
            for k in sorted(props):
                v = props[k]
                self._props.setdefault(k if v == "" else f"{k}={v}", []).append(rank)

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """R_lite has no edges."""

    def emit_tm(self, start: int, end: int) -> None:
        """R_lite has no times."""

    def emit_attrs(self, key: str, value: str) -> None:
        """R_lite has no attributes."""

    def take(self, hosts: bool) -> tuple[str, str | None, str | None]:
        """``(R_lite, nodelist, properties)`` as JSON text and clear the gathered nodes.

        ``nodelist`` and ``properties`` are computed only when ``hosts``;
        ``properties`` is None when no listed node has properties.  Raises
        :class:`EmitError` (``EINVAL``) when no node was gathered.  Core/gpu
        ids not yet claimed by a node are kept, as in Fluxion.
        """
        if not self._gather:
            raise EmitError("no compute node in the resource set", errno.EINVAL)
        entries = []
        rankhosts: list[tuple[int, str]] = []
        for children in sorted(self._gather):
            group = sorted(self._gather[children], key=_rank)
            entries.append(f'{{"rank": "{compress_ids(r for r, _ in group)}", "children": {children}}}')
            if hosts:
                rankhosts.extend(group)
        rlite = "[" + ", ".join(entries) + "]"
        nodelist = props = None
        if hosts:
            rankhosts.sort(key=_rank)
            hl = HostList()
            try:
                for _, host in rankhosts:
                    hl.append(host)
            except InputError as e:
                self._gather.clear()
                self._props.clear()
                raise EmitError("cannot compress the node names", errno.EINVAL, reason=str(e)) from e
            nodelist = "[" + quote(hl.encode()) + "]"
            if self._props:
                props = (
                    "{"
                    + ", ".join(
                        f'{quote(k)}: "{compress_ids(sorted(v))}"' for k, v in sorted(self._props.items())
                    )
                    + "}"
                )
        self._gather.clear()
        self._props.clear()
        return rlite, nodelist, props

    def emit(self) -> str:
        """The ``R_lite`` array line; resets.  :class:`EmitError` if no node was gathered."""
        return self.take(hosts=False)[0] + "\n"

    def emit_json(self) -> object:
        """The ``R_lite`` array; resets.  :class:`EmitError` if no node was gathered."""
        return orjson.loads(self.take(hosts=False)[0])

    def empty(self) -> bool:
        """True when no node has been gathered."""
        return not self._gather

    def reset(self) -> None:
        """Drop everything, including unclaimed core/gpu ids."""
        for ids in self._reducer.values():
            ids.clear()
        self._gather.clear()
        self._props.clear()


def _execution(rlite: str, nodelist: str | None, props: str | None, start: int, end: int) -> str:
    s = f'{{"R_lite": {rlite}, "nodelist": {nodelist}'
    if props is not None:
        s += f', "properties": {props}'
    return s + f', "starttime": {int(start)}, "expiration": {int(end)}}}'


class Rv1Writer:
    """Fluxion's ``rv1`` format (``rv1_match_writers_t``): R with ``scheduling`` JGF."""

    __slots__ = ("_attrs", "_end", "_jgf", "_rlite", "_start")
    emit_exclusive_subtrees = True
    emits_edges = True

    def __init__(self) -> None:
        self._rlite = RLiteWriter()
        self._jgf = JgfWriter()
        self._start = 0
        self._end = 0
        self._attrs: dict[str, str] = {}

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
        """Feed the vertex to both the R_lite and the JGF part."""
        self._rlite.emit_vtx(prefix, g, vid, needs, agfilter, exclusive, ephemeral)
        self._jgf.emit_vtx(prefix, g, vid, needs, agfilter, exclusive, ephemeral)

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Feed the edge to the JGF part."""
        self._jgf.emit_edg(prefix, g, eid)

    def emit_tm(self, start: int, end: int) -> None:
        """Set ``starttime`` and ``expiration``."""
        self._start = start
        self._end = end

    def emit_attrs(self, key: str, value: str) -> None:
        """Set a ``attributes.system.scheduler`` entry (kept across emits, as in Fluxion)."""
        self._attrs[key] = value

    def _text(self) -> str | None:
        if self._rlite.empty() or self._jgf.empty():
            return None
        rlite, nodelist, props = self._rlite.take(hosts=True)
        sched = self._jgf.take_text()
        s = f'{{"version": 1, "execution": {_execution(rlite, nodelist, props, self._start, self._end)}'
        s += f', "scheduling": {sched}'
        if self._attrs:
            attrs = ", ".join(f"{quote(k)}: {quote(v)}" for k, v in sorted(self._attrs.items()))
            s += f', "attributes": {{"system": {{"scheduler": {{{attrs}}}}}}}'
        return s + "}"

    def emit(self) -> str:
        """The R line (empty when there is no node or no JGF); resets."""
        text = self._text()
        return "" if text is None else text + "\n"

    def emit_json(self) -> object | None:
        """The R object (None when there is no node or no JGF); resets."""
        text = self._text()
        return None if text is None else orjson.loads(text)

    def empty(self) -> bool:
        """True when neither part holds anything."""
        return self._rlite.empty() and self._jgf.empty()

    def reset(self) -> None:
        """Drop everything, attributes and times included."""
        self._rlite.reset()
        self._jgf.reset()
        self._start = 0
        self._end = 0
        self._attrs.clear()


class Rv1NoschedWriter:
    """Fluxion's ``rv1_nosched`` format: R version 1 without ``scheduling``."""

    __slots__ = ("_end", "_rlite", "_start")
    emit_exclusive_subtrees = True
    emits_edges = True

    def __init__(self) -> None:
        self._rlite = RLiteWriter()
        self._start = 0
        self._end = 0

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
        """Feed the vertex to the R_lite part."""
        self._rlite.emit_vtx(prefix, g, vid, needs, agfilter, exclusive, ephemeral)

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        """Edges are not part of this format."""

    def emit_tm(self, start: int, end: int) -> None:
        """Set ``starttime`` and ``expiration``."""
        self._start = start
        self._end = end

    def emit_attrs(self, key: str, value: str) -> None:
        """Attributes are not part of this format."""

    def _text(self) -> str | None:
        if self._rlite.empty():
            return None
        rlite, nodelist, props = self._rlite.take(hosts=True)
        return f'{{"version": 1, "execution": {_execution(rlite, nodelist, props, self._start, self._end)}}}'

    def emit(self) -> str:
        """The R line (empty when no node was gathered); resets."""
        text = self._text()
        return "" if text is None else text + "\n"

    def emit_json(self) -> object | None:
        """The R object (None when no node was gathered); resets."""
        text = self._text()
        return None if text is None else orjson.loads(text)

    def empty(self) -> bool:
        """True when no node has been gathered."""
        return self._rlite.empty()

    def reset(self) -> None:
        """Drop everything."""
        self._rlite.reset()
        self._start = 0
        self._end = 0


class _JgfShorthandPart(JgfWriter):
    """The JGF part of ``rv1_shorthand``: JGF without the insides of exclusive subtrees.

    The traverser emits every vertex (the R_lite part needs the cores of an
    exclusive node), so the insides are dropped here instead: a vertex whose
    parent (the source of its emitted edge) was emitted exclusive is left
    out, with the edge to it, as Fluxion's jgf_shorthand writer does when
    told ``excl_parent``.  O(emitted vertices).
    """

    __slots__ = ("_ee", "_ex", "_vv", "finding")
    uri = "fluxion:jgf_shorthand"

    def __init__(self) -> None:
        super().__init__()
        self._vv: list[tuple[int, str]] = []
        self._ee: list[tuple[int, int, str]] = []
        self._ex: set[int] = set()
        #: a ``find`` is emitting: Fluxion's find passes ``excl_parent`` false, so nothing is
        #: left out
        self.finding = False

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
        super().emit_vtx(prefix, g, vid, needs, agfilter, exclusive, ephemeral)
        self._vv.append((vid, self._v.pop()))
        if exclusive:
            self._ex.add(vid)

    def emit_edg(self, prefix: str, g: ResourceGraph, eid: int) -> None:
        super().emit_edg(prefix, g, eid)
        self._ee.append((g.e_src[eid], g.e_dst[eid], self._e.pop()))

    def take_text(self) -> str | None:
        ex = self._ex
        hidden = set() if self.finding else {d for s, d, _t in self._ee if s in ex}
        if hidden:
            self.complete = False
        self._v = [t for v, t in self._vv if v not in hidden]
        self._e = [t for _s, d, t in self._ee if d not in hidden]
        self._vv, self._ee, self._ex = [], [], set()
        return super().take_text()

    def empty(self) -> bool:
        return not self._vv and not self._ee

    def reset(self) -> None:
        super().reset()
        self._vv, self._ee, self._ex = [], [], set()


class Rv1ShorthandWriter(Rv1Writer):
    """Fluxion's ``rv1_shorthand``: R version 1 whose ``scheduling`` JGF is in shorthand.

    R_lite lists every core and GPU; the JGF leaves out what lies inside
    an exclusively allocated vertex (``-F rv1_shorthand``; Fluxion's
    ``known_match_format`` accepts it though its ``--help`` does not list it).
    """

    __slots__ = ()

    def __init__(self) -> None:
        super().__init__()
        self._jgf = _JgfShorthandPart()

    def find_mode(self, on: bool) -> None:
        """Emit for ``find`` (everything, as Fluxion's find does) while ``on``."""
        self._jgf.finding = on  # type: ignore[attr-defined]
