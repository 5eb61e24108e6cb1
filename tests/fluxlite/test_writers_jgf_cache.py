"""The JGF writer's per-graph text cache never prints what the graph no longer says.

Every test writes some vertices (filling ``g.jgf_vcache`` / ``g.jgf_ecache``), changes the
graph through the store, writes again and compares with the text of the same writer after
both caches were emptied (what the writer printed before it had a cache).
"""

from __future__ import annotations

from fluxlite.graph import FluxionIds, ResourceGraph
from fluxlite.writers import JgfWriter, Rv1Writer
from fluxlite.writers.jgf import vertex_json


def small() -> ResourceGraph:
    g = ResourceGraph()
    c = g.add_vertex("cluster", "c", "c0", 0, paths={"containment": "/c0"})
    g.set_root("containment", c)
    for n in range(2):
        v = g.add_vertex("node", "node", f"node{n}", n, rank=n, paths={"containment": f"/c0/node{n}"})
        g.add_edge(c, v)
        for k in range(2):
            core = g.add_vertex(
                "core", "core", f"core{k}", k, rank=n, paths={"containment": f"/c0/node{n}/core{k}"}
            )
            g.add_edge(v, core)
    return g


def write_all(g: ResourceGraph, *, cold: bool = False, needs: int = 1, excl: bool = True) -> str:
    if cold:
        g.jgf_vcache.clear()
        g.jgf_ecache.clear()
    w = JgfWriter()
    for v in g.vertices():
        w.emit_vtx("", g, v, needs, None, excl)
    for e in g.edges():
        w.emit_edg("", g, e)
    return w.emit()


def test_cache_fills_and_repeats_the_same_text() -> None:
    g = small()
    first = write_all(g)
    assert len(g.jgf_vcache) == len(g) and len(g.jgf_ecache) == g.num_edges
    assert write_all(g) == first == write_all(g, cold=True)
    for needs, excl in ((1, False), (3, True), (3, False)):
        assert write_all(g, needs=needs, excl=excl) == write_all(g, cold=True, needs=needs, excl=excl)


def test_set_property_and_set_path_are_seen() -> None:
    g = small()
    old = write_all(g)
    node = g.vertex_by_path("/c0/node1")
    g.set_property(node, "fast", "")
    g.set_path(node, "power", "/pdu0/node1")
    new = write_all(g)
    assert new != old and '"properties": {"fast": ""}' in new and "/pdu0/node1" in new
    assert new == write_all(g, cold=True)


def test_removed_vertices_and_reused_handles_are_seen() -> None:
    g = small()
    write_all(g)
    node = g.vertex_by_path("/c0/node1")
    gone = g.subtree(node)
    g.remove_vertices(gone)
    c = g.vertex_by_path("/c0")
    n2 = g.add_vertex("node", "node", "node7", 7, rank=7, paths={"containment": "/c0/node7"})
    assert n2 in gone  # rustworkx reuses the handle
    g.add_edge(c, n2)
    text = write_all(g)
    assert "node7" in text and "/c0/node1" not in text
    assert text == write_all(g, cold=True)


def test_new_fluxion_ids_are_seen() -> None:
    g = small()
    before = write_all(g)
    g.fluxion_ids = FluxionIds([6, 5, 4, 3, 2, 1, 0])
    after = write_all(g)
    assert after != before and after == write_all(g, cold=True)
    assert '"rank": -1' in after  # cores below a node: Fluxion's reader rank
    # the store's own ids (subgraph documents) are never taken from the Fluxion-id cache
    assert vertex_json(g, 0, 1, None, True, fluxion=False).startswith('{"id": "0"')
    assert vertex_json(g, 0, 1, None, True).startswith('{"id": "6"')


def test_rv1_scheduling_uses_the_same_text() -> None:
    g = small()
    write_all(g)
    g.set_property(g.vertex_by_path("/c0/node0"), "gpu", "a100")

    def rv1() -> str:
        w = Rv1Writer()
        for v in g.vertices():
            w.emit_vtx("", g, v, 1, None, True)
        for e in g.edges():
            w.emit_edg("", g, e)
        w.emit_tm(0, 10)
        return w.emit()

    warm = rv1()
    g.jgf_vcache.clear()
    g.jgf_ecache.clear()
    assert warm == rv1() and '"gpu": "a100"' in warm


def test_grow_reports_the_counts_of_its_jgf() -> None:
    """``Engine.grow`` in jgf / jgf_shorthand says how many nodes and edges its text has (what an
    instance answers with, so that it need not parse the text again)."""
    import orjson

    from fluxlite.api import Engine
    from fluxlite.jobspec import parse_jobspec
    from fluxlite.readers.generate import generate_graph

    def spec(n: int) -> object:
        return parse_jobspec(
            f"version: 1\nresources: [{{type: node, count: {n}, with: [{{type: slot, count: 1, label: s, "
            "with: [{type: socket, count: 1, with: [{type: core, count: 2}]}]}]}]\nattributes: {system: {duration: 3600}}\n"
            "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
        )

    eng = Engine(generate_graph(nodes=6, sockets=1, cores=2), policy="first")
    job = eng.allocate(spec(1), fmt="jgf").jobid
    for fmt, n in (("jgf", 2), ("jgf_shorthand", 1), ("jgf", 1)):
        r = eng.grow(job, spec(n), fmt=fmt)
        doc = orjson.loads(r.text)["graph"]
        assert r.counts == (len(doc["nodes"]), len(doc["edges"]))
    assert eng.grow(job, spec(1), fmt="simple").counts is None
