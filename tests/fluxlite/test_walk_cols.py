"""The update walk reads the traverser's columns from one tuple (``Traverser._walk_cols``), built once
when the traverser is made.  That is exact only while none of those lists is ever replaced; these
tests hold every change of a graph and its state to that: allocations, reservations, grows, shrinks,
partial cancels, an attach with allocation, and the removal of subtrees."""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.test_shrink_many import _session, _spec


def _columns_now(eng: Engine) -> tuple:
    t, g = eng.traverser, eng.graph
    return (
        g.v_type,
        g.e_dst,
        g.v_size,
        g.v_name,
        t.e_token,
        t.e_excl,
        t.e_needs,
        t.tags,
        t.xspans,
        t.vspans,
        t.allocs,
        t.resvs,
        t._levels,
    )


def _same_lists(eng: Engine) -> bool:
    return all(a is b for a, b in zip(eng.traverser._walk_cols, _columns_now(eng), strict=True))


@pytest.mark.parametrize("seed", range(6))
def test_the_walk_columns_stay_the_lists_through_grows_shrinks_and_cancels(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    eng, _ = _session(seed, False, monkeypatch)
    assert _same_lists(eng)


def test_the_walk_columns_stay_the_lists_through_attach_and_removal() -> None:
    parent = Engine(generate_graph(nodes=4, sockets=2, cores=4), policy="first")
    child = Engine(generate_graph(nodes=1, sockets=2, cores=4), policy="first")
    before = len(child.graph.v_type)
    job = child.allocate(_spec(1, 2, 4)).jobid
    got = parent.match(_spec(2, 2, 4), "allocate", fmt="jgf")
    assert got.ok
    child.attach(got.text, allocate_to=job, duration=3600, fmt="simple")
    assert len(child.graph.v_type) > before and _same_lists(child)
    out = child.match(_spec(0, 1, 2), "allocate_orelse_reserve")
    assert out.ok and _same_lists(child)
    g = child.graph
    nodes = sorted({g.path(v) for v in child.traverser.job_vertices(job) if g.v_type[v] == "node"})
    assert child.shrink(job, paths=nodes[1:]) is False
    assert _same_lists(child)
    child.cancel(job)
    child.cancel(out.jobid)
    removed = child.remove_subgraph(paths=nodes[1:])
    assert removed and _same_lists(child)
    again = child.match(_spec(1, 2, 4), "allocate")
    assert again.ok and _same_lists(child)
