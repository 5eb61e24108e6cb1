"""Whole-graph output: Graphviz dot and GraphML.

:func:`write_dot` and :func:`write_graphml` reproduce what resource-query's
``-g dot|graphml -o <basename>`` writes at the end of a session, i.e. Boost's
``write_graphviz`` / ``write_graphml`` applied to Fluxion's resource graph:

* vertices are numbered 0..n-1 in storage order (Boost ``vecS`` indices),
  edges are listed source by source, each source's out-edges in insertion
  order;
* dot: ``digraph G {``, ``<i>[label="<name>"];`` per vertex,
  ``<i>-><j> [label="<dominant subsystem>"];`` per edge, ``}``.  Fluxion's
  edge label writer prints the dominant subsystem's name for every edge of a
  graph whose edges each belong to one subsystem, and Boost does not escape
  labels;
* GraphML: Boost's key table in ``dynamic_properties`` (alphabetical)
  order -- basename, id, member_of (node), member_of (edge), name, paths,
  props, size, type, uniq_id, unit -- with Fluxion's flattened
  ``{k=v,...}`` strings for paths/props/member_of (edges' member_of keeps
  Fluxion's leading comma: ``{,containment=containment}``) and Boost's XML
  entity escaping.

:func:`write_graphml_clean` is a separate, tool-friendly GraphML document:
typed keys, one key per subsystem path and per property name, edge
``subsystem``/``relation`` keys, node ids ``n<uniq_id>``; networkx's
``read_graphml`` and Gephi read it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fluxlite.graph import STATUS_NAMES
from fluxlite.writers.jgf import subsystem_order


def _xml_escape(s: str, extra: dict[str, str] | None = None) -> str:
    """XML character data escape (``&``, ``<``, ``>`` and the ``extra`` replacements)."""
    s = s.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")
    for k, v in (extra or {}).items():
        s = s.replace(k, v)
    return s


if TYPE_CHECKING:
    from fluxlite.graph import ResourceGraph

__all__ = ["write_dot", "write_graphml", "write_graphml_clean"]

_GRAPHML_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n'
    '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
    'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
    'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
    'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
)


def _layout(g: ResourceGraph) -> tuple[list[int], dict[int, int], list[int]]:
    """Live vertices in storage order, their Boost indices, and edges in Boost order."""
    vids = list(g.vertices())
    index = {v: i for i, v in enumerate(vids)}
    src = g.e_src
    eids = sorted(g.edges(), key=lambda e: (index[src[e]], e))
    return vids, index, eids


def write_dot(g: ResourceGraph, subsystem: str = "containment") -> str:
    """Graphviz text as resource-query's ``write_to_graphviz`` writes it.

    ``subsystem`` is the matcher's dominant subsystem (the edge label).
    """
    vids, index, eids = _layout(g)
    name = g.v_name
    out = ["digraph G {\n"]
    out.extend(f'{i}[label="{name[v]}"];\n' for i, v in enumerate(vids))
    src, dst = g.e_src, g.e_dst
    label = f' [label="{subsystem}"];\n'
    out.extend(f"{index[src[e]]}->{index[dst[e]]}{label}" for e in eids)
    out.append("}\n")
    return "".join(out)


def _entities(s: str) -> str:
    """Boost property_tree's ``encode_char_entities``."""
    if not s:
        return s
    if s.strip(" ") == "":
        return "&#32;" + " " * (len(s) - 1)
    return (
        s.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def write_graphml(g: ResourceGraph) -> str:
    """GraphML text as resource-query's ``write_to_graphml`` writes it (Boost ``write_graphml``)."""
    vids, index, eids = _layout(g)
    order = subsystem_order(g)
    keys = [
        ("key0", "node", "basename", "string"),
        ("key1", "node", "id", "long"),
        ("key2", "node", "member_of", "string"),
        ("key3", "edge", "member_of", "string"),
        ("key4", "node", "name", "string"),
        ("key5", "node", "paths", "string"),
        ("key6", "node", "props", "string"),
        ("key7", "node", "size", "int"),
        ("key8", "node", "type", "string"),
        ("key9", "node", "uniq_id", "long"),
        ("key10", "node", "unit", "string"),
    ]
    out = [_GRAPHML_HEAD]
    out.extend(f'  <key id="{k}" for="{f}" attr.name="{n}" attr.type="{t}" />\n' for k, f, n, t in keys)
    out.append(
        '  <graph id="G" edgedefault="directed" parse.nodeids="canonical" '
        'parse.edgeids="canonical" parse.order="nodesfirst">\n'
    )
    paths = g.paths
    for i, v in enumerate(vids):
        mine = [(ss, paths[ss][v]) for ss in order if v in paths[ss]]
        member = "{" + ",".join(f"{ss}={ss}" for ss, _ in mine) + "}"
        flat_paths = "{" + ",".join(f"{ss}={p}" for ss, p in mine) + "}"
        props = g.v_props.get(v) or {}
        flat_props = "{" + ",".join(f"{k}={props[k]}" for k in sorted(props)) + "}"
        values = (
            ("key0", g.v_basename[v]),
            ("key1", str(g.v_id[v])),
            ("key2", member),
            ("key4", g.v_name[v]),
            ("key5", flat_paths),
            ("key6", flat_props),
            ("key7", str(g.v_size[v])),
            ("key8", g.v_type[v]),
            ("key9", str(g.v_uniq[v])),
            ("key10", g.v_unit[v]),
        )
        out.append(f'    <node id="n{i}">\n')
        out.extend(f'      <data key="{k}">{_entities(val)}</data>\n' for k, val in values)
        out.append("    </node>\n")
    src, dst, ess = g.e_src, g.e_dst, g.e_ss
    for n, e in enumerate(eids):
        out.append(f'    <edge id="e{n}" source="n{index[src[e]]}" target="n{index[dst[e]]}">\n')
        out.append(f'      <data key="key3">{_entities("{," + ess[e] + "=" + ess[e] + "}")}</data>\n')
        out.append("    </edge>\n")
    out.append("  </graph>\n</graphml>\n")
    return "".join(out)


def _attr(s: str) -> str:
    return _xml_escape(s, {'"': "&quot;"})


def write_graphml_clean(g: ResourceGraph) -> str:
    """A GraphML document with typed, one-value-per-key attributes for general graph tools.

    Node keys: ``type``, ``basename``, ``name`` (string), ``id``,
    ``uniq_id``, ``rank``, ``size`` (long), ``unit``, ``status`` (string),
    ``path.<subsystem>`` per subsystem and ``property.<name>`` per property
    name seen.  Edge keys: ``subsystem`` and ``relation``.  Node ids are
    ``n<uniq_id>``; absent values are simply omitted.
    """
    vids, _, eids = _layout(g)
    order = subsystem_order(g)
    prop_names = sorted({k for v in vids for k in g.v_props.get(v, ())})
    node_keys = [
        ("type", "string"),
        ("basename", "string"),
        ("name", "string"),
        ("id", "long"),
        ("uniq_id", "long"),
        ("rank", "long"),
        ("size", "long"),
        ("unit", "string"),
        ("status", "string"),
    ]
    node_keys += [(f"path.{ss}", "string") for ss in order]
    node_keys += [(f"property.{p}", "string") for p in prop_names]
    kid = {name: f"d{i}" for i, (name, _) in enumerate(node_keys)}
    out = [_GRAPHML_HEAD]
    out.extend(
        f'  <key id="{kid[n]}" for="node" attr.name="{_attr(n)}" attr.type="{t}"/>\n' for n, t in node_keys
    )
    out.append('  <key id="e0" for="edge" attr.name="subsystem" attr.type="string"/>\n')
    out.append('  <key id="e1" for="edge" attr.name="relation" attr.type="string"/>\n')
    out.append('  <graph id="G" edgedefault="directed">\n')
    paths = g.paths
    uniq = g.v_uniq
    for v in vids:
        out.append(f'    <node id="n{uniq[v]}">\n')
        vals: list[tuple[str, object]] = [
            ("type", g.v_type[v]),
            ("basename", g.v_basename[v]),
            ("name", g.v_name[v]),
            ("id", g.v_id[v]),
            ("uniq_id", uniq[v]),
            ("rank", g.v_rank[v]),
            ("size", g.v_size[v]),
            ("unit", g.v_unit[v]),
            ("status", STATUS_NAMES.get(g.v_status[v], "unknown")),
        ]
        vals += [(f"path.{ss}", paths[ss][v]) for ss in order if v in paths[ss]]
        props = g.v_props.get(v) or {}
        vals += [(f"property.{k}", props[k]) for k in sorted(props)]
        for k, val in vals:
            if val == "":
                continue
            out.append(f'      <data key="{kid[k]}">{_xml_escape(str(val))}</data>\n')
        out.append("    </node>\n")
    src, dst = g.e_src, g.e_dst
    for e in eids:
        out.append(f'    <edge source="n{uniq[src[e]]}" target="n{uniq[dst[e]]}">\n')
        out.append(f'      <data key="e0">{_xml_escape(g.e_ss[e])}</data>\n')
        out.append(f'      <data key="e1">{_xml_escape(g.e_rel[e])}</data>\n')
        out.append("    </edge>\n")
    out.append("  </graph>\n</graphml>\n")
    return "".join(out)
