"""On an empty graph, "satisfiable" and "allocatable now" are the same question.

A request that can run must never be refused as unsatisfiable, and a
request called satisfiable must be allocatable on an empty, all-up graph.
Random jobspecs of the usual shapes (node / socket / slot levels, exclusive
or not, cores, gpus and pooled memory in amounts that do and do not fit the
granules) are put to every match policy, with the shortcuts on and off.

Pooled memory (vertices of size 16) is what made ``first`` wrong before:
its dynamic exploration stopped at one memory vertex big enough for the
units of two slots, although a slot takes whole vertices, so two slots
need two of them (Fluxion v0.54's share tally).
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluxlite.api import Engine
from fluxlite.graph import ResourceGraph
from fluxlite.match import POLICIES
from fluxlite.readers._common import no_gc
from fluxlite.readers.generate import generate_recipe
from fluxlite.readers.grug import build_from_recipe
from tests.fluxlite.helpers import jobspec, snapshot

POLICY_NAMES = [*sorted(POLICIES), "locality"]
MEM_SIZE = 16


def _graph(nodes: int) -> ResourceGraph:
    """cluster -> node[nodes] -> socket[2] -> {core[8], gpu[2], memory[3] of 16 GB each}."""
    recipe = generate_recipe(nodes=nodes, sockets=2, cores=8, gpus=2, memory=3)
    for pool in recipe.pools:
        if pool.type == "memory":
            pool.size = MEM_SIZE
    g = ResourceGraph()
    with no_gc():
        build_from_recipe(recipe, g, source="test")
    return g


def _block(indent: int, type_: str, count: int, *, exclusive: bool = False, label: bool = False) -> str:
    pad = " " * indent
    out = f"{pad}- type: {type_}\n{pad}  count: {count}\n"
    if exclusive:
        out += f"{pad}  exclusive: true\n"
    if label:
        out += f"{pad}  label: default\n"
    return out


@st.composite
def requests(draw: st.DrawFn) -> str:
    """A jobspec ``resources`` block: [[node[n] ->] socket[s] ->] slot[k] -> {core, gpu?, memory?}."""
    # the levels follow the graph's (a slot right above a node's cores would
    # skip the socket level, which the update stage refuses, as Fluxion does)
    levels = draw(st.sampled_from(["slot", "socket", "node+socket"]))
    text = ""
    indent = 2
    if "node" in levels:
        text += _block(indent, "node", draw(st.integers(1, 3)), exclusive=draw(st.booleans()))
        text += " " * indent + "  with:\n"
        indent += 4
    if "socket" in levels:
        text += _block(indent, "socket", draw(st.integers(1, 2)))
        text += " " * indent + "  with:\n"
        indent += 4
    text += _block(indent, "slot", draw(st.integers(1, 3)), label=True)
    text += " " * indent + "  with:\n"
    indent += 4
    text += _block(indent, "core", draw(st.integers(1, 3)))
    if draw(st.integers(0, 3)) == 0:
        text += _block(indent, "gpu", 1)
    if draw(st.integers(0, 3)) > 0:
        text += _block(indent, "memory", draw(st.sampled_from([1, 8, 10, 16, 17, 40])))
    return text


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(resources=requests(), nodes=st.integers(2, 3), data=st.data())
def test_on_an_empty_graph_satisfiable_iff_allocatable(
    resources: str, nodes: int, data: st.DataObject
) -> None:
    """Every policy, shortcuts on and off: satisfiability agrees with an allocation on an empty graph."""
    js = jobspec(resources)
    results = {}
    others = [p for p in POLICY_NAMES if p not in ("first", "low")]
    drawn = data.draw(st.lists(st.sampled_from(others), min_size=1, max_size=3, unique=True))
    for policy in ["first", "low", *drawn]:
        for shortcuts in (True, False):
            eng = Engine(_graph(nodes), policy=policy)
            eng.traverser.shortcuts = shortcuts
            before = snapshot(eng)
            sat = eng.satisfiable(js)
            assert snapshot(eng) == before, "satisfiability changed the state"
            got = eng.match(js, op="allocate")
            assert sat == got.ok, f"{policy} shortcuts={shortcuts}: satisfiable={sat}, allocated={got.ok}"
            if not got.ok:
                assert snapshot(eng) == before, "a failed allocation changed the state"
            results[(policy, shortcuts)] = (got.ok, got.text)
        assert results[(policy, True)] == results[(policy, False)]
    # whether a request fits an empty graph does not depend on the policy
    assert len({ok for ok, _ in results.values()}) == 1, results


def _slot_request(slots: int, mem: int, cores: int = 1) -> object:
    return jobspec(
        _block(2, "node", 1)
        + "    with:\n"
        + _block(6, "socket", 1)
        + "        with:\n"
        + _block(10, "slot", slots, label=True)
        + "            with:\n"
        + _block(14, "core", cores)
        + _block(14, "memory", mem)
    )


def test_each_slot_takes_whole_pool_vertices() -> None:
    """Three 16 GB vertices per socket hold three slots of 8 GB (not six), and two slots of 17 GB not at all."""
    for policy in ("first", "low", "high"):
        eng = Engine(_graph(1), policy=policy)
        assert eng.satisfiable(_slot_request(3, 8))
        assert not eng.satisfiable(_slot_request(4, 8))
        # 17 GB needs two vertices per slot: one slot fits a socket's three, two do not
        assert eng.satisfiable(_slot_request(1, 17))
        assert not eng.satisfiable(_slot_request(2, 17))
        got = eng.match(_slot_request(3, 8), op="allocate")
        assert got.ok
        assert got.text.count("memory") == 3


def test_exclusive_nodes_with_two_slots_of_pooled_memory_each() -> None:
    """The reported case: node[3, exclusive] -> socket[1] -> slot[2] -> {core[1], memory[8]} with ``first``."""
    req = jobspec(
        _block(2, "node", 3, exclusive=True)
        + "    with:\n"
        + _block(6, "socket", 1)
        + "        with:\n"
        + _block(10, "slot", 2, label=True)
        + "            with:\n"
        + _block(14, "core", 1)
        + _block(14, "memory", 8)
    )
    for policy in ("first", "firstnodex"):
        eng = Engine(_graph(3), policy=policy)
        assert eng.satisfiable(req)
        assert eng.match(req, op="allocate").ok
