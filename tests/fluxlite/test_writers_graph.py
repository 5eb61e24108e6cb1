"""Whole-graph output: Boost-style dot and GraphML as resource-query writes them, and clean GraphML."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from fluxlite.graph import ResourceGraph
from fluxlite.writers import write_dot, write_graphml, write_graphml_clean

NS = {"g": "http://graphml.graphdrawing.org/xmlns"}


def tiny() -> ResourceGraph:
    """tiny0 -> rack0 -> node0 (+ a power edge) with a property on node0."""
    g = ResourceGraph()
    c = g.add_vertex("cluster", "tiny", "tiny0", 0, uniq_id=0, paths={"containment": "/tiny0"})
    r = g.add_vertex("rack", "rack", "rack0", 0, uniq_id=1, paths={"containment": "/tiny0/rack0"})
    n = g.add_vertex(
        "node",
        "node",
        "node0",
        0,
        uniq_id=2,
        rank=0,
        properties={"arch": "x86"},
        paths={"containment": "/tiny0/rack0/node0"},
    )
    g.add_edge(c, r)
    g.add_edge(r, n)
    g.add_edge(c, n, "power", "supplies_to")
    return g


def test_dot_exact_text() -> None:
    """Boost write_graphviz: vertex labels by index, every edge labelled with the dominant subsystem."""
    assert write_dot(tiny()) == (
        "digraph G {\n"
        '0[label="tiny0"];\n'
        '1[label="rack0"];\n'
        '2[label="node0"];\n'
        '0->1 [label="containment"];\n'
        '0->2 [label="containment"];\n'
        '1->2 [label="containment"];\n'
        "}\n"
    )


def test_dot_renumbers_after_removal() -> None:
    """Indices are positions among live vertices, as Boost vecS renumbers after removal."""
    g = tiny()
    g.remove_vertices([1])
    assert write_dot(g, "power") == (
        'digraph G {\n0[label="tiny0"];\n1[label="node0"];\n0->1 [label="power"];\n}\n'
    )


def test_graphml_boost_layout() -> None:
    """Boost write_graphml: alphabetical key table, Fluxion's flattened strings, edge member_of quirk."""
    text = write_graphml(tiny())
    assert text.startswith(
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns" '
        'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        'xsi:schemaLocation="http://graphml.graphdrawing.org/xmlns '
        'http://graphml.graphdrawing.org/xmlns/1.0/graphml.xsd">\n'
        '  <key id="key0" for="node" attr.name="basename" attr.type="string" />\n'
        '  <key id="key1" for="node" attr.name="id" attr.type="long" />\n'
        '  <key id="key2" for="node" attr.name="member_of" attr.type="string" />\n'
        '  <key id="key3" for="edge" attr.name="member_of" attr.type="string" />\n'
        '  <key id="key4" for="node" attr.name="name" attr.type="string" />\n'
        '  <key id="key5" for="node" attr.name="paths" attr.type="string" />\n'
        '  <key id="key6" for="node" attr.name="props" attr.type="string" />\n'
        '  <key id="key7" for="node" attr.name="size" attr.type="int" />\n'
        '  <key id="key8" for="node" attr.name="type" attr.type="string" />\n'
        '  <key id="key9" for="node" attr.name="uniq_id" attr.type="long" />\n'
        '  <key id="key10" for="node" attr.name="unit" attr.type="string" />\n'
        '  <graph id="G" edgedefault="directed" parse.nodeids="canonical" parse.edgeids="canonical" '
        'parse.order="nodesfirst">\n'
    )
    assert (
        '    <node id="n2">\n'
        '      <data key="key0">node</data>\n'
        '      <data key="key1">0</data>\n'
        '      <data key="key2">{containment=containment}</data>\n'
        '      <data key="key4">node0</data>\n'
        '      <data key="key5">{containment=/tiny0/rack0/node0}</data>\n'
        '      <data key="key6">{arch=x86}</data>\n'
        '      <data key="key7">1</data>\n'
        '      <data key="key8">node</data>\n'
        '      <data key="key9">2</data>\n'
        '      <data key="key10"></data>\n'
        "    </node>\n"
    ) in text
    assert text.endswith(
        '    <edge id="e2" source="n1" target="n2">\n'
        '      <data key="key3">{,containment=containment}</data>\n'
        "    </edge>\n"
        "  </graph>\n"
        "</graphml>\n"
    )
    assert '<edge id="e1" source="n0" target="n2">\n      <data key="key3">{,power=power}</data>' in text


def test_graphml_entity_escaping() -> None:
    """Values use property_tree's entity encoding, including the all-spaces rule."""
    g = ResourceGraph()
    g.add_vertex("node", "n<&>", "a\"b'c", 0, unit="  ")
    text = write_graphml(g)
    assert '<data key="key0">n&lt;&amp;&gt;</data>' in text
    assert '<data key="key4">a&quot;b&apos;c</data>' in text
    assert '<data key="key10">&#32; </data>' in text


def read_clean(text: str) -> tuple[dict[str, dict[str, object]], list[dict[str, str]]]:
    """A minimal GraphML reader honouring key types, as graph tools do."""
    root = ET.fromstring(text)
    keys = {k.get("id"): (k.get("attr.name"), k.get("attr.type")) for k in root.findall("g:key", NS)}
    conv = {"string": str, "long": int, "int": int}
    nodes: dict[str, dict[str, object]] = {}
    for n in root.findall("g:graph/g:node", NS):
        attrs: dict[str, object] = {}
        for d in n.findall("g:data", NS):
            name, typ = keys[d.get("key")]
            attrs[name] = conv[typ](d.text or "")
        nodes[n.get("id") or ""] = attrs
    edges = []
    for e in root.findall("g:graph/g:edge", NS):
        attrs2 = {keys[d.get("key")][0]: d.text or "" for d in e.findall("g:data", NS)}
        edges.append({"source": e.get("source") or "", "target": e.get("target") or "", **attrs2})
    return nodes, edges


def test_clean_graphml_round_trips_attributes() -> None:
    """Clean GraphML parses as XML and carries typed, per-key attributes."""
    g = tiny()
    g.set_property(0, "note", "a<b & c")
    nodes, edges = read_clean(write_graphml_clean(g))
    assert nodes["n2"] == {
        "type": "node",
        "basename": "node",
        "name": "node0",
        "id": 0,
        "uniq_id": 2,
        "rank": 0,
        "size": 1,
        "status": "up",
        "path.containment": "/tiny0/rack0/node0",
        "property.arch": "x86",
    }
    assert nodes["n0"]["property.note"] == "a<b & c"
    assert {"source": "n0", "target": "n2", "subsystem": "power", "relation": "supplies_to"} in edges
    assert len(edges) == 3
