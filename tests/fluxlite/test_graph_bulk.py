"""Bulk building (add_vertices_bulk / add_edges_bulk) equals adding one vertex and one edge at a time."""

from __future__ import annotations

import random
from typing import Any

import pytest

from fluxlite.graph import ResourceGraph
from fluxlite.readers.generate import generate_graph


def state(g: ResourceGraph) -> dict[str, Any]:
    return {
        "cols": [
            g.v_type,
            g.v_basename,
            g.v_name,
            g.v_id,
            g.v_uniq,
            g.v_rank,
            g.v_size,
            g.v_unit,
            g.v_status,
        ],
        "props": sorted(g.v_props.items()),
        "paths": sorted((ss, sorted(col.items())) for ss, col in g.paths.items()),
        "by_path": sorted(g.by_path.items()),
        "by_rank": sorted((r, list(v)) for r, v in g.by_rank.items()),
        "edges": [g.e_src, g.e_dst, g.e_ss, g.e_rel, g.e_seq],
        # (the order in which subsystems appear differs: bulk adds declare them with the vertices)
        "out": sorted((ss, [list(x) for x in col]) for ss, col in g.out.items()),
        "parent": sorted(g.parent_edge.items()),
        # every node's payload is its handle (bulk adds into holes label them in bulk)
        "rx": (sorted((v, g.rx[v]) for v in g.rx.node_indices()), sorted(g.rx.weighted_edge_list())),
        "uniq": g.next_uniq_id(),
    }


def batch(rng: random.Random, start: int, n: int, subsystems: list[str]) -> list[dict[str, Any]]:
    rows = []
    rank = rng.randrange(4)
    for k in range(n):
        if rng.random() < 0.3:
            rank = rng.randrange(-1, 4)
        rows.append(
            {
                "type": rng.choice(["node", "core", "gpu"]),
                "name": f"v{start + k}",
                "id": k,
                "rank": rank,
                "size": rng.randrange(1, 4),
                "paths": {
                    ss: f"/{ss}/{start + k}" for ss in subsystems if rng.random() < 0.8 or ss == "containment"
                },
                "properties": {"p": str(k)} if rng.random() < 0.2 else None,
            }
        )
    return rows


def edge_batch(
    rng: random.Random, live: list[int], m: int, subsystems: list[str]
) -> list[tuple[int, int, str]]:
    out = []
    src = rng.choice(live)
    for _ in range(m):
        if rng.random() < 0.3:
            src = rng.choice(live)  # runs of one source, as readers produce them
        out.append((src, rng.choice(live), rng.choice(subsystems)))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_bulk_equals_one_at_a_time(seed: int) -> None:
    rng = random.Random(seed)
    subsystems = ["containment"] if seed % 2 else ["containment", "power"]
    one, bulk = ResourceGraph(), ResourceGraph()
    start = 0
    for step in range(4):
        rows = batch(rng, start, rng.randrange(1, 30), subsystems)
        start += len(rows)
        for r in rows:
            one.add_vertex(
                r["type"], r["type"], r["name"], r["id"], rank=r["rank"], size=r["size"],
                properties=r["properties"], paths=r["paths"],
            )  # fmt: skip
        paths = {ss: [r["paths"].get(ss) for r in rows] for ss in subsystems}
        bulk.add_vertices_bulk(
            [r["type"] for r in rows], [r["type"] for r in rows], [r["name"] for r in rows],
            [r["id"] for r in rows], [r["rank"] for r in rows], [r["size"] for r in rows], [""] * len(rows),
            paths=paths, properties={k: r["properties"] for k, r in enumerate(rows) if r["properties"]},
        )  # fmt: skip
        live = sorted(one.rx.node_indices())
        edges = edge_batch(rng, live, rng.randrange(1, 40), subsystems)
        if step % 2:  # one subsystem for the whole batch
            edges = [(s, d, subsystems[0]) for s, d, _ in edges]
        for s, d, ss in edges:
            one.add_edge(s, d, ss)
        bulk.add_edges_bulk([e[0] for e in edges], [e[1] for e in edges], [e[2] for e in edges], "contains")
        if step == 1:  # holes: later additions reuse handles
            dead = rng.sample(live, 3)
            one.remove_vertices(dead)
            bulk.remove_vertices(dead)
        assert state(bulk) == state(one)


@pytest.mark.parametrize("seed", range(6))
def test_tree_edges_in_bulk_equal_one_at_a_time(seed: int) -> None:
    """Edges of attached subtrees (distinct targets without a parent), sources in runs, after holes."""
    rng = random.Random(seed)
    one, bulk = ResourceGraph(), ResourceGraph()
    start = 0
    for step in range(4):
        rows = batch(rng, start, rng.randrange(2, 30), ["containment"])
        start += len(rows)
        for g in (one, bulk):
            before = set(g.rx.node_indices())
            for r in rows:
                g.add_vertex(r["type"], r["type"], r["name"], r["id"], rank=r["rank"], paths=r["paths"])
        new = sorted(set(one.rx.node_indices()) - before)
        live = sorted(one.rx.node_indices())
        # each new vertex gets one parent among the vertices before it (runs of one source), a few stay roots
        edges = []
        src = rng.choice(live)
        for d in new:
            if rng.random() < 0.1:
                continue
            if rng.random() < 0.3 or src == d:
                src = rng.choice([v for v in live if v != d])
            edges.append((src, d))
        if not edges:
            continue
        for s, d in edges:
            one.add_edge(s, d)
        bulk.add_edges_bulk([e[0] for e in edges], [e[1] for e in edges])
        if step == 1:
            dead = rng.sample(new, min(3, len(new)))
            one.remove_vertices(dead)
            bulk.remove_vertices(dead)
        assert state(bulk) == state(one)


def tree_edges(
    rng: random.Random, one: ResourceGraph, bulk: ResourceGraph, vids: list[int], subsystems: list[str]
) -> None:
    """Each of ``vids`` but the first gets a parent among those before it, in every subsystem."""
    pairs = [(vids[rng.randrange(k)], vids[k]) for k in range(1, len(vids))]
    for ss in subsystems:
        for s, d in pairs:
            one.add_edge(s, d, ss)
        bulk.add_edges_bulk([p[0] for p in pairs], [p[1] for p in pairs], ss)


def add_rows(one: ResourceGraph, bulk: ResourceGraph, rows: list[dict[str, Any]], subsystems: list[str]) -> list[int]:
    """``rows`` one at a time into ``one`` and in bulk into ``bulk``; the bulk handles."""
    for r in rows:
        one.add_vertex(
            r["type"], r["type"], r["name"], r["id"], rank=r["rank"], size=r["size"],
            properties=r["properties"], paths=r["paths"],
        )  # fmt: skip
    return bulk.add_vertices_bulk(
        [r["type"] for r in rows], [r["type"] for r in rows], [r["name"] for r in rows],
        [r["id"] for r in rows], [r["rank"] for r in rows], [r["size"] for r in rows], [""] * len(rows),
        paths={ss: [r["paths"].get(ss) for r in rows] for ss in subsystems},
        properties={k: r["properties"] for k, r in enumerate(rows) if r["properties"]},
    )  # fmt: skip


@pytest.mark.parametrize("seed", range(6))
def test_bulk_into_a_removed_block_equals_one_at_a_time(seed: int) -> None:
    """A batch that exactly refills the handles of a removed block (a shrunk subgraph's), in any removal order."""
    rng = random.Random(seed)
    subsystems = ["containment", "power"] if seed % 2 else ["containment"]
    one, bulk = ResourceGraph(), ResourceGraph()
    start = 0
    for step in range(5):
        n = rng.randrange(2, 25)
        vids = add_rows(one, bulk, batch(rng, start, n, subsystems), subsystems)
        start += n
        if step:
            assert sorted(vids) == list(range(min(vids), min(vids) + n))
        tree_edges(rng, one, bulk, vids, subsystems)
        assert state(bulk) == state(one)
        # remove the block again in a random order, or last handle first (as a removed subtree usually
        # goes: rustworkx then hands the holes back in order); the next batch of the same size refills it
        dead = list(vids)
        rng.shuffle(dead)
        in_order = step % 2 == 1
        if in_order:
            dead.sort(reverse=True)
        one.remove_vertices(dead)
        bulk.remove_vertices(dead)
        assert state(bulk) == state(one)
        got = add_rows(one, bulk, batch(rng, start, n, subsystems), subsystems)
        start += n
        assert sorted(got) == sorted(vids)  # the holes (in the order rustworkx hands them back)
        if in_order:
            assert got == sorted(vids)
        tree_edges(rng, one, bulk, got, subsystems)  # their edges refill the removed edges' handles
        assert state(bulk) == state(one)


def test_removal_keeps_each_ranks_vertices_in_creation_order() -> None:
    """``by_rank`` after removals is what is left of each rank's list, in order; empty ranks go."""
    g = generate_graph(nodes=6, sockets=2, cores=3)
    before = {r: list(v) for r, v in g.by_rank.items()}
    doomed = g.subtree(g.vertex_by_path("/cluster0/node2")) + g.subtree(g.vertex_by_path("/cluster0/node4/socket1"))
    g.remove_vertices(doomed)
    dead = set(doomed)
    want = {r: [v for v in vs if v not in dead] for r, vs in before.items()}
    assert g.by_rank == {r: vs for r, vs in want.items() if vs}
    assert 2 in before and 2 not in g.by_rank  # node2's rank had nothing else
    assert not any(map(g.is_live, doomed)) and all(g.rx[v] == v for v in g.rx.node_indices())


def test_the_run_linker_refuses_without_writing() -> None:
    """``_link_one_subsystem`` (add_edges_bulk's fast path for a subtree's edges) refuses a batch whose
    target repeats, or already has a parent edge, and leaves the columns as they were; the bulk add
    then links edge by edge, as one at a time does."""
    g = generate_graph(nodes=2, sockets=1, cores=2)
    free = [g.add_vertex("core", "core", f"x{k}", k) for k in range(4)]
    parent = g.parent_edge["containment"]
    out = g.out["containment"]
    node = g.vertex_by_path("/cluster0/node0")
    core = g.vertex_by_path("/cluster0/node0/socket0/core0")  # has a parent edge
    for targets in ([free[0], free[1], free[0]], [free[2], free[3], core]):
        before = (list(parent), [list(x) for x in out])
        assert not g._link_one_subsystem([900, 901, 902], [node] * 3, targets, "containment")
        assert (list(parent), [list(x) for x in out]) == before
    assert g._link_one_subsystem([900, 901], [node, free[0]], [free[1], free[2]], "containment")
    assert parent[free[1]] == 900 and parent[free[2]] == 901 and out[free[0]] == [901] and out[node][-1] == 900


@pytest.mark.parametrize("seed", range(4))
def test_paths_the_caller_vouches_for_are_indexed_as_checked_ones(seed: int) -> None:
    """``fresh_paths=True`` (distinct paths, none indexed: attach_columns checked) skips only the check."""
    rng = random.Random(seed)
    subsystems = ["containment"]
    checked, vouched = ResourceGraph(), ResourceGraph()
    start = 0
    for step in range(4):
        rows = batch(rng, start, rng.randrange(1, 30), subsystems)
        start += len(rows)
        for g, fresh in ((checked, False), (vouched, True)):
            g.add_vertices_bulk(
                [r["type"] for r in rows], [r["type"] for r in rows], [r["name"] for r in rows],
                [r["id"] for r in rows], [r["rank"] for r in rows], [r["size"] for r in rows], [""] * len(rows),
                paths={"containment": [r["paths"]["containment"] for r in rows]}, shared_paths=True,
                fresh_paths=fresh,
            )  # fmt: skip
        if step == 1:  # holes: the next batch refills handles
            dead = rng.sample(sorted(checked.rx.node_indices()), 3)
            checked.remove_vertices(dead)
            vouched.remove_vertices(dead)
        assert state(vouched) == state(checked)


@pytest.mark.parametrize("seed", range(6))
def test_bulk_string_columns_are_the_interned_values(seed: int) -> None:
    """add_vertices_bulk's string columns: basenames equal to the types (taken as the types' interned
    column), basenames that differ in one entry, one-value columns, equal strings that are not the
    same object: each entry is the graph's interned copy of the value given."""
    rng = random.Random(seed)
    g = ResourceGraph()
    for step in range(6):
        n = rng.randrange(1, 40)
        types = [rng.choice(["node", "core", "gpu"]) for _ in range(n)]
        if step % 3 == 0:
            types = [types[0]] * n  # one value
        types = ["".join(list(t)) if rng.random() < 0.5 else t for t in types]  # equal, not identical
        if step % 2:
            bases = ["".join(list(t)) for t in types]
        else:
            bases = list(types)
            bases[rng.randrange(n)] = "other"
        units = [rng.choice(["", "GB"])] * n if rng.random() < 0.5 else [rng.choice(["", "GB"]) for _ in range(n)]
        start = len(g.v_type)
        g.add_vertices_bulk(
            types, bases, [f"v{start + k}" for k in range(n)], list(range(n)), [0] * n, [1] * n, units,
            paths={"containment": [f"/c/{start + k}" for k in range(n)]},
        )  # fmt: skip
        for col, want in ((g.v_type, types), (g.v_basename, bases), (g.v_unit, units)):
            got = col[start:]
            assert got == want
            assert all(g._intern(x) is x for x in got)
