"""Pooled resources (vertices of size > 1) given out in whole granules, across vertices and slots.

In Fluxion a slot takes whole edge groups: a pool vertex with room for
the request is given to one slot with all it has (the simple writer prints
``memory0[16:x]``), a request bigger than one vertex spans several, and
slots are counted by packing whole vertices -- so a request that the
granularity makes impossible fails even when the total capacity would do.
Dynamic exploration (``first``) stops once it has whole-vertex shares for
every slot, not once the total is reached.
"""

from __future__ import annotations

import re

import pytest

from fluxlite.api import Engine
from tests.fluxlite.helpers import jobspec
from tests.fluxlite.test_satisfiability_invariant import MEM_SIZE, _block, _graph

# (node-exclusive policies give whole nodes: every vertex below is printed)
POLICIES = ["first", "low", "high", "lonode", "locality", "variation"]
_MEM = re.compile(r"memory(\d+)\[(\d+):([xs])\]")


def _slots(slots: int, mem: int, *, under_socket: bool = True) -> object:
    text = ""
    indent = 2
    if under_socket:
        text += _block(2, "socket", 1) + "    with:\n"
        indent = 6
    text += _block(indent, "slot", slots, label=True) + " " * indent + "  with:\n"
    text += _block(indent + 4, "core", 1) + _block(indent + 4, "memory", mem)
    return jobspec(text)


def _memory(text: str) -> list[tuple[int, int, str]]:
    return [(int(a), int(b), c) for a, b, c in _MEM.findall(text)]


@pytest.mark.parametrize("policy", POLICIES)
def test_each_slot_gets_one_whole_vertex_when_one_is_enough(policy: str) -> None:
    """Two slots of 8 GB over 16 GB vertices: two vertices, each printed whole and exclusive."""
    eng = Engine(_graph(2), policy=policy)
    r = eng.allocate(_slots(2, 8))
    mem = _memory(r.text)
    assert len(mem) == 2
    assert all(amount == MEM_SIZE and kind == "x" for _, amount, kind in mem)
    assert len({i for i, _, _ in mem}) == 2


@pytest.mark.parametrize("policy", POLICIES)
def test_a_slot_bigger_than_a_vertex_spans_several(policy: str) -> None:
    """20 GB needs two 16 GB vertices; three such slots need six, more than a socket has."""
    eng = Engine(_graph(2), policy=policy)
    r = eng.allocate(_slots(1, 20))
    assert [(a, k) for _, a, k in _memory(r.text)] == [(MEM_SIZE, "x")] * 2
    # a socket has 3 x 16 = 48 GB, enough for 2 x 20 by capacity, not by granules
    assert not Engine(_graph(1), policy=policy).satisfiable(_slots(2, 20))
    assert Engine(_graph(1), policy=policy).satisfiable(_slots(1, 40))
    assert not Engine(_graph(1), policy=policy).satisfiable(_slots(1, 49))


@pytest.mark.parametrize("policy", ["first", "firstnodex", "low"])
def test_many_slots_over_the_pools_of_the_whole_graph(policy: str) -> None:
    """Slots under the cluster over 2 nodes x 2 sockets x 3 vertices: 12 fit, 13 do not."""
    eng = Engine(_graph(2), policy=policy)
    assert not eng.satisfiable(_slots(13, 1, under_socket=False))
    r = eng.allocate(_slots(12, 1, under_socket=False))
    mem = _memory(r.text)
    assert len(mem) == 12 and all(a == MEM_SIZE for _, a, _ in mem)
    # everything is taken now: one more slot is busy, not unsatisfiable
    again = eng.match(_slots(1, 1, under_socket=False), op="allocate_with_satisfiability")
    assert not again.ok and again.satisfiable


@pytest.mark.parametrize("policy", ["first", "low"])
def test_pool_allocations_cancel_back_to_empty(policy: str) -> None:
    eng = Engine(_graph(1), policy=policy)
    jobs = [eng.allocate(_slots(1, 8)).jobid for _ in range(6)]  # 2 sockets x 3 vertices
    assert not eng.match(_slots(1, 8), op="allocate").ok
    for j in jobs:
        eng.cancel(j)
    assert eng.allocate(_slots(3, 16)).ok
