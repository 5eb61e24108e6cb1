"""rv1exec reader: a graph from the execution section of an R document (RFC 20).

R version 1 describes a resource set as ``{"version": 1, "execution":
{"R_lite": [{"rank": idset, "children": {type: idset}}], "nodelist":
[hostlist], "properties": {name: rank idset}, "starttime", "expiration"}}``.

Fluxion's ``rv1exec`` reader (``resource_reader_rv1exec.cpp``) builds:

* ``cluster0`` (type cluster, basename ``cluster``, id 0, rank -1), root
  of containment;
* for each R_lite entry in order and each of its ranks in ascending order,
  a ``node`` vertex named after the host: the i-th smallest rank of the
  whole R_lite gets the i-th host of the expanded nodelist; its id is the
  host name's numeric suffix (-1 if none) and its basename the rest; it
  carries the R properties whose rank idset contains it (value ``""``);
* under each node, for each child type in document order and each id in
  ascending order, a vertex ``<type><id>`` of size 1 with the node's rank.

``uniq_id`` is the creation index; paths are ``/cluster0/<host>/<child>``.
Several ranks may name one host (``flux start --test-size=4`` runs four
brokers on one machine): as in Fluxion, whose path index holds a vector of
vertices per path, each rank gets its own node vertex and subtree, and they
share the paths; a vertex is identified by (path, rank).  One path twice on
one rank is refused as a duplicate vertex.
:func:`parse_rv1exec` returns the same information without building a
graph, for partial cancel and update.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from fluxlite.graph import CONTAINMENT, ResourceGraph
from fluxlite.readers._common import decode_hostlist, decode_idset, fail, no_gc, split_hostname, to_text

__all__ = ["RV1Exec", "Rv1execReader", "parse_rv1exec"]


@dataclass(frozen=True, slots=True)
class RV1Exec:
    """The execution section of an R (version 1) document.

    ``ranks`` maps each rank, in R_lite order, to ``{type: ids}`` (ids
    sorted); ``hostnames`` maps each rank to its host (Fluxion's mapping:
    i-th smallest rank -> i-th host of ``nodelist``); ``properties`` maps a
    property name to the ranks that have it.
    """

    ranks: dict[int, dict[str, tuple[int, ...]]]
    nodelist: tuple[str, ...] = ()
    hostnames: dict[int, str] = field(default_factory=dict)
    starttime: float = 0.0
    expiration: float = 0.0
    properties: dict[str, tuple[int, ...]] = field(default_factory=dict)
    version: int = 1


def _tname(v: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(v), "number"
    )


def parse_rv1exec(text: str | bytes, *, source: str = "<string>", require_nodelist: bool = True) -> RV1Exec:
    """Parse and check an R document's execution section.

    Errors (malformed JSON, wrong version, bad idsets or hostlists, a rank
    listed twice, fewer hosts than ranks) raise GraphFormatError naming the
    element.  ``require_nodelist=False`` accepts R without a nodelist (what
    Fluxion's partial cancel needs).  O(size of R).
    """
    raw = text.encode() if isinstance(text, str) else text
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise fail(source, f"line {exc.lineno}, column {exc.colno}", f"invalid JSON: {exc.msg}") from exc
    if type(obj) is not dict:
        raise fail(source, "R", f"expected an object, got {_tname(obj)}")
    version = obj.get("version")
    if version is None:
        raise fail(source, "R", "missing required key 'version'")
    if type(version) is not int:
        raise fail(source, "version", f"expected an integer, got {_tname(version)}")
    if version != 1:
        raise fail(source, "version", f"unsupported R version {version} (expected 1)")
    ex = obj.get("execution")
    if ex is None:
        raise fail(source, "R", "missing required key 'execution'")
    if type(ex) is not dict:
        raise fail(source, "execution", f"expected an object, got {_tname(ex)}")
    rlite = ex.get("R_lite")
    if rlite is None:
        raise fail(source, "execution", "missing required key 'R_lite'")
    if type(rlite) is not list:
        raise fail(source, "execution.R_lite", f"expected an array, got {_tname(rlite)}")

    ranks: dict[int, dict[str, tuple[int, ...]]] = {}
    for i, entry in enumerate(rlite):
        where = f"execution.R_lite[{i}]"
        if type(entry) is not dict:
            raise fail(source, where, f"expected an object, got {_tname(entry)}")
        rs = entry.get("rank")
        if type(rs) is not str:
            raise fail(source, f"{where}.rank", "missing or not an idset string")
        try:
            rank_ids = decode_idset(rs)
        except ValueError as exc:
            raise fail(source, f"{where}.rank", str(exc)) from exc
        children = entry.get("children")
        if type(children) is not dict:
            raise fail(source, f"{where}.children", "missing or not an object")
        kids: dict[str, tuple[int, ...]] = {}
        for rtype, ids in children.items():
            if not rtype:
                raise fail(source, f"{where}.children", "empty resource type")
            if type(ids) is not str:
                raise fail(
                    source, f"{where}.children.{rtype}", f"expected an idset string, got {_tname(ids)}"
                )
            try:
                kids[rtype] = tuple(decode_idset(ids))
            except ValueError as exc:
                raise fail(source, f"{where}.children.{rtype}", str(exc)) from exc
        for r in rank_ids:
            if r in ranks:
                raise fail(source, f"{where}.rank", f"rank {r} is listed more than once")
            ranks[r] = kids

    nodelist_raw = ex.get("nodelist")
    hosts: list[str] = []
    if nodelist_raw is None:
        if require_nodelist:
            raise fail(source, "execution", "missing required key 'nodelist'")
    else:
        if type(nodelist_raw) is not list:
            raise fail(source, "execution.nodelist", f"expected an array, got {_tname(nodelist_raw)}")
        for i, h in enumerate(nodelist_raw):
            if type(h) is not str:
                raise fail(source, f"execution.nodelist[{i}]", f"expected a hostlist string, got {_tname(h)}")
            try:
                hosts.extend(decode_hostlist(h))
            except ValueError as exc:
                raise fail(source, f"execution.nodelist[{i}]", str(exc)) from exc
    hostnames: dict[int, str] = {}
    if nodelist_raw is not None:
        ordered = sorted(ranks)
        if len(hosts) < len(ordered):
            raise fail(source, "execution.nodelist", f"{len(hosts)} host(s) for {len(ordered)} rank(s)")
        hostnames = {r: hosts[k] for k, r in enumerate(ordered)}

    props_raw = ex.get("properties")
    props: dict[str, tuple[int, ...]] = {}
    if props_raw is not None:
        if type(props_raw) is not dict:
            raise fail(source, "execution.properties", f"expected an object, got {_tname(props_raw)}")
        for name, ids in props_raw.items():
            if type(ids) is not str:
                raise fail(
                    source, f"execution.properties.{name}", f"expected an idset string, got {_tname(ids)}"
                )
            try:
                props[name] = tuple(decode_idset(ids))
            except ValueError as exc:
                raise fail(source, f"execution.properties.{name}", str(exc)) from exc

    times = {}
    for key in ("starttime", "expiration"):
        val = ex.get(key, 0)
        if val is None:
            val = 0
        if type(val) not in (int, float):
            raise fail(source, f"execution.{key}", f"expected a number, got {_tname(val)}")
        times[key] = float(val)
    return RV1Exec(
        ranks,
        tuple(hosts),
        hostnames,
        times["starttime"],
        times["expiration"],
        props,
        version,
    )


class Rv1execReader:
    """Fluxion's ``rv1exec`` reader (see the module docstring)."""

    name = "rv1exec"
    supports_allowlist = False

    def load(
        self,
        text: str | bytes,
        graph: ResourceGraph | None = None,
        *,
        rank: int = -1,
        source: str = "<string>",
    ) -> ResourceGraph:
        """Build the graph of an R document into a new (or empty) graph.

        ``rank`` is ignored: R carries its ranks.  A graph that already has
        a containment root is refused (Fluxion cannot attach R either).
        """
        body = to_text(text, source)
        if not body.strip():
            raise fail(source, "R", "empty document")
        r = parse_rv1exec(body, source=source)
        g = ResourceGraph() if graph is None else graph
        if CONTAINMENT in g.roots:
            raise fail(source, "R", "cannot load R into a graph that already has a containment root")
        with no_gc():
            _build(g, r, source)
        return g


def _build(g: ResourceGraph, r: RV1Exec, source: str) -> None:
    v_type: list[str] = ["cluster"]
    v_base: list[str] = ["cluster"]
    v_name: list[str] = ["cluster0"]
    v_id: list[int] = [0]
    v_rank: list[int] = [-1]
    v_path: list[str] = ["/cluster0"]
    props: dict[int, dict[str, str]] = {}
    e_src: list[int] = []
    e_dst: list[int] = []
    rank_props: dict[int, dict[str, str]] = {}
    for pname, pranks in r.properties.items():
        for pr in pranks:
            rank_props.setdefault(pr, {})[pname] = ""
    for rank, kids in r.ranks.items():
        host = r.hostnames[rank]
        try:
            basename, hid = split_hostname(host)
        except ValueError as exc:
            raise fail(source, f"rank {rank}", f'bad host name "{host}": {exc}') from exc
        node = len(v_type)
        npath = f"/cluster0/{host}"
        v_type.append("node")
        v_base.append(basename)
        v_name.append(host)
        v_id.append(hid)
        v_rank.append(rank)
        v_path.append(npath)
        if rank in rank_props:
            props[node] = rank_props[rank]
        e_src.append(0)
        e_dst.append(node)
        for rtype, ids in kids.items():
            for i in ids:
                name = f"{rtype}{i}"
                k = len(v_type)
                v_type.append(rtype)
                v_base.append(rtype)
                v_name.append(name)
                v_id.append(i)
                v_rank.append(rank)
                v_path.append(f"{npath}/{name}")
                e_src.append(node)
                e_dst.append(k)
    n = len(v_type)
    # Fluxion keys a vertex by (path, rank): ranks that share a host name share
    # its paths; one path twice on one rank is a duplicate vertex
    seen: dict[tuple[str, int], int] = {}
    for k, p in enumerate(v_path):
        first = seen.setdefault((p, v_rank[k]), k)
        if first != k or g.vertex_at(p, v_rank[k]) is not None:
            raise fail(
                source,
                f'rank {v_rank[k]}, vertex "{v_name[k]}"',
                f"duplicate vertex: path {p} is already on rank {v_rank[k]}",
            )
    vids = g.add_vertices_bulk(
        v_type,
        v_base,
        v_name,
        v_id,
        v_rank,
        [1] * n,
        [""] * n,
        paths={CONTAINMENT: v_path},
        properties=props,
        shared_paths=True,
    )
    g.add_edges_bulk([vids[x] for x in e_src], [vids[x] for x in e_dst])
    g.set_root(CONTAINMENT, vids[0])
    g.version += 1
