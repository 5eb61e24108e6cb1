"""What the JGF/RV1 writers say about GRUG-loaded vertices: Fluxion's uniq ids, ranks and units.

Derived from Fluxion's GRUG reader (``resource_reader_grug.cpp``): ``tree_edge``
generates, for one recipe edge at a time, every child of every instance of
the source pool (so ids run level by level within the recipe's DFS);
``emit_vertex`` gives a ``node`` the next rank and every other vertex the
reader's rank (-1 in resource-query) and copies the pool's unit, which the
JGF writer writes when it is not empty (``emit_vtx_base``).  The reader's own
order (each node's subtree contiguous) and ranks are unchanged; the match
still picks the same vertices.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from fluxlite.api import Engine
from fluxlite.readers import load_graph
from tests.conftest import RESOURCE, need
from tests.fluxlite.repl_helpers import Session, write_jobspec

TINY = RESOURCE / "grugs" / "tiny.graphml"

# tiny.graphml: cluster[1] -> rack[1] -> node[2] -> socket[2] -> core[18] (id_scope 1: 0..35 per
# node), gpu[1] (0..1 per node), memory[4] (0..7 per node, unit GB, size 2); edges in that order.
_PATH = re.compile(r"^/tiny0(?:/rack0(?:/node(\d)(?:/socket(\d)(?:/(core|gpu|memory)(\d+))?)?)?)?$")


def fluxion_uniq(path: str) -> int:
    """Fluxion's uniq id of a tiny.graphml vertex: generation order, one recipe edge at a time."""
    m = _PATH.match(path)
    assert m, path
    node, socket, kind, idx = m.groups()
    if node is None:
        return 0 if path == "/tiny0" else 1
    if socket is None:
        return 2 + int(node)
    k = 2 * int(node) + int(socket)  # socket instance, in generation order
    if kind is None:
        return 4 + k
    if kind == "core":
        return 8 + 18 * k + int(idx) % 18
    if kind == "gpu":
        return 8 + 72 + k
    return 8 + 72 + 4 + 4 * k + int(idx) % 4


def fluxion_rank(path: str, rtype: str) -> int:
    m = _PATH.match(path)
    assert m
    return int(m.group(1)) if rtype == "node" else -1


def whole_node(tmp: Path) -> Path:
    return write_jobspec(
        tmp / "node.yaml",
        "  - type: node\n    count: 1\n    exclusive: true\n    with:\n"
        "      - type: slot\n        count: 1\n        label: default\n        with:\n"
        "          - type: socket\n            count: 2\n",
    )


def nodes_of(text: str) -> list[dict]:
    doc = json.loads(text)
    graph = doc["scheduling"]["graph"] if "scheduling" in doc else doc["graph"]
    return graph["nodes"], graph["edges"]


def test_jgf_writes_fluxion_ids_ranks_and_units(tmp_path: Path) -> None:
    need(TINY)
    eng = Engine.from_file(str(TINY))
    js = whole_node(tmp_path)
    for fmt in ("jgf", "rv1"):
        for _ in range(2):  # both nodes: one per match
            r = eng.match(load_js(js), op="allocate", fmt=fmt)
            assert r.ok
            nodes, edges = nodes_of(r.text)
            assert len(nodes) == 1 + 1 + 1 + 2 + 36 + 2 + 8  # cluster, rack, node and its subtree
            for n in nodes:
                md = n["metadata"]
                path = md["paths"]["containment"]
                assert int(n["id"]) == fluxion_uniq(path), path
                assert md["rank"] == fluxion_rank(path, md["type"]), path
                assert md.get("unit") == ("GB" if md["type"] == "memory" else None), path
            by_path = {n["metadata"]["paths"]["containment"]: n["id"] for n in nodes}
            for e in edges:  # edges name the same ids
                src = next(p for p, i in by_path.items() if i == e["source"])
                dst = next(p for p, i in by_path.items() if i == e["target"])
                assert dst.rsplit("/", 1)[0] == src
        for j in list(eng.jobs):
            eng.remove_job(j)


def load_js(path: Path) -> object:
    from fluxlite.jobspec import load_jobspec

    return load_jobspec(str(path))


def test_store_order_and_ranks_are_unchanged() -> None:
    """The store keeps its depth-first order and per-node ranks (the matcher and rank commands use them)."""
    g = load_graph(need(TINY))
    order = [g.v_name[v] for v in g.vertices()][:6]
    assert order == ["tiny0", "rack0", "node0", "socket0", "core0", "core1"]
    core = g.vertex_by_path("/tiny0/rack0/node1/socket1/core18")
    assert g.v_rank[core] == 1
    fids = g.fluxion_ids
    assert fids is not None
    assert sorted(fids.uniq_of(g.v_uniq[v]) for v in g.vertices()) == list(range(len(g)))
    assert fids.uniq_of(g.v_uniq[core]) == fluxion_uniq("/tiny0/rack0/node1/socket1/core18")
    assert fids.uniq_of(10**6) == 10**6  # vertices added later keep their own


def test_writer_output_reads_back(tmp_path: Path) -> None:
    """A match's JGF (rank -1 below the node, unit GB) is accepted by ``update``, which finds vertices
    by path and rank as Fluxion does (the ranks Fluxion's reader gave them)."""
    need(TINY)
    eng = Engine.from_file(str(TINY))
    s = Session(eng, match_format="jgf")
    out, _so, err = s.run(f"match allocate {whole_node(tmp_path)}")
    assert "RESOURCES=ALLOCATED" in out, err
    r_file = tmp_path / "r.json"
    r_file.write_text(out.split("INFO:")[0])
    cores = [n for n in nodes_of(r_file.read_text())[0] if n["metadata"]["type"] == "core"]
    assert len(cores) == 36 and {n["metadata"]["rank"] for n in cores} == {-1}
    before = sorted(eng.jobs)
    out, _so, err = s.run("cancel 1")
    assert err == ""
    out, _so, err = s.run(f"update allocate jgf {r_file} 2 0 3600")
    assert err == "" and "RESOURCES=ALLOCATED" in out, err
    assert before == [1] and sorted(eng.jobs) == [2]
    # the same vertices again: all taken by job 2
    out, _so, err = s.run(f"update allocate jgf {r_file} 3 0 3600")
    assert "RESOURCES=ALLOCATED" not in out and 3 not in eng.jobs
