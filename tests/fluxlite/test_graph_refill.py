"""Vertices and edges added into the holes a removal left: the handles they get, and the store's state.

A removal frees its vertices highest handle first, so that rustworkx (which reuses a freed slot
last-freed first) hands them back lowest first: a subtree removed and attached again takes the same
handles as a run.  The store guesses the handles the next additions get and labels the new nodes and
edges with them; a wrong guess must cost only a relabelling, never a wrong payload or column.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.graph import ResourceGraph
from tests.fluxlite.test_graph_bulk import state


def _tree(rng: random.Random, top: str, nodes: int) -> tuple[list[str], list[tuple[int, int]]]:
    """Paths of a subtree below ``top`` (node -> socket[2] -> core[2..5]) in preorder, and its edges as
    (parent position, child position) listed sockets first, then the cores (not in child order)."""
    paths: list[str] = []
    sockets: list[tuple[int, int]] = []
    cores: list[tuple[int, int]] = []
    for n in range(nodes):
        paths.append(f"{top}/node{n}")
        node = len(paths) - 1
        for s in range(2):
            paths.append(f"{top}/node{n}/socket{s}")
            sock = len(paths) - 1
            sockets.append((node, sock))
            for c in range(rng.randrange(2, 6)):
                paths.append(f"{top}/node{n}/socket{s}/core{c}")
                cores.append((sock, len(paths) - 1))
    return paths, sockets + cores


def _base(g: ResourceGraph) -> int:
    return g.add_vertex("cluster", "cluster", "cluster0", 0, paths={"containment": "/cluster0"})


def _add_bulk(g: ResourceGraph, root: int, paths: list[str], edges: list[tuple[int, int]]) -> list[int]:
    types = [p.rsplit("/", 1)[1].rstrip("0123456789") for p in paths]
    vids = g.add_vertices_bulk(
        types, types, [p.rsplit("/", 1)[1] for p in paths], list(range(len(paths))), [0] * len(paths),
        [1] * len(paths), [""] * len(paths), paths={"containment": paths},
    )  # fmt: skip
    tops = [k for k, p in enumerate(paths) if p.count("/") == 2]
    src = [root] * len(tops) + [vids[a] for a, _ in edges]
    dst = [vids[k] for k in tops] + [vids[b] for _, b in edges]
    g.add_edges_bulk(src, dst)
    return vids


def _add_one(g: ResourceGraph, root: int, paths: list[str], edges: list[tuple[int, int]]) -> list[int]:
    vids = []
    for k, p in enumerate(paths):
        t = p.rsplit("/", 1)[1].rstrip("0123456789")
        vids.append(g.add_vertex(t, t, p.rsplit("/", 1)[1], k, rank=0, paths={"containment": p}))
    for k, p in enumerate(paths):
        if p.count("/") == 2:
            g.add_edge(root, vids[k])
    for a, b in edges:
        g.add_edge(vids[a], vids[b])
    return vids


@pytest.mark.parametrize("seed", range(4))
def test_a_subtree_removed_and_attached_again_takes_its_handles_back_as_a_run(seed: int) -> None:
    rng = random.Random(seed)
    paths, edges = _tree(rng, "/cluster0", rng.randrange(2, 6))
    bulk, one = ResourceGraph(), ResourceGraph()
    rb, ro = _base(bulk), _base(one)
    for _ in range(3):  # attach, remove, attach again (twice): the refill of a grow after a shrink
        first = _add_bulk(bulk, rb, paths, edges)
        _add_one(one, ro, paths, edges)
        assert state(bulk) == state(one)
        eids = sorted(e for e in bulk.rx.edge_indices())
        bulk.remove_vertices(first)
        one.remove_vertices(first)
        assert state(bulk) == state(one)
        again = _add_bulk(bulk, rb, paths, edges)
        _add_one(one, ro, paths, edges)
        # the freed slots come back lowest first, in order: the columns are refilled by slices
        assert again == sorted(first)
        assert sorted(bulk.rx.edge_indices()) == eids
        # payloads are the handles (the guess held or was corrected), columns as one at a time
        assert all(bulk.rx[v] == v for v in bulk.rx.node_indices())
        assert all(bulk.rx.get_edge_data_by_index(e) == e for e in bulk.rx.edge_indices())
        assert state(bulk) == state(one)
        bulk.remove_vertices(again)
        one.remove_vertices(again)


@pytest.mark.parametrize("wrong", ["reversed", "foreign", "short"])
def test_a_wrong_guess_of_the_freed_slots_still_labels_every_handle(wrong: str) -> None:
    rng = random.Random(7)
    paths, edges = _tree(rng, "/cluster0", 3)
    bulk, one = ResourceGraph(), ResourceGraph()
    rb, ro = _base(bulk), _base(one)
    first = _add_bulk(bulk, rb, paths, edges)
    _add_one(one, ro, paths, edges)
    bulk.remove_vertices(first)
    one.remove_vertices(first)
    for free in (bulk._vfree, bulk._efree):  # what rustworkx hands back is not what the store expects
        if wrong == "reversed":
            free.reverse()
        elif wrong == "foreign":
            free[:] = [x + 1000 for x in free]
        else:
            del free[: len(free) - 2]
    _add_bulk(bulk, rb, paths, edges)
    _add_one(one, ro, paths, edges)
    assert all(bulk.rx[v] == v for v in bulk.rx.node_indices())
    assert all(bulk.rx.get_edge_data_by_index(e) == e for e in bulk.rx.edge_indices())
    assert state(bulk) == state(one)
    assert bulk._vfree == [] and bulk._efree == []  # (a failed guess is dropped, not trusted again)


class _Col(list):
    """A column that is not an exact list: the store's typed fast paths must step aside."""


def test_edges_refilled_in_another_order_are_written_as_the_generic_path_writes_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from fluxlite.graph import _store

    calls: list[tuple[str, bool]] = []
    scatter, inverse = _store._scatter_edges, _store._inverse

    def spy_scatter(*a: object) -> bool:
        calls.append(("scatter", got := scatter(*a)))
        return got

    def spy_inverse(*a: object) -> list[int]:
        calls.append(("inverse", True))
        return inverse(*a)

    monkeypatch.setattr(_store, "_scatter_edges", spy_scatter)
    monkeypatch.setattr(_store, "_inverse", spy_inverse)
    rng = random.Random(3)
    paths, edges = _tree(rng, "/cluster0", 4)
    typed, generic, one = ResourceGraph(), ResourceGraph(), ResourceGraph()
    roots = [_base(typed), _base(generic), _base(one)]
    firsts = [_add_bulk(g, r, paths, edges) for g, r in zip((typed, generic), roots)]
    _add_one(one, roots[2], paths, edges)
    for g, f in zip((typed, generic, one), [*firsts, firsts[0]]):
        g.remove_vertices(f)
        # freed in an order the next additions get back permuted: the edges' columns are scattered
        g._efree.clear() if g is not one else None
    for name in ("e_src", "e_dst", "e_ss", "e_rel", "e_seq"):
        setattr(generic, name, _Col(getattr(generic, name)))
    calls.clear()
    _add_bulk(typed, roots[0], paths, edges)
    assert calls == [("scatter", True)]  # (the refill came back permuted: the typed pass wrote it)
    calls.clear()
    _add_bulk(generic, roots[1], paths, edges)
    assert calls == [("scatter", False), ("inverse", True)]  # (not lists: one map per column)
    _add_one(one, roots[2], paths, edges)
    assert state(typed) == state(one)
    assert state(generic) == state(one)
