"""Validation of JGF documents against Fluxion's schema, with its defaults.

Fluxion's JGF reader (``resource_reader_jgf.cpp``) accepts a document
``{"graph": {"nodes": [...], "edges": [...]}}`` plus an optional top-level
``free_ranks`` idset.  Each node is ``{"id": <string>, "metadata": {...}}``
where the metadata keys are:

========== ========== ======================================================
key        type       when absent
========== ========== ======================================================
type       string     required
paths      object     required (subsystem -> path string)
uniq_id    integer    the node's ``id`` string read as an integer (C ``stoll``)
id         integer    ``uniq_id``; for a ``node`` with a name, the name's
                      trailing digits
basename   string     ``type``
name       string     ``basename`` followed by ``id``
rank       integer    -1
size       integer    1
unit       string     ""
exclusive  boolean    false
status     integer    0 (up); 1 is down ("up"/"down" strings are accepted too)
properties object     {} (string values; ``null`` allowed)
========== ========== ======================================================

As in Fluxion, a value equal to the internal "unset" marker counts as
absent: ``"id": -2``, ``"uniq_id": -1``, ``"size": -1``.  Unknown keys are
ignored (Fluxion does not reject them).

An edge is ``{"source": <string>, "target": <string>, "metadata": {...}}``
where ``metadata.subsystem`` (default ``containment``) names the subsystem;
the older form ``metadata.name = {subsystem: relation}`` is also accepted
and yields one :class:`Edge` per entry.  An optional ``metadata.relation``
string is kept as the relation.

Every error names the element at fault:
``nodes[12] (id "12"): metadata.paths: expected an object, got string``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from jgf._read import JGFError, loads

__all__ = ["Document", "Edge", "Node", "read", "validate"]

_STOLL = re.compile(r"\s*([+-]?\d+)")
_TRAILING_DIGITS = re.compile(r"(\d+)$")
_STATUS_WORDS = {"up": 0, "down": 1}


@dataclass(slots=True)
class Node:
    """One JGF node after validation, with Fluxion's defaults applied."""

    key: str
    type: str
    basename: str
    name: str
    id: int
    uniq_id: int
    rank: int = -1
    size: int = 1
    unit: str = ""
    exclusive: bool = False
    status: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    index: int = -1

    def to_dict(self) -> dict[str, Any]:
        """This node as a Fluxion-layout JGF node object."""
        from jgf._write import node_dict

        return node_dict(
            uniq_id=self.uniq_id,
            type=self.type,
            basename=self.basename,
            name=self.name,
            id=self.id,
            rank=self.rank,
            exclusive=self.exclusive,
            unit=self.unit,
            size=self.size,
            paths=self.paths,
            properties=self.properties,
            status=self.status,
            key=self.key,
        )


@dataclass(slots=True, frozen=True)
class Edge:
    """One JGF edge (one per subsystem for the older multi-subsystem form)."""

    source: str
    target: str
    subsystem: str = "containment"
    relation: str | None = None
    index: int = -1

    def to_dict(self) -> dict[str, Any]:
        """This edge as a Fluxion-layout JGF edge object."""
        from jgf._write import edge_dict

        return edge_dict(self.source, self.target, self.subsystem)


@dataclass(slots=True)
class Document:
    """A validated JGF document: nodes and edges in document order."""

    nodes: list[Node]
    edges: list[Edge]
    free_ranks: str | None = None

    def node_by_key(self) -> dict[str, Node]:
        """Map from JGF node id string to node.  O(nodes)."""
        return {n.key: n for n in self.nodes}


def _tname(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


def _node_where(i: int, key: Any) -> str:
    if isinstance(key, str):
        return f'nodes[{i}] (id "{key}")'
    return f"nodes[{i}]"


def _edge_where(i: int, src: Any, dst: Any) -> str:
    if isinstance(src, str) and isinstance(dst, str):
        return f'edges[{i}] ("{src}" -> "{dst}")'
    return f"edges[{i}]"


def _expect(value: Any, kind: type, what: str, where: str, label: str) -> None:
    if type(value) is not kind:
        raise JGFError(f"{label}: expected {what}, got {_tname(value)}", where)


def _bad(value: Any, what: str, where: str, label: str) -> JGFError:
    return JGFError(f"{label}: expected {what}, got {_tname(value)}", where)


def _node(i: int, elem: Any, copy: bool = True) -> Node:
    if type(elem) is not dict:
        raise JGFError(f"expected an object, got {_tname(elem)}", f"nodes[{i}]")
    key = elem.get("id")
    md = elem.get("metadata")
    if type(key) is not str or type(md) is not dict:
        where = _node_where(i, key)
        if key is None:
            raise JGFError("missing required key 'id'", where)
        if type(key) is not str:
            raise _bad(key, "a string", where, "id")
        if md is None:
            raise JGFError("missing required key 'metadata'", where)
        raise _bad(md, "an object", where, "metadata")
    get = md.get
    rtype = get("type")
    basename = get("basename")
    name = get("name")
    unit = get("unit")
    rid = get("id")
    uniq = get("uniq_id")
    rank = get("rank")
    size = get("size")
    excl = get("exclusive")
    status = get("status")
    paths = get("paths")
    props = get("properties")

    # Fast check of the common, fully specified case; details on failure.
    if not (
        type(rtype) is str
        and rtype
        and (basename is None or type(basename) is str)
        and (name is None or type(name) is str)
        and (unit is None or type(unit) is str)
        and (rid is None or type(rid) is int)
        and (uniq is None or type(uniq) is int)
        and (rank is None or type(rank) is int)
        and (size is None or (type(size) is int and size >= -1))
        and (excl is None or type(excl) is bool)
        and (status is None or (type(status) is int and status in (0, 1)))
        and type(paths) is dict
        and (props is None or type(props) is dict)
    ):
        where = _node_where(i, key)
        _node_detail(md, where)
    if rank is None:
        rank = -1
    if size is None or size == -1:
        size = 1
    if excl is None:
        excl = False
    if status is None:
        status = 0
    elif type(status) is str:
        status = _STATUS_WORDS[status.lower()]
    for ss, p in paths.items():
        if type(p) is not str or not ss or not p.startswith("/"):
            _path_detail(ss, p, _node_where(i, key))
    if props is None:
        props = {}
    else:
        for pk, pv in props.items():
            if type(pv) is not str:
                raise JGFError(
                    f"metadata.properties.{pk}: expected a string, got {_tname(pv)}", _node_where(i, key)
                )
        if copy:
            props = dict(props)

    # Fluxion's defaults (apply_defaults); -1/-2 are its "unset" markers.
    if uniq is None or uniq == -1:
        m = _STOLL.match(key)
        if m is None:
            raise JGFError(
                f'metadata.uniq_id: absent and cannot be inferred from id "{key}"', _node_where(i, key)
            )
        uniq = int(m.group(1))
    if rid is None or rid == -2:
        rid = uniq
        if rtype == "node" and name is not None:
            m2 = _TRAILING_DIGITS.search(name)
            if m2 is not None:
                rid = int(m2.group(1))
    if basename is None:
        basename = rtype
    if name is None:
        name = f"{basename}{rid}"
    if unit is None:
        unit = ""
    return Node(
        key,
        rtype,
        basename,
        name,
        rid,
        uniq,
        rank,
        size,
        unit,
        excl,
        status,
        props,
        dict(paths) if copy else paths,
        i,
    )


def _path_detail(ss: str, p: Any, where: str) -> None:
    if not ss:
        raise JGFError("metadata.paths: subsystem name must not be empty", where)
    if type(p) is not str:
        raise JGFError(f"metadata.paths.{ss}: expected a string, got {_tname(p)}", where)
    raise JGFError(f'metadata.paths.{ss}: expected an absolute path, got "{p}"', where)


def _node_detail(md: dict[str, Any], where: str) -> None:
    """Raise the precise error for metadata that failed the fast check."""
    get = md.get
    rtype = get("type")
    if rtype is None:
        raise JGFError("metadata: missing required key 'type'", where)
    if type(rtype) is not str:
        raise _bad(rtype, "a string", where, "metadata.type")
    if not rtype:
        raise JGFError("metadata.type: must not be empty", where)
    for k in ("basename", "name", "unit"):
        v = get(k)
        if v is not None and type(v) is not str:
            raise _bad(v, "a string", where, f"metadata.{k}")
    for k in ("id", "uniq_id", "rank", "size"):
        v = get(k)
        if v is not None and type(v) is not int:
            raise _bad(v, "an integer", where, f"metadata.{k}")
    size = get("size")
    if size is not None and size < -1:
        raise JGFError(f"metadata.size: must be >= 0, got {size}", where)
    excl = get("exclusive")
    if excl is not None and type(excl) is not bool:
        raise _bad(excl, "a boolean", where, "metadata.exclusive")
    status = get("status")
    if status is not None:
        if type(status) is str:
            if status.lower() not in _STATUS_WORDS:
                raise JGFError(f'metadata.status: expected 0 (up) or 1 (down), got "{status}"', where)
        elif type(status) is not int:
            raise _bad(status, "an integer", where, "metadata.status")
        elif status not in (0, 1):
            raise JGFError(f"metadata.status: expected 0 (up) or 1 (down), got {status}", where)
    paths = get("paths")
    if paths is None:
        raise JGFError("metadata: missing required key 'paths'", where)
    if type(paths) is not dict:
        raise _bad(paths, "an object", where, "metadata.paths")
    props = get("properties")
    if props is not None and type(props) is not dict:
        raise _bad(props, "an object or null", where, "metadata.properties")
    # status given as "up"/"down": acceptable, not an error


def _edges(i: int, elem: Any) -> list[Edge]:
    if type(elem) is not dict:
        raise JGFError(f"expected an object, got {_tname(elem)}", f"edges[{i}]")
    src = elem.get("source")
    dst = elem.get("target")
    md = elem.get("metadata")
    if type(src) is str and type(dst) is str:
        if md is None:
            return [Edge(src, dst, "containment", None, i)]
        if type(md) is dict and len(md) == 1:
            ss = md.get("subsystem")
            if type(ss) is str and ss:
                return [Edge(src, dst, ss, None, i)]
    where = _edge_where(i, src, dst)
    if src is None:
        raise JGFError("missing required key 'source'", where)
    _expect(src, str, "a string", where, "source")
    if dst is None:
        raise JGFError("missing required key 'target'", where)
    _expect(dst, str, "a string", where, "target")
    if md is None:
        return [Edge(src, dst, "containment", None, i)]
    _expect(md, dict, "an object", where, "metadata")
    relation = md.get("relation")
    if relation is not None:
        _expect(relation, str, "a string", where, "metadata.relation")
    ss = md.get("subsystem")
    if ss is not None:
        _expect(ss, str, "a string", where, "metadata.subsystem")
        if not ss:
            raise JGFError("metadata.subsystem: must not be empty", where)
        return [Edge(src, dst, ss, relation, i)]
    legacy = md.get("name")
    if legacy is not None:
        _expect(legacy, dict, "an object (subsystem -> relation)", where, "metadata.name")
        if not legacy:
            raise JGFError("metadata.name: must name at least one subsystem", where)
        out = []
        for lss, rel in legacy.items():
            if not lss:
                raise JGFError("metadata.name: subsystem name must not be empty", where)
            if type(rel) is not str:
                raise JGFError(f"metadata.name.{lss}: expected a string, got {_tname(rel)}", where)
            out.append(Edge(src, dst, lss, rel, i))
        return out
    return [Edge(src, dst, "containment", relation, i)]


def validate(obj: Any, *, check_edges: bool = True, consume: bool = False) -> Document:
    """Check a parsed JGF value and return it as a :class:`Document`.

    ``check_edges=False`` accepts edges whose endpoints are not nodes of
    the document (Fluxion's partial-cancel and update readers only look at
    the nodes).  Duplicate node ids are always an error.  ``consume=True``
    lets the result share the input's dicts and empties the input's node
    and edge arrays as they are converted (less peak memory for a value
    nobody else holds).  O(nodes + edges).
    """
    if type(obj) is not dict:
        raise JGFError(f"document: expected an object, got {_tname(obj)}")
    graph = obj.get("graph")
    if graph is None:
        raise JGFError("document: missing required key 'graph'")
    _expect(graph, dict, "an object", "", "graph")
    nodes = graph.get("nodes")
    if nodes is None:
        raise JGFError("graph: missing required key 'nodes'")
    _expect(nodes, list, "an array", "", "graph.nodes")
    edges = graph.get("edges")
    if edges is None:
        raise JGFError("graph: missing required key 'edges'")
    _expect(edges, list, "an array", "", "graph.edges")
    free = obj.get("free_ranks")
    free_ranks: str | None
    if free is None:
        free_ranks = None
    elif type(free) is str:
        free_ranks = free
    elif type(free) is int:
        free_ranks = str(free)
    else:
        raise JGFError(f"free_ranks: expected an idset string, got {_tname(free)}")

    if consume:
        out_nodes = []
        for i in range(len(nodes)):
            out_nodes.append(_node(i, nodes[i], False))
            nodes[i] = None
    else:
        out_nodes = [_node(i, n) for i, n in enumerate(nodes)]
    seen: dict[str, int] = {}
    for n in out_nodes:
        first = seen.setdefault(n.key, n.index)
        if first != n.index:
            raise JGFError(f"duplicate node id (first used by nodes[{first}])", _node_where(n.index, n.key))
    out_edges: list[Edge] = []
    for i, e in enumerate(edges):
        out_edges.extend(_edges(i, e))
        if consume:
            edges[i] = None
    if check_edges:
        for e in out_edges:
            if e.source not in seen:
                raise JGFError(
                    f'source "{e.source}" is not the id of a node', _edge_where(e.index, e.source, e.target)
                )
            if e.target not in seen:
                raise JGFError(
                    f'target "{e.target}" is not the id of a node', _edge_where(e.index, e.source, e.target)
                )
    return Document(out_nodes, out_edges, free_ranks)


def read(data: bytes | str | Mapping[str, Any], *, check_edges: bool = True) -> Document:
    """Parse (if text) and validate a JGF document.  See :func:`validate`."""
    if isinstance(data, Mapping):
        return validate(data, check_edges=check_edges)
    return validate(loads(data), check_edges=check_edges, consume=True)
