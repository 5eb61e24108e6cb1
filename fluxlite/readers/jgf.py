"""JGF reader and writer: Fluxion's ``jgf`` format for whole graphs and subgraphs.

Reading follows Fluxion's ``resource_reader_jgf.cpp``:

* Vertices are created in document order with the document's ``uniq_id``,
  id, name, rank, size, status, properties and paths (defaults as in
  :mod:`jgf`).  The ``unit`` is read and dropped: Fluxion's reader fetches
  it but never sets it on the vertex (``add_vertex`` copies everything
  else), so a JGF-loaded vertex has no unit and its match output none.  A path with exactly one ``/`` makes its vertex the root of
  that subsystem; a second root for a subsystem is an error reported with
  Fluxion's message (``add_graph_metadata: failed to add root metadata for
  containment subsystem. Possible duplicate root.``).
* A node whose path (in any subsystem) already exists in the graph *with
  the same rank* is that vertex: it is reused, not duplicated, and its
  attributes are not compared (Fluxion's ``unpack_at``).  The same path
  with a different rank is an error here (Fluxion would create a second
  vertex with the same path, which the path index cannot hold).
* An edge is added only when it touches at least one new vertex, in
  document order, so out-edge order is edge order in the document.  Both
  endpoints must be nodes of the document.
* Loading is all or nothing: everything is checked before the graph is
  touched.

Writing (:func:`graph_to_jgf`) produces the layout of Fluxion's JGF files:
vertices in creation order, edges in creation order, jansson spacing.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import and_, is_, is_not, itemgetter, not_
from typing import Any, Literal

import orjson

import jgf as _jgf
from fluxlite.errors import GraphFormatError
from fluxlite.graph import DOWN, ResourceGraph
from fluxlite.graph._store import has_none
from fluxlite.readers._common import fail, no_gc

__all__ = [
    "DEFAULT_RELATIONS",
    "DuplicateRootError",
    "JgfReader",
    "attach_columns",
    "attach_jgf",
    "graph_to_jgf",
    "locate_vertices",
    "parse_jgf",
    "read_update_vertices",
    "read_vertices",
]

#: Relation recorded for an edge of a subsystem when the JGF edge names none.
DEFAULT_RELATIONS = {"containment": "contains", "power": "supplies_to", "ibnet": "connected_down"}


def _root_message(subsystem: str) -> str:
    return (
        f"add_graph_metadata: failed to add root metadata for {subsystem} subsystem. Possible duplicate root."
    )


class DuplicateRootError(GraphFormatError):
    """A JGF subgraph brings a second root for a subsystem.

    ``fluxion_message`` is the text Fluxion's reader reports for this case.
    """

    def __init__(self, message: str, subsystem: str) -> None:
        self.subsystem = subsystem
        self.fluxion_message = _root_message(subsystem)
        super().__init__(message)


def parse_jgf(text: str | bytes, *, source: str = "<string>", check_edges: bool = True) -> _jgf.Document:
    """Parse and validate JGF text; errors become GraphFormatError naming ``source``."""
    try:
        return _jgf.read(text, check_edges=check_edges)
    except _jgf.JGFError as exc:
        raise fail(source, "", str(exc)) from exc


def read_vertices(text: str | bytes, *, source: str = "<string>") -> list[_jgf.Node]:
    """The vertices of a JGF document as records, without building a graph.

    Each :class:`jgf.Node` has ``paths``, ``rank``, ``type``, ``size``,
    ``uniq_id``, ``id``, ``name``, ``exclusive``... with Fluxion's defaults.
    Edges are not checked against the nodes (partial-cancel documents list
    edges to vertices they leave out).
    """
    return parse_jgf(text, source=source, check_edges=False).nodes


def read_update_vertices(
    text: str | bytes, subsystem: str, *, source: str = "<string>"
) -> tuple[list[_jgf.Node], bool]:
    """The vertices of an update document, and whether it has an edge of ``subsystem``: one parse.

    An edge's subsystem is its ``metadata.subsystem``, containment without
    one, as Fluxion's update reader takes it (so the older
    ``metadata.name`` form counts as containment there).  Fluxion prints an
    update by walking the dominant subsystem's edges the file marks.
    Errors as :func:`read_vertices`.  O(nodes + edges).
    """
    try:
        obj = _jgf.loads(text)
        has_edges = _has_edges_in(obj, subsystem)
        return _jgf.validate(obj, check_edges=False, consume=True).nodes, has_edges
    except _jgf.JGFError as exc:
        raise fail(source, "", str(exc)) from exc


def _has_edges_in(obj: Any, subsystem: str) -> bool:
    try:
        edges = obj["graph"]["edges"]
    except (KeyError, TypeError):
        return True  # malformed: validation says so
    if type(edges) is not list:
        return True
    for e in edges:
        meta = e.get("metadata") if isinstance(e, dict) else None
        ss = meta.get("subsystem", "containment") if isinstance(meta, dict) else "containment"
        if ss == subsystem:
            return True
    return False


def _is_root(path: str) -> bool:
    return path.count("/") == 1


def _where(node: _jgf.Node) -> str:
    return f'nodes[{node.index}] (id "{node.key}")'


def _unpack(
    graph: ResourceGraph,
    doc: _jgf.Document,
    source: str,
    *,
    require_root: bool,
    per_node: list[int] | None = None,
) -> list[int]:
    """Plan (checking everything), then commit.  Returns new vertex handles.

    ``per_node``, if given, receives the handle of every document node (new
    or reused), in document order.
    """
    by_path = graph.by_path
    v_rank = graph.v_rank
    vertex_at = graph.vertex_at
    # path, rank -> node index in doc: ranks that share a host share its paths (Fluxion
    # keys a vertex by path and rank)
    planned_paths: dict[tuple[str, int], int] = {}
    new_nodes: list[_jgf.Node] = []
    new_roots: dict[str, int] = {}  # subsystem -> local index
    ref: dict[str, int] = {}  # JGF key -> local index (>= 0) or -1 - existing vid
    for node in doc.nodes:
        existing = None
        clash = None
        for ss, p in node.paths.items():
            v = by_path.get(p)
            if v is None:
                continue
            if (
                v_rank[v] == node.rank
                or (p in graph.shared and (v := vertex_at(p, node.rank)) is not None)
                or has_rank(graph, v, node.rank)
            ):
                existing = v
                break
            if clash is None:
                clash = (ss, p, v)
        if existing is None and clash is not None:
            ss, p, v = clash
            raise fail(
                source,
                _where(node),
                f"path {p} ({ss}) already belongs to vertex {graph.v_name[v]} with rank {v_rank[v]}, "
                f"not {node.rank}",
            )
        if existing is not None:
            ref[node.key] = -1 - existing
            continue
        k = len(new_nodes)
        for ss, p in node.paths.items():
            first = planned_paths.setdefault((p, node.rank), node.index)
            if first != node.index:
                raise fail(
                    source, _where(node), f"duplicate path {p} on rank {node.rank} (also nodes[{first}])"
                )
            if _is_root(p):
                if ss in graph.roots or ss in new_roots:
                    raise DuplicateRootError(f"{source}: {_where(node)}: {_root_message(ss)}", ss)
                new_roots[ss] = k
        ref[node.key] = k
        new_nodes.append(node)
    if require_root and not new_roots and not graph.roots:
        raise fail(source, "graph", "no root vertex (no node has a path with a single '/')")

    e_src: list[int] = []
    e_dst: list[int] = []
    e_ss: list[str] = []
    e_rel: list[str] = []
    for e in doc.edges:
        s = ref.get(e.source)
        d = ref.get(e.target)
        if s is None or d is None:  # only when the document skipped edge checks
            missing = e.source if s is None else e.target
            raise fail(
                source, f'edges[{e.index}] ("{e.source}" -> "{e.target}")', f'"{missing}" is not a node id'
            )
        if s < 0 and d < 0:
            continue
        e_src.append(s)
        e_dst.append(d)
        e_ss.append(e.subsystem)
        e_rel.append(e.relation or DEFAULT_RELATIONS.get(e.subsystem, "*"))

    # ---- commit (nothing above touched the graph)
    n = len(new_nodes)
    subsystems: list[str] = []
    for node in new_nodes:
        for ss in node.paths:
            if ss not in subsystems:
                subsystems.append(ss)
    paths = {ss: [node.paths.get(ss) for node in new_nodes] for ss in subsystems}
    props = {k: node.properties for k, node in enumerate(new_nodes) if node.properties}
    try:
        vids = (
            graph.add_vertices_bulk(
                [x.type for x in new_nodes],
                [x.basename for x in new_nodes],
                [x.name for x in new_nodes],
                [x.id for x in new_nodes],
                [x.rank for x in new_nodes],
                [x.size for x in new_nodes],
                [""] * n,  # Fluxion's JGF reader keeps no unit
                uniq_ids=_store_uniqs(graph, [x.uniq_id for x in new_nodes]),
                statuses=[x.status for x in new_nodes],
                paths=paths,
                properties=props,
                shared_paths=True,
            )
            if n
            else []
        )
    except GraphFormatError as exc:  # pragma: no cover - paths were checked above
        raise fail(source, "", str(exc)) from exc

    def real(x: int) -> int:
        return vids[x] if x >= 0 else -1 - x

    if e_src:
        graph.add_edges_bulk([real(x) for x in e_src], [real(x) for x in e_dst], e_ss, e_rel)
    for ss, k in new_roots.items():
        graph.set_root(ss, vids[k])
    if n or e_src:
        graph.version += 1
    if per_node is not None:
        per_node.extend(real(ref[node.key]) for node in doc.nodes)
    return vids


class JgfReader:
    """Fluxion's ``jgf`` reader (see the module docstring)."""

    name = "jgf"
    supports_allowlist = False

    def load(
        self,
        text: str | bytes,
        graph: ResourceGraph | None = None,
        *,
        rank: int = -1,
        source: str = "<string>",
    ) -> ResourceGraph:
        """Load a JGF document into ``graph`` (a new one by default).

        Into an existing graph this is :func:`attach_jgf`.  ``rank`` must be
        -1 (Fluxion: "rank != -1 unsupported for JGF unpack").
        """
        if rank != -1:
            raise fail(source, "", f"rank {rank} given: JGF carries its own ranks (only -1 is supported)")
        g = ResourceGraph() if graph is None else graph
        with no_gc():
            if len(g) == 0 and not g.roots and g.num_edges == 0:
                cols = _jgf.read_columns(text)
                if cols is not None and _load_columns(g, cols):
                    return g
                del cols
            doc = parse_jgf(text, source=source)
            _unpack(g, doc, source, require_root=len(g) == 0)
        return g


def _load_columns(graph: ResourceGraph, cols: _jgf.Columns) -> bool:
    """Build a whole document from columns into the empty ``graph``, as :func:`_unpack` would.

    Returns False, leaving ``graph`` unchanged, if the document has an
    error (duplicate paths or roots, no root): the caller then reads it
    the ordinary way, which reports the error.  O(V + E).
    """
    new_roots: dict[str, int] = {}
    for k, ss in cols.roots:
        if ss in new_roots:
            return False
        new_roots[ss] = k
    if not new_roots or len(cols) == 0:
        return False
    e_ss: str | list[str] = cols.e_ss
    rels: str | list[str]
    kinds = set(cols.e_ss)
    if cols.e_rel.count(None) == len(cols.e_rel) and len(kinds) == 1:  # one subsystem, default relation
        e_ss = kinds.pop()
        rels = DEFAULT_RELATIONS.get(e_ss, "*")
    else:
        rels = [r or DEFAULT_RELATIONS.get(ss, "*") for r, ss in zip(cols.e_rel, cols.e_ss)]
    try:
        vids = graph.add_vertices_bulk(
            cols.type,
            cols.basename,
            cols.name,
            cols.id,
            cols.rank,
            cols.size,
            [""] * len(cols.type),  # Fluxion's JGF reader keeps no unit
            uniq_ids=cols.uniq_id,
            statuses=cols.status,
            paths=cols.paths,
            properties=cols.properties,
            shared_paths=True,
        )
    except GraphFormatError:  # a path repeated on one rank: nothing was added
        return False
    if vids != list(range(len(vids))):  # pragma: no cover - an empty graph numbers from 0
        raise AssertionError("empty graph did not number new vertices from 0")
    if cols.e_src:
        graph.add_edges_bulk(cols.e_src, cols.e_dst, e_ss, rels)
    for ss, k in new_roots.items():
        graph.set_root(ss, vids[k])
    graph.version += 1
    return True


def _store_uniqs(graph: ResourceGraph, uniqs: list[int]) -> list[int]:
    """A document's uniq ids as the store numbers them: on a GRUG-loaded graph the writers write
    Fluxion's numbering (:class:`fluxlite.graph.FluxionIds`), so an attached vertex takes the store
    id that writes as its document id (re-attaching a removed node gives back its own ids, as in
    Fluxion, instead of ids other vertices write)."""
    fids = graph.fluxion_ids
    return uniqs if fids is None else fids.store_uniqs(uniqs)


def has_rank(graph: ResourceGraph, v: int | None, rank: int) -> bool:
    """Whether vertex ``v`` has ``rank`` as the store or as Fluxion's reader ranks it: a GRUG
    graph's vertices below a node have the node's rank in the store and -1 in Fluxion (and in
    the JGF fluxlite's writers produce, see :class:`fluxlite.graph.FluxionIds`)."""
    if v is None:
        return False
    if graph.v_rank[v] == rank:
        return True
    fids = graph.fluxion_ids
    return fids is not None and fids.rank_of(graph.v_uniq[v], graph.v_type[v], graph.v_rank[v]) == rank


def attach_document(
    graph: ResourceGraph, doc: _jgf.Document, *, source: str = "<string>"
) -> tuple[list[int], list[int]]:
    """Attach a parsed JGF document; return (new handles, the handle of every document node)."""
    per_node: list[int] = []
    with no_gc():
        new = _unpack(graph, doc, source, require_root=False, per_node=per_node)
    return new, per_node


#: at most this many existing vertices in an attached document take the cutting path of
#: :func:`attach_columns` (a pass over the columns each; more take a step per new vertex)
_FEW_OLD = 16


def _positions(xs: list[Any], x: Any) -> list[int]:
    """The indices of ``x`` in ``xs``, ascending: a C-level count, then a C-level search per hit."""
    out: list[int] = []
    i = -1
    for _ in range(xs.count(x)):
        i = xs.index(x, i + 1)
        out.append(i)
    return out


def _take(col: list[Any], idx: list[int]) -> list[Any]:
    """``[col[k] for k in idx]`` (``idx`` not empty): one itemgetter (in C; a map calls the method per
    entry, at twice the cost)."""
    return list(itemgetter(*idx)(col)) if len(idx) > 1 else [col[idx[0]]]


def attach_columns(
    graph: ResourceGraph, cols: _jgf.Columns
) -> tuple[list[int], list[int], list[int], list[bool]] | None:
    """Attach a subgraph read by :func:`jgf.read_columns`, as :func:`attach_document` would, column-wise.

    Returns (new handles, the handle of every document node, every node's
    size, every node's ``exclusive``), or None without touching the graph
    when the document is off the simple case this path vouches for: one
    subsystem and one path per node, no new root, no path repeated, an
    existing path with the node's own rank and not shared between ranks.
    The caller then attaches with :func:`attach_document`, which gives the
    same result or the precise error.  This is the shape of every subgraph
    a MatchGrow hands down.  O(subgraph).
    """
    if len(cols.paths) != 1:
        return None
    ss, ps = next(iter(cols.paths.items()))
    if has_none(ps):  # (an identity test per path, compiled)
        return None
    n = len(ps)
    rank = cols.rank
    v_rank = graph.v_rank
    shared = graph.shared
    bp = graph.by_path
    distinct = set(ps)
    hit: set[str] | None = None
    if len(distinct) == n:
        # the usual grow: distinct paths, of which the graph holds a few (the attach point and
        # its ancestors), found from the smaller side in C rather than by a lookup per path
        hit = distinct.intersection(bp) if len(bp) < n else set(filter(bp.__contains__, distinct))
        if len(hit) > _FEW_OLD:
            hit = None
    #: the existing vertices' positions (ascending) and handles; new_pos: the new ones' positions,
    #: None when the existing ones are few (each column is then cut around them)
    new_pos: list[int] | None = None
    if hit is not None:
        old = sorted(map(ps.index, hit))
        old_v = list(map(bp.__getitem__, map(ps.__getitem__, old)))
        if any(ps[k] not in hit for k, _ in cols.roots):  # a new root: the per-node reader checks it
            return None
    else:
        found = list(map(bp.get, ps))
        old = list(compress(range(n), map(is_not, found, repeat(None)))) if found.count(None) != n else []
        old_v = [found[k] for k in old]
        if any(found[k] is None for k, _ in cols.roots):
            return None
        new_pos = list(compress(range(n), map(is_, found, repeat(None)))) if old else list(range(n))
    for k, v in zip(old, old_v):
        if v_rank[v] != rank[k] or ps[k] in shared:
            return None
    take = itemgetter(*new_pos) if old and new_pos is not None and len(new_pos) > 1 else None

    def pick(col: list[Any]) -> list[Any]:
        if not old:
            return col
        if new_pos is None:
            # a few existing vertices: the column less their entries (a copy and a memmove each,
            # where taking the new entries costs a step per entry)
            out = list(col)
            for k in reversed(old):
                del out[k]
            return out
        if take is None:
            return [col[k] for k in new_pos]
        return list(take(col))  # C speed: one tuple of the new nodes' values

    new_paths = pick(ps)
    if hit is None and len(set(new_paths)) != len(new_paths):
        return None
    e_src, e_dst = cols.e_src, cols.e_dst
    added = False
    keep = None
    is_old = set(old)
    if old:
        # edges between two existing vertices are not added; the existing ones are usually a few
        # ancestors, so look only at the edges into one of them (in C) before building a mask
        if new_pos is None:
            into_old = [i for k in old for i in _positions(e_dst, k)]
        else:
            into_old = list(compress(range(len(e_dst)), map(is_old.__contains__, e_dst)))
        if any(e_src[k] in is_old for k in into_old):
            get_old = is_old.__contains__
            keep = list(map(not_, map(and_, map(get_old, e_src), map(get_old, e_dst))))

    props = {}
    if cols.properties:
        kept = new_pos if new_pos is not None else [k for k in range(n) if k not in is_old]
        props = {j: cols.properties[k] for j, k in enumerate(kept) if k in cols.properties}
    vids = (
        graph.add_vertices_bulk(
            pick(cols.type),
            pick(cols.basename),
            pick(cols.name),
            pick(cols.id),
            pick(rank),
            pick(cols.size),
            [""] * len(new_paths),  # Fluxion's JGF reader keeps no unit (as attach_document)
            uniq_ids=_store_uniqs(graph, pick(cols.uniq_id)),
            statuses=pick(cols.status),
            paths={ss: new_paths},
            properties=props,
            shared_paths=True,
            fresh_paths=True,  # distinct (checked above) and none in the index (each is a new one)
        )
        if new_paths
        else []
    )
    if not old:
        handle = vids
    elif new_pos is None:
        handle = list(vids)
        for k, v in zip(old, old_v):  # (ascending: every position before k is final)
            handle.insert(k, v)
    else:
        handle = found
        for k, v in zip(new_pos, vids):  # (a loop: a map over the slot wrapper __setitem__ takes twice as long)
            handle[k] = v
    if e_src:
        if keep is None:
            src, dst, e_ss, e_rel = e_src, e_dst, cols.e_ss, cols.e_rel
        else:
            src = list(compress(e_src, keep))
            dst = list(compress(e_dst, keep))
            e_ss = list(compress(cols.e_ss, keep))
            e_rel = list(compress(cols.e_rel, keep))
        if src:
            one = e_ss[0]
            # (one subsystem: every entry equal to the first, counted in C with an identity test first,
            # where a set hashes each entry)
            if e_ss.count(one) == len(e_ss) and e_rel.count(None) == len(e_rel):
                graph.add_edges_bulk(
                    _take(handle, src),
                    _take(handle, dst),
                    one,
                    DEFAULT_RELATIONS.get(one, "*"),
                )
            else:
                graph.add_edges_bulk(
                    _take(handle, src),
                    _take(handle, dst),
                    e_ss,
                    [r or DEFAULT_RELATIONS.get(x, "*") for r, x in zip(e_rel, e_ss)],
                )
            added = True
    if vids or added:
        graph.version += 1  # as attach_document
    return vids, handle, cols.size, cols.exclusive


def attach_jgf(graph: ResourceGraph, text: str | bytes, *, source: str = "<string>") -> list[int]:
    """Attach a JGF subgraph to ``graph`` (Fluxion's ``unpack_at``).

    Vertices whose path and rank exist are reused; the others are created
    (their handles are returned in creation order); edges touching a new
    vertex are added.  On any error the graph is left unchanged.
    O(subgraph) plus the path-index lookups.
    """
    with no_gc():
        doc = parse_jgf(text, source=source)
        return _unpack(graph, doc, source, require_root=False)


def locate_vertices(
    graph: ResourceGraph, nodes: Sequence[_jgf.Node] | str | bytes, *, source: str = "<string>"
) -> list[int]:
    """Find the graph vertex of each JGF node the way Fluxion's updater does.

    Every path of the node must exist with the node's rank and lead to the
    same vertex, and the vertex must agree on type, basename, size, rank,
    id, name, properties and paths (``find_vtx`` in Fluxion).  Returns
    handles in node order; a mismatch raises GraphFormatError naming the
    node.  O(nodes).
    """
    recs = read_vertices(nodes, source=source) if isinstance(nodes, str | bytes) else nodes
    out: list[int] = []
    for node in recs:
        found: int | None = None
        for ss, p in node.paths.items():
            v = graph.vertex_at(p, node.rank)
            if v is None and has_rank(graph, u := graph.by_path.get(p), node.rank):
                v = u
            if v is None:
                raise fail(source, _where(node), f"inconsistent input vertex: nonexistent path ({p}) in {ss}")
            if found is None:
                found = v
            elif found != v:
                raise fail(
                    source, _where(node), f"inconsistent input vertex for {p}: paths name two vertices"
                )
        if found is None:
            raise fail(source, _where(node), "vertex has no paths")
        v = found
        diffs = []
        for attr, have, want in (
            ("type", graph.v_type[v], node.type),
            ("basename", graph.v_basename[v], node.basename),
            ("size", graph.v_size[v], node.size),
            ("rank", node.rank if has_rank(graph, v, node.rank) else graph.v_rank[v], node.rank),
            ("id", graph.v_id[v], node.id),
            ("name", graph.v_name[v], node.name),
            ("properties", graph.properties(v), node.properties),
            ("paths", graph.vertex_paths(v), dict(sorted(node.paths.items()))),
        ):
            if have != want:
                diffs.append(f"{attr}=({have}, {want})")
        if diffs:
            raise fail(source, _where(node), "inconsistent input vertex: " + " ".join(diffs))
        out.append(v)
    return out


def graph_to_jgf(
    graph: ResourceGraph, *, style: Literal["fluxion", "compact", "indent"] = "fluxion"
) -> bytes:
    """The whole graph as JGF bytes in Fluxion's layout.

    Vertices in creation (handle) order, edges in creation order; each node
    ``{"id": "<uniq_id>", "metadata": {type, basename, name, id, uniq_id,
    rank, exclusive, unit, size, [properties], paths, [status]}}``, each edge
    ``{"source", "target", "metadata": {"subsystem"}}``.  O(V + E).
    """
    with no_gc():
        if style == "fluxion":
            return _graph_to_fluxion_text(graph)
        return _graph_to_jgf(graph, style)


def _graph_to_jgf(graph: ResourceGraph, style: Literal["fluxion", "compact", "indent"]) -> bytes:
    vt, vb, vn, vi, vu, vr, vs, vun, vst = (
        graph.v_type,
        graph.v_basename,
        graph.v_name,
        graph.v_id,
        graph.v_uniq,
        graph.v_rank,
        graph.v_size,
        graph.v_unit,
        graph.v_status,
    )
    subsystems = sorted(graph.paths)
    pcols = [(ss, graph.paths[ss]) for ss in subsystems]
    props = graph.v_props
    nodes: list[dict[str, Any]] = []
    append = nodes.append
    for v in graph.vertices():
        md: dict[str, Any] = {
            "type": vt[v],
            "basename": vb[v],
            "name": vn[v],
            "id": vi[v],
            "uniq_id": vu[v],
            "rank": vr[v],
            "exclusive": False,
            "unit": vun[v],
            "size": vs[v],
        }
        pr = props.get(v)
        if pr:
            md["properties"] = dict(pr)
        md["paths"] = {ss: col[v] for ss, col in pcols if v in col}
        if vst[v] == DOWN:
            md["status"] = 1
        append({"id": str(vu[v]), "metadata": md})
    es, ed, ess = graph.e_src, graph.e_dst, graph.e_ss
    edges = [
        {"source": str(vu[es[e]]), "target": str(vu[ed[e]]), "metadata": {"subsystem": ess[e]}}
        for e in graph.edges()
    ]
    return _jgf.write(nodes, edges, style=style)


_NEEDS_ESCAPE = re.compile(r'[\x00-\x1f"\\]')


def _quoter() -> Callable[[str], str]:
    """A JSON string quoter with a bounded cache (names and types repeat)."""
    cache: dict[str, str] = {}

    def q(s: str) -> str:
        r = cache.get(s)
        if r is None:
            r = orjson.dumps(s).decode() if _NEEDS_ESCAPE.search(s) else f'"{s}"'
            if len(cache) < 200_000:
                cache[s] = r
        return r

    return q


def _quote_once(s: str) -> str:
    return orjson.dumps(s).decode() if _NEEDS_ESCAPE.search(s) else f'"{s}"'


def _graph_to_fluxion_text(graph: ResourceGraph) -> bytes:
    """Fluxion-layout JGF written directly as text (the big-graph fast path).

    Produces the same bytes as building the node/edge objects and calling
    ``jgf.write(style="fluxion")``, without the intermediate objects.
    """
    q = _quoter()
    vt, vb, vn, vi, vu, vr, vs, vun, vst = (
        graph.v_type,
        graph.v_basename,
        graph.v_name,
        graph.v_id,
        graph.v_uniq,
        graph.v_rank,
        graph.v_size,
        graph.v_unit,
        graph.v_status,
    )
    pcols = [(q(ss), graph.paths[ss]) for ss in sorted(graph.paths)]
    props = graph.v_props
    parts: list[str] = []
    ap = parts.append
    for v in graph.vertices():
        paths = ", ".join(f"{qss}: {_quote_once(col[v])}" for qss, col in pcols if v in col)
        pr = props.get(v)
        ptxt = ""
        if pr:
            ptxt = '"properties": {' + ", ".join(f"{q(k)}: {q(x)}" for k, x in pr.items()) + "}, "
        tail = ', "status": 1' if vst[v] == DOWN else ""
        ap(
            f'{{"id": "{vu[v]}", "metadata": {{"type": {q(vt[v])}, "basename": {q(vb[v])}, '
            f'"name": {q(vn[v])}, "id": {vi[v]}, "uniq_id": {vu[v]}, "rank": {vr[v]}, '
            f'"exclusive": false, "unit": {q(vun[v])}, "size": {vs[v]}, {ptxt}"paths": {{{paths}}}{tail}}}}}'
        )
    es, ed, ess = graph.e_src, graph.e_dst, graph.e_ss
    eparts = [
        f'{{"source": "{vu[es[e]]}", "target": "{vu[ed[e]]}", "metadata": {{"subsystem": {q(ess[e])}}}}}'
        for e in graph.edges()
    ]
    text = '{"graph": {"nodes": [' + ", ".join(parts) + '], "edges": [' + ", ".join(eparts) + "]}}"
    return text.encode()
