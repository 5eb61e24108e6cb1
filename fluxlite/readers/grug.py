"""GRUG reader: generate a resource graph from a GraphML generation recipe.

A GRUG recipe (Fluxion's "Generating Resources Using GraphML") is a small
GraphML graph whose vertices are resource *pools* (type, basename, size,
unit, subsystem, root flag) and whose edges say how to generate children:

* ``MULTIPLY``: each instance of the source pool gets ``multi_scale``
  children of the target pool;
* ``ASSOCIATE_IN``: each source instance is linked (in ``e_subsystem``) to
  every existing vertex of the target pool's type;
* ``ASSOCIATE_BY_PATH_IN``: the same, restricted to targets whose path in
  ``as_tgt_subsystem``, cut ``as_tgt_uplvl`` levels up, equals the source's
  path cut ``as_src_uplvl`` levels up.

Fluxion rules replicated here (``resource_reader_grug.cpp``):

* The recipe is walked with Boost's depth-first search: DFS trees start at
  recipe vertices in document order, out-edges in document order; only
  *tree* edges generate.  A root-flagged pool emits one root vertex (id 0,
  name ``basename0``, path ``/basename0``) or reuses the subsystem's root.
* Ids: ``id_scope < 0`` gives id -1 (name = basename); ``id_scope == 0``
  gives ``id_start + i``; ``id_scope = s > 0`` gives ``id_start +
  (j % W) * multi_scale * id_stride + i * id_stride`` where ``i`` is the
  child's index under its parent, ``j`` the parent's index among all
  instances of its pool, and ``W`` the product of the first ``s`` entries
  of Fluxion's scale stack (pushed on each MULTIPLY tree edge, popped on
  every finished recipe vertex).
* Names are ``basename + id``; a vertex's path in its pool's subsystem is
  its generating parent's path in that subsystem + ``/`` + name; an
  association sets the target's path in ``e_subsystem`` to the source's
  path + ``/`` + target name.
* ``uniq_id`` is the creation index.  Vertices are created depth first, a
  child immediately followed by its own subtree, so each node's subtree is
  contiguous (as in Fluxion v0.54's GRUG graphs).  Ranks: a ``node`` gets
  the next rank (0, 1, ... in creation order); every other vertex inherits
  its generating parent's rank; roots have -1.
* Out-edges of a vertex are in the order they are generated (recipe
  out-edge order, then child index).

Recipe errors (malformed XML, unknown keys or generation methods, bad
integers, no root, duplicate paths) raise GraphFormatError naming the file
and the recipe node or edge.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from fluxlite.errors import GraphFormatError
from fluxlite.graph import FluxionIds, ResourceGraph
from fluxlite.readers._common import fail, no_gc, to_text

__all__ = ["GrugReader", "Recipe", "RecipeEdge", "RecipePool", "build_from_recipe", "parse_recipe"]

MULTIPLY = "MULTIPLY"
ASSOCIATE_IN = "ASSOCIATE_IN"
ASSOCIATE_BY_PATH_IN = "ASSOCIATE_BY_PATH_IN"
_METHODS = (MULTIPLY, ASSOCIATE_IN, ASSOCIATE_BY_PATH_IN)

_INT32 = (-(2**31), 2**31 - 1)
_INT64 = (-(2**63), 2**63 - 1)

#: GraphML attribute names Fluxion registers, with the C++ member type.
_NODE_PROPS = {
    "root": "int",
    "type": "string",
    "basename": "string",
    "unit": "string",
    "size": "long",
    "subsystem": "string",
}
_EDGE_PROPS = {
    "e_subsystem": "string",
    "relation": "string",
    "rrelation": "string",
    "gen_method": "string",
    "id_scope": "int",
    "id_start": "int",
    "id_stride": "int",
    "multi_scale": "int",
    "as_tgt_subsystem": "string",
    "as_tgt_uplvl": "int",
    "as_src_uplvl": "int",
}


@dataclass(slots=True)
class RecipePool:
    """A recipe vertex: a pool of resources of one type."""

    key: str
    type: str = ""
    basename: str = ""
    unit: str = ""
    size: int = 0
    root: int = 0
    subsystem: str = ""


@dataclass(slots=True)
class RecipeEdge:
    """A recipe edge: how instances of ``src`` generate or link ``dst``."""

    key: str
    src: int
    dst: int
    e_subsystem: str = ""
    relation: str = ""
    rrelation: str = ""
    gen_method: str = ""
    id_scope: int = 0
    id_start: int = 0
    id_stride: int = 0
    multi_scale: int = 0
    as_tgt_subsystem: str = ""
    as_tgt_uplvl: int = 0
    as_src_uplvl: int = 0


@dataclass(slots=True)
class Recipe:
    """A parsed GRUG recipe: pools, edges, and each pool's out-edges in order."""

    pools: list[RecipePool] = field(default_factory=list)
    edges: list[RecipeEdge] = field(default_factory=list)

    def out_edges(self) -> list[list[int]]:
        out: list[list[int]] = [[] for _ in self.pools]
        for k, e in enumerate(self.edges):
            out[e.src].append(k)
        return out


# ------------------------------------------------------------------ parsing
def _local(tag: Any) -> str:
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def _convert(raw: str | None, ctype: str, source: str, where: str, prop: str) -> Any:
    text = (raw or "").strip()
    if ctype == "string":
        return raw or ""
    lo, hi = _INT32 if ctype == "int" else _INT64
    low = text.lower()
    if low in ("true", "false"):
        return 1 if low == "true" else 0
    try:
        val = int(text, 10)
    except ValueError:
        raise fail(source, where, f'{prop}: expected an integer, got "{raw or ""}"') from None
    if not lo <= val <= hi:
        raise fail(source, where, f"{prop}: {val} is out of range")
    return val


def parse_recipe(text: str | bytes, source: str = "<string>") -> Recipe:
    """Parse GRUG GraphML into a :class:`Recipe` (no generation).

    Unknown attribute names, undeclared data keys, unknown generation
    methods, edges naming unknown recipe nodes, duplicate node ids and
    malformed integers are errors, as in Fluxion (Boost's GraphML parser
    rejects properties it does not know).
    """
    body = to_text(text, source)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        line, col = exc.position
        msg = re.sub(r":\s*line \d+, column \d+$", "", str(exc))
        raise fail(source, f"line {line}, column {col + 1}", f"malformed XML: {msg}") from exc
    if _local(root.tag) != "graphml":
        raise fail(source, f"<{_local(root.tag)}>", "not a GraphML document (expected <graphml>)")

    keys: dict[str, tuple[str, str, str]] = {}  # key id -> (for, attr.name, ctype)
    defaults: dict[str, dict[str, Any]] = {"node": {}, "edge": {}}
    for k in root:
        if _local(k.tag) != "key":
            continue
        kid = k.get("id")
        kfor = k.get("for", "all")
        name = k.get("attr.name") or kid or ""
        where = f'key "{kid}"'
        if kid is None:
            raise fail(source, "<key>", "missing attribute 'id'")
        if kfor not in ("node", "edge", "all", "graph", "graphml"):
            raise fail(source, where, f'unknown for="{kfor}"')
        kinds = ("node", "edge") if kfor == "all" else (kfor,)
        ctype = None
        for kind in kinds:
            table = _NODE_PROPS if kind == "node" else _EDGE_PROPS if kind == "edge" else {}
            if name in table:
                ctype = table[name]
        dflt = None
        for d in k:
            if _local(d.tag) == "default":
                dflt = d.text or ""
        if ctype is None:
            if kfor in ("graph", "graphml"):
                continue
            # Fluxion rejects properties it does not know as soon as they are used.
            keys[kid] = (kfor, name, "")
            if dflt is not None:
                raise fail(source, where, f'unknown GRUG attribute "{name}"')
            continue
        keys[kid] = (kfor, name, ctype)
        if dflt is not None:
            val = _convert(dflt, ctype, source, where, f"default of {name}")
            for kind in kinds:
                table = _NODE_PROPS if kind == "node" else _EDGE_PROPS
                if name in table:
                    defaults[kind][name] = val

    graph_el = None
    for g in root:
        if _local(g.tag) == "graph":
            graph_el = g
            break
    if graph_el is None:
        raise fail(source, "<graphml>", "no <graph> element")
    ed = graph_el.get("edgedefault", "directed")
    if ed != "directed":
        raise fail(source, f'graph "{graph_el.get("id", "")}"', f'edgedefault must be "directed", got "{ed}"')

    recipe = Recipe()
    index: dict[str, int] = {}

    def data_of(el: ET.Element, kind: str, where: str) -> dict[str, Any]:
        vals = dict(defaults[kind])
        for d in el:
            if _local(d.tag) != "data":
                continue
            kid = d.get("key")
            if kid is None or kid not in keys:
                raise fail(source, where, f'data for undeclared key "{kid}"')
            kfor, name, ctype = keys[kid]
            if not ctype:
                raise fail(source, where, f'unknown GRUG attribute "{name}"')
            if kfor not in (kind, "all"):
                raise fail(source, where, f'key "{kid}" is declared for {kfor}, not {kind}')
            vals[name] = _convert(d.text, ctype, source, where, name)
        return vals

    pending_edges: list[tuple[ET.Element, str]] = []
    n_edge = 0
    for el in graph_el:
        tag = _local(el.tag)
        if tag == "node":
            nid = el.get("id")
            if nid is None:
                raise fail(source, f"<node> #{len(recipe.pools)}", "missing attribute 'id'")
            where = f'node "{nid}"'
            if nid in index:
                raise fail(source, where, "duplicate node id")
            vals = data_of(el, "node", where)
            pool = RecipePool(nid, **vals)
            if not pool.type:
                raise fail(source, where, "type: must not be empty")
            if not pool.subsystem:
                raise fail(source, where, "subsystem: must not be empty")
            if pool.size < 0:
                raise fail(source, where, f"size: must be >= 0, got {pool.size}")
            index[nid] = len(recipe.pools)
            recipe.pools.append(pool)
        elif tag == "edge":
            eid = el.get("id") or f"#{n_edge}"
            pending_edges.append((el, eid))
            n_edge += 1
    # Edges may name nodes declared after them (GraphML allows any order).
    for el, eid in pending_edges:
        where = f'edge "{eid}"'
        src, dst = el.get("source"), el.get("target")
        if src is None or dst is None:
            raise fail(source, where, "missing attribute 'source' or 'target'")
        if src not in index:
            raise fail(source, where, f'source "{src}" is not a recipe node')
        if dst not in index:
            raise fail(source, where, f'target "{dst}" is not a recipe node')
        vals = data_of(el, "edge", where)
        edge = RecipeEdge(eid, index[src], index[dst], **vals)
        if edge.gen_method not in _METHODS:
            raise fail(source, where, f'unknown generation method "{edge.gen_method}"')
        if not edge.e_subsystem:
            raise fail(source, where, "e_subsystem: must not be empty")
        recipe.edges.append(edge)
    if not any(p.root for p in recipe.pools):
        raise fail(source, "recipe", "no root: no <node> has root=1")
    return recipe


# --------------------------------------------------------------- generation
@dataclass(slots=True)
class _Plan:
    """The DFS classification of a recipe (Boost's depth_first_search)."""

    dfs_roots: list[int]
    tree_children: list[list[int]]
    wraps: dict[int, int]  # tree edge -> id wrap (scope > 0)


def _plan(recipe: Recipe, source: str) -> _Plan:
    n = len(recipe.pools)
    out = recipe.out_edges()
    white, gray, black = 0, 1, 2
    color = [white] * n
    tree_children: list[list[int]] = [[] for _ in range(n)]
    wraps: dict[int, int] = {}
    hier: deque[int] = deque()
    roots: list[int] = []
    edges = recipe.edges
    for s in range(n):
        if color[s] != white:
            continue
        roots.append(s)
        color[s] = gray
        stack = [(s, iter(out[s]))]
        while stack:
            u, it = stack[-1]
            for e in it:
                E = edges[e]
                v = E.dst
                if color[v] == white:
                    if recipe.pools[v].root:
                        raise fail(
                            source,
                            f'edge "{E.key}"',
                            f'target "{recipe.pools[v].key}" has root=1 but is generated from '
                            f'"{recipe.pools[u].key}"',
                        )
                    if E.gen_method == MULTIPLY:
                        scope = E.id_scope
                        if scope > 0:
                            depth = min(scope, len(hier))
                            w = 1
                            for h in range(depth):
                                w *= hier[h]
                            wraps[e] = w
                        hier.appendleft(E.multi_scale)
                    tree_children[u].append(e)
                    color[v] = gray
                    stack.append((v, iter(out[v])))
                    break
            else:
                if hier:
                    hier.popleft()
                color[u] = black
                stack.pop()
    return _Plan(roots, tree_children, wraps)


def _path_prefix(path: str, uplevel: int) -> str | None:
    """Fluxion's path_prefix: the path cut ``uplevel`` levels up, with a
    trailing slash; None when the path is too short (Fluxion then compares
    empty strings)."""
    n = path.count("/")
    if uplevel >= n:
        return None
    target = n - uplevel + 1
    pos: int | None = 0
    occ = 0
    while occ != target:
        k = path.find("/", pos)  # type: ignore[arg-type]
        if k < 0:
            pos = None
            break
        pos = k + 1
        occ += 1
    prefix = path if pos is None else path[:pos]
    if not prefix.endswith("/"):
        prefix += "/"
    return prefix


def _gen_id(E: RecipeEdge, e: int, i: int, scale: int, j: int, wraps: dict[int, int]) -> int:
    scope = E.id_scope
    if scope < 0:
        return -1
    if scope == 0:
        return E.id_start + i
    return E.id_start + (j % wraps[e]) * scale * E.id_stride + i * E.id_stride


def _name(cache: dict[tuple[str, int], str], basename: str, vid: int) -> str:
    key = (basename, vid)
    name = cache.get(key)
    if name is None:
        name = basename if vid == -1 else f"{basename}{vid}"
        cache[key] = name
    return name


def build_from_recipe(
    recipe: Recipe, graph: ResourceGraph, *, rank: int = -1, source: str = "<string>"
) -> list[int]:
    """Generate ``recipe`` into ``graph``; return the new vertex handles.

    See the module docstring for the rules.  Nothing is changed when an
    error is raised.  O(generated vertices + edges).
    """
    plan = _plan(recipe, source)
    pools = recipe.pools
    edges = recipe.edges
    tree_children = plan.tree_children
    wraps = plan.wraps
    has_assoc = any(e.gen_method != MULTIPLY for e in edges)

    # New vertices (local index k); existing graph vertices are encoded -1 - vid.
    v_type: list[str] = []
    v_base: list[str] = []
    v_name: list[str] = []
    v_id: list[int] = []
    v_rank: list[int] = []
    v_size: list[int] = []
    v_unit: list[str] = []
    v_ss: list[str] = []
    v_path: list[str] = []
    v_gen: list[int] = []  # the recipe edge that generated each new vertex (-1: a root)
    extra_paths: dict[tuple[int, str], str] = {}
    e_src: list[int] = []
    e_dst: list[int] = []
    e_ss: list[str] = []
    e_rel: list[str] = []
    edge_seen: set[tuple[int, int, str]] = set()
    local_by_type: dict[str, list[int]] = {}
    new_roots: dict[str, int] = {}
    names: dict[tuple[str, int], str] = {}
    names_by_base: dict[str, dict[int, str]] = {}
    occ = [0] * len(pools)
    fixed_rank = rank if rank >= 0 else None
    max_rank = max((r for r in graph.by_rank if r >= 0), default=-1) if len(graph) else -1
    next_rank = [max_rank + 1]
    assoc_snap: dict[int, list[int]] = {}

    def path_of(x: int, ss: str) -> str:
        if x >= 0:
            if v_ss[x] == ss:
                return v_path[x]
            return extra_paths.get((x, ss), "")
        return graph.paths.get(ss, {}).get(-1 - x, "")

    def rank_of(x: int) -> int:
        return v_rank[x] if x >= 0 else graph.v_rank[-1 - x]

    def name_of(x: int) -> str:
        return v_name[x] if x >= 0 else graph.v_name[-1 - x]

    def set_path(x: int, ss: str, path: str) -> None:
        if x >= 0 and v_ss[x] == ss:
            v_path[x] = path
        else:
            extra_paths[(x, ss)] = path

    def new_vertex(pool: RecipePool, vid: int, name: str, path: str, parent_rank: int, gen: int = -1) -> int:
        k = len(v_type)
        v_gen.append(gen)
        v_type.append(pool.type)
        v_base.append(pool.basename)
        v_name.append(name)
        v_id.append(vid)
        if fixed_rank is not None:
            v_rank.append(fixed_rank)
        elif pool.type == "node":
            v_rank.append(next_rank[0])
            next_rank[0] += 1
        else:
            v_rank.append(parent_rank)
        v_size.append(pool.size)
        v_unit.append(pool.unit)
        v_ss.append(pool.subsystem)
        v_path.append(path)
        if has_assoc:
            local_by_type.setdefault(pool.type, []).append(k)
        return k

    def add_edge(x: int, c: int, E: RecipeEdge) -> None:
        if has_assoc:
            key = (x, c, E.e_subsystem)
            if key in edge_seen:
                return
            edge_seen.add(key)
        e_src.append(x)
        e_dst.append(c)
        e_ss.append(E.e_subsystem)
        e_rel.append(E.relation)

    def targets_of_type(e: int, rtype: str) -> list[int]:
        got = assoc_snap.get(e)
        if got is None:
            existing = [-1 - v for v in graph.vertices() if graph.v_type[v] == rtype]
            got = existing + list(local_by_type.get(rtype, ()))
            assoc_snap[e] = got
        return got

    a_type, a_base, a_name, a_id = v_type.append, v_base.append, v_name.append, v_id.append
    a_rank, a_size, a_unit, a_ss, a_path = (
        v_rank.append,
        v_size.append,
        v_unit.append,
        v_ss.append,
        v_path.append,
    )
    a_esrc, a_edst, a_ess, a_erel = e_src.append, e_dst.append, e_ss.append, e_rel.append

    def visit(x: int, u: int, j: int) -> None:
        for e in tree_children[u]:
            E = edges[e]
            w = E.dst
            W = pools[w]
            if E.gen_method != MULTIPLY:
                associate(x, e, E, w, W)
                continue
            scale = E.multi_scale
            if scale <= 0:
                continue
            if has_assoc or W.type == "node" or fixed_rank is not None:
                # General path: per-vertex bookkeeping (ranks, type index, edge dedupe).
                prefix = path_of(x, W.subsystem) + "/"
                prank = rank_of(x)
                for i in range(scale):
                    vid = _gen_id(E, e, i, scale, j, wraps)
                    name = _name(names, W.basename, vid)
                    c = new_vertex(W, vid, name, prefix + name, prank, e)
                    add_edge(x, c, E)
                    o = occ[w]
                    occ[w] = o + 1
                    if tree_children[w]:
                        visit(c, w, o)
                continue
            # Fast path (no associations, not a node): plain appends.
            prefix = path_of(x, W.subsystem) + "/"
            prank = rank_of(x)
            scope, start, stride = E.id_scope, E.id_start, E.id_stride
            base = start + (j % wraps[e]) * scale * stride if scope > 0 else start
            step = stride if scope > 0 else 1
            rtype, basename, size, unit, ss = W.type, W.basename, W.size, W.unit, W.subsystem
            ess, rel = E.e_subsystem, E.relation
            grandchildren = bool(tree_children[w])
            if not grandchildren:
                # Leaves: one batch of column extends.
                ids = [-1] * scale if scope < 0 else [base + i * step for i in range(scale)]
                nb = names_by_base.setdefault(basename, {})
                batch = [
                    nb[i] if i in nb else nb.setdefault(i, basename if i == -1 else f"{basename}{i}")
                    for i in ids
                ]
                k0 = len(v_type)
                v_type.extend([rtype] * scale)
                v_base.extend([basename] * scale)
                v_name.extend(batch)
                v_id.extend(ids)
                v_rank.extend([prank] * scale)
                v_size.extend([size] * scale)
                v_unit.extend([unit] * scale)
                v_ss.extend([ss] * scale)
                v_path.extend([prefix + n for n in batch])
                v_gen.extend([e] * scale)
                e_src.extend([x] * scale)
                e_dst.extend(range(k0, k0 + scale))
                e_ss.extend([ess] * scale)
                e_rel.extend([rel] * scale)
                occ[w] += scale
                continue
            for i in range(scale):
                vid = -1 if scope < 0 else base + i * step
                nk = (basename, vid)
                name = names.get(nk)
                if name is None:
                    name = basename if vid == -1 else f"{basename}{vid}"
                    names[nk] = name
                c = len(v_type)
                a_type(rtype)
                a_base(basename)
                a_name(name)
                a_id(vid)
                a_rank(prank)
                a_size(size)
                a_unit(unit)
                a_ss(ss)
                a_path(prefix + name)
                v_gen.append(e)
                a_esrc(x)
                a_edst(c)
                a_ess(ess)
                a_erel(rel)
                o = occ[w]
                occ[w] = o + 1
                visit(c, w, o)

    def associate(x: int, e: int, E: RecipeEdge, w: int, W: RecipePool) -> None:
        cands = targets_of_type(e, W.type)
        by_path = E.gen_method == ASSOCIATE_BY_PATH_IN
        src_prefix = _path_prefix(path_of(x, E.as_tgt_subsystem), E.as_src_uplvl) if by_path else None
        for t in cands:
            if by_path:
                tp = _path_prefix(path_of(t, E.as_tgt_subsystem), E.as_tgt_uplvl)
                if (tp or "") != (src_prefix or ""):
                    continue
            set_path(t, E.e_subsystem, path_of(x, E.e_subsystem) + "/" + name_of(t))
            add_edge(x, t, E)
            o = occ[w]
            occ[w] = o + 1
            if tree_children[w]:
                visit(t, w, o)

    was_empty = not len(graph)
    walked: list[tuple[int, int | None]] = []  # (recipe root, the root vertex it created)
    for r in plan.dfs_roots:
        pool = pools[r]
        if not pool.root or not tree_children[r]:
            continue
        ss = pool.subsystem
        if ss in new_roots:
            x = new_roots[ss]
        elif ss in graph.roots:
            x = -1 - graph.roots[ss]
        else:
            name = f"{pool.basename}0"
            x = new_vertex(pool, 0, name, "/" + name, -1)
            new_roots[ss] = x
        walked.append((r, x if x >= 0 and x not in dict(walked).values() else None))
        o = occ[r]
        occ[r] = o + 1
        visit(x, r, o)

    if not v_type and not e_src:
        raise fail(source, "recipe", "generates no resources (no root pool has a tree edge)")
    vids = _commit(
        graph,
        source,
        pools,
        edges,
        v_type,
        v_base,
        v_name,
        v_id,
        v_rank,
        v_size,
        v_unit,
        v_ss,
        v_path,
        extra_paths,
        (e_src, e_dst, e_ss, e_rel),
        new_roots,
    )
    if was_empty and fixed_rank is None:
        order = _fluxion_order(plan, edges, v_gen, walked)
        uniq = graph.v_uniq
        fluxion = [0] * len(uniq)
        for pos, k in enumerate(order):
            fluxion[uniq[vids[k]]] = pos
        graph.fluxion_ids = FluxionIds(fluxion)
    return vids


def _fluxion_order(
    plan: _Plan, edges: list[RecipeEdge], v_gen: list[int], walked: list[tuple[int, int | None]]
) -> list[int]:
    """The new vertices (local indices) in the order Fluxion's reader creates them.

    Boost's DFS over the recipe calls ``tree_edge`` in preorder; each call
    generates the edge's children for every instance of its source pool in
    turn (``dfs_emitter_t::tree_edge``), and a root is created at its pool's
    first tree edge.  Instances of one pool are in the same order here and
    there, so each edge's vertices keep their order here.
    """
    by_edge: dict[int, list[int]] = {}
    for k, e in enumerate(v_gen):
        if e >= 0:
            by_edge.setdefault(e, []).append(k)
    order: list[int] = []
    for r, root in walked:
        if root is not None:
            order.append(root)
        stack = list(reversed(plan.tree_children[r]))
        while stack:
            e = stack.pop()
            order.extend(by_edge.pop(e, ()))
            stack.extend(reversed(plan.tree_children[edges[e].dst]))
    if len(order) != len(v_gen):  # not one tree per root (cannot happen with _plan's trees)
        seen = set(order)
        order.extend(k for k in range(len(v_gen)) if k not in seen)
    return order


def _commit(
    graph: ResourceGraph,
    source: str,
    recipe_pools: list[RecipePool],
    recipe_edges: list[RecipeEdge],
    v_type: list[str],
    v_base: list[str],
    v_name: list[str],
    v_id: list[int],
    v_rank: list[int],
    v_size: list[int],
    v_unit: list[str],
    v_ss: list[str],
    v_path: list[str],
    extra_paths: dict[tuple[int, str], str],
    edge_cols: tuple[list[int], list[int], list[str], list[str]],
    new_roots: dict[str, int],
) -> list[int]:
    n = len(v_type)
    subsystems = sorted(set(v_ss) | {ss for (_, ss) in extra_paths})
    cols: dict[str, list[str | None]] = {}
    if len(set(v_ss)) == 1 and not any(x >= 0 for (x, _) in extra_paths):
        cols[v_ss[0]] = v_path  # type: ignore[assignment]
    else:
        for ss in subsystems:
            col: list[str | None] = [p if s == ss else None for p, s in zip(v_path, v_ss)]
            cols[ss] = col
        for (x, ss), p in extra_paths.items():
            if x >= 0:
                cols[ss][x] = p
    # Paths set on pre-existing vertices by associations.
    existing_updates = [(-1 - x, ss, p) for (x, ss), p in extra_paths.items() if x < 0]
    # Check every path before touching the graph (the store checks new
    # vertices' paths itself and changes nothing on a duplicate).
    for vid, ss, p in existing_updates:
        owner = graph.by_path.get(p)
        if owner is not None and owner != vid:
            raise fail(source, f'vertex "{graph.v_name[vid]}"', f"duplicate path {p} in {ss}")
    new_paths = {p for col in cols.values() for p in col if p is not None} if existing_updates else set()
    for vid, ss, p in existing_updates:
        if p in new_paths:
            raise fail(source, f'vertex "{graph.v_name[vid]}"', f"duplicate path {p} in {ss}")
    try:
        vids = (
            graph.add_vertices_bulk(v_type, v_base, v_name, v_id, v_rank, v_size, v_unit, paths=cols)
            if n
            else []
        )
    except GraphFormatError as exc:
        raise _duplicate_error(graph, recipe_pools, recipe_edges, cols, v_type, v_base, source) from exc
    for vid, ss, p in existing_updates:
        graph.set_path(vid, ss, p)
    e_src, e_dst, e_ss, e_rel = edge_cols

    if e_src:
        graph.add_edges_bulk(_resolve(e_src, vids), _resolve(e_dst, vids), e_ss, e_rel)
    for ss, x in new_roots.items():
        graph.set_root(ss, vids[x] if x >= 0 else -1 - x)
    graph.version += 1
    return vids


def _duplicate_error(
    graph: ResourceGraph,
    pools: list[RecipePool],
    edges: list[RecipeEdge],
    cols: dict[str, list[str | None]],
    v_type: list[str],
    v_base: list[str],
    source: str,
) -> GraphFormatError:
    """Name the recipe edge that generated the first duplicate path."""
    seen: set[str] = set()
    for col in cols.values():
        for k, p in enumerate(col):
            if p is None:
                continue
            if p in seen or p in graph.by_path:
                for e in edges:
                    pool = pools[e.dst]
                    if e.gen_method == MULTIPLY and pool.type == v_type[k] and pool.basename == v_base[k]:
                        return fail(
                            source,
                            f'edge "{e.key}"',
                            f"generates a duplicate path {p} (check id_scope/id_stride)",
                        )
                return fail(source, f'pool of type "{v_type[k]}"', f"generates a duplicate path {p}")
            seen.add(p)
    return fail(source, "recipe", "generates a duplicate path")


def _resolve(refs: list[int], vids: list[int]) -> list[int]:
    """Map local indices (>= 0) to handles and ``-1 - vid`` to ``vid``."""
    if vids and vids[-1] - vids[0] == len(vids) - 1 and min(refs) >= 0:
        off = vids[0]
        return refs if off == 0 else [x + off for x in refs]
    return [vids[x] if x >= 0 else -1 - x for x in refs]


class GrugReader:
    """Fluxion's ``grug`` reader (see the module docstring)."""

    name = "grug"
    supports_allowlist = False

    def load(
        self,
        text: str | bytes,
        graph: ResourceGraph | None = None,
        *,
        rank: int = -1,
        source: str = "<string>",
    ) -> ResourceGraph:
        """Generate the recipe in ``text`` into ``graph`` (a new one by default).

        ``rank >= 0`` gives every generated vertex that rank; the default
        numbers ``node`` vertices 0, 1, ... in creation order and lets the
        rest inherit their parent's rank.
        """
        recipe = parse_recipe(text, source)
        g = ResourceGraph() if graph is None else graph
        with no_gc():
            build_from_recipe(recipe, g, rank=rank, source=source)
        return g
