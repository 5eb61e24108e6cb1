"""The engine: allocate, reserve, cancel, release, attach, remove, status -- behaviour and failure modes."""

from __future__ import annotations

import pytest

from fluxlite import BusyError, CommandError, StateError, UnknownJobError, UnsatisfiableError
from fluxlite.api import Engine
from fluxlite.readers import graph_to_jgf
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import (
    CORE,
    HUGE,
    NODE,
    SOCKET,
    TWO_NODES,
    jobspec,
    recount_errors,
    small_engine,
    snapshot,
)


def allocated_nodes(text: str) -> list[str]:
    return [line.strip("- ").split("[")[0] for line in text.splitlines() if "node" in line]


@pytest.mark.parametrize(
    ("policy", "first_two"),
    [
        ("low", [["node0"], ["node1"]]),
        ("high", [["node3"], ["node2"]]),
        ("lonode", [["node0"], ["node1"]]),
        ("hinode", [["node3"], ["node2"]]),
        ("first", [["node3"], ["node2"]]),
    ],
)
def test_policy_order_for_whole_nodes(policy: str, first_two: list[list[str]]) -> None:
    """Each policy picks nodes in its documented order."""
    eng = small_engine(policy)
    got = [allocated_nodes(eng.allocate(NODE).text) for _ in range(2)]
    assert got == first_two


def test_lonode_fills_lowest_node_core_by_core() -> None:
    """`lonode` fills the lowest node first, core by core in ascending id order."""
    eng = small_engine("lonode")
    names = []
    for _ in range(3):
        text = eng.allocate(CORE).text
        names.append(next(line.strip("- ").split("[")[0] for line in text.splitlines() if "core" in line))
    assert names == ["core0", "core1", "core2"]


def test_busy_and_unsatisfiable_are_different_errors() -> None:
    """A full graph raises BusyError; a request bigger than the graph raises UnsatisfiableError."""
    eng = small_engine("low", nodes=2)
    eng.allocate(NODE)
    eng.allocate(NODE)
    with pytest.raises(BusyError):
        eng.allocate(NODE)
    with pytest.raises(UnsatisfiableError):
        eng.allocate(HUGE)


def test_cancel_frees_everything() -> None:
    """After cancel the same request fits again and aggregates equal a recount."""
    eng = small_engine("low", nodes=1)
    r = eng.allocate(NODE)
    with pytest.raises(BusyError):
        eng.allocate(NODE)
    eng.cancel(r.jobid)
    assert eng.allocate(NODE).ok
    assert recount_errors(eng, [0, 1800, 3600]) == []


def test_cancel_unknown_job_raises() -> None:
    """Cancelling an id that holds nothing raises UnknownJobError and changes nothing."""
    eng = small_engine()
    eng.allocate(CORE)
    before = snapshot(eng)
    with pytest.raises(UnknownJobError):
        eng.cancel(42)
    assert snapshot(eng) == before


def test_reserve_when_busy() -> None:
    """allocate_orelse_reserve reserves at the end of the running job."""
    eng = small_engine("low", nodes=1)
    eng.allocate(NODE)
    r = eng.allocate_orelse_reserve(NODE)
    assert r.reserved and r.at == 3600
    assert recount_errors(eng, [0, 3599, 3600, 7199, 7200]) == []


@pytest.mark.parametrize("op", ["allocate", "allocate_with_satisfiability", "allocate_orelse_reserve"])
def test_failed_match_changes_nothing(op: str) -> None:
    """A match that fails (busy or unsatisfiable) leaves the whole state as it was."""
    eng = small_engine("low", nodes=2)
    eng.allocate(NODE)
    eng.allocate(SOCKET)
    before = snapshot(eng)
    r = eng.match(HUGE, op=op)
    assert not r.ok
    assert snapshot(eng) == before


def test_failed_match_on_full_graph_changes_nothing() -> None:
    """A busy allocate on a full graph changes nothing."""
    eng = small_engine("high", nodes=1)
    eng.allocate(NODE)
    before = snapshot(eng)
    assert not eng.match(NODE, op="allocate").ok
    assert snapshot(eng) == before


def test_satisfiability_does_not_allocate() -> None:
    """A satisfiability check answers without changing state."""
    eng = small_engine()
    before = snapshot(eng)
    assert eng.satisfiable(TWO_NODES)
    assert not eng.satisfiable(HUGE)
    assert snapshot(eng) == before


def test_down_node_is_skipped_until_up() -> None:
    """A node marked down is not allocated; marking it up makes it usable again."""
    eng = small_engine("low", nodes=1)
    eng.set_status("/cluster0/node0", "down")
    with pytest.raises(MatchErrorTypes):
        eng.allocate(NODE)
    eng.set_status("/cluster0/node0", "up")
    assert eng.allocate(NODE).ok


MatchErrorTypes = (BusyError, UnsatisfiableError)


def test_set_status_unknown_path_and_bad_value() -> None:
    """set_status names a bad path or status and changes nothing."""
    eng = small_engine()
    before = snapshot(eng)
    with pytest.raises(CommandError, match="/nope"):
        eng.set_status("/nope", "down")
    with pytest.raises(CommandError, match="sideways"):
        eng.set_status("/cluster0/node0", "sideways")
    assert snapshot(eng) == before


def test_partial_cancel_by_rank_then_full() -> None:
    """Releasing one rank of a two-node job frees that node; releasing the other ends the job."""
    eng = small_engine("low", nodes=2)
    r = eng.allocate(TWO_NODES)
    r1 = '{"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "0"}}]}}'
    assert eng.partial_cancel(r.jobid, r1, "rv1exec") is False
    assert recount_errors(eng, [0, 1800]) == []
    r0 = '{"version": 1, "execution": {"R_lite": [{"rank": "0", "children": {"core": "0"}}]}}'
    assert eng.partial_cancel(r.jobid, r0, "rv1exec") is True
    assert r.jobid not in eng.jobs
    assert recount_errors(eng, [0, 1800]) == []
    assert all(t is None for t in eng.traverser.tags)


def test_partial_cancel_of_foreign_rank_changes_nothing() -> None:
    """Releasing a rank the job does not hold is refused and leaves the state unchanged."""
    eng = small_engine("low", nodes=2)
    r = eng.allocate(NODE)
    before = snapshot(eng)
    r1 = '{"version": 1, "execution": {"R_lite": [{"rank": "1", "children": {"core": "0"}}]}}'
    with pytest.raises(StateError, match="rank 1"):
        eng.partial_cancel(r.jobid, r1, "rv1exec")
    assert snapshot(eng) == before


def test_attach_adds_capacity_and_keeps_jobs() -> None:
    """Attaching a node's subgraph raises totals along the path and keeps running jobs."""
    big = generate_graph(nodes=2, sockets=2, cores=4)
    eng = Engine(generate_graph(nodes=1, sockets=2, cores=4), policy="low")
    eng.allocate(NODE)
    with pytest.raises(BusyError):
        eng.allocate(NODE)
    new = eng.attach(graph_to_jgf(big))
    assert len(new) == 1 + 2 + 8
    assert eng.allocate(NODE).ok
    assert recount_errors(eng, [0, 1800]) == []


def test_attach_bad_document_changes_nothing() -> None:
    """A malformed JGF subgraph is refused and the graph is unchanged."""
    eng = small_engine()
    before = snapshot(eng)
    with pytest.raises(Exception, match=r"JGF|jgf|graph|nodes"):
        eng.attach(b'{"graph": {"nodes": [{"id": "1"}], "edges": []}}')
    assert snapshot(eng) == before


def test_remove_free_node_and_refuse_busy_one() -> None:
    """Removing a free node shrinks the graph; removing a busy one names the job unless forced."""
    eng = small_engine("low", nodes=2)
    r = eng.allocate(NODE)
    before = snapshot(eng)
    with pytest.raises(StateError, match=f"job\\(s\\) {r.jobid}"):
        eng.remove_subgraph("/cluster0/node0")
    assert snapshot(eng) == before
    eng.remove_subgraph("/cluster0/node1")
    assert eng.graph.vertex_by_path("/cluster0/node1") is None
    with pytest.raises(BusyError):
        eng.allocate(NODE)
    assert recount_errors(eng, [0]) == []
    eng.remove_subgraph("/cluster0/node0", force=True)
    assert r.jobid not in eng.jobs
    assert recount_errors(eng, [0]) == []


def test_remove_several_paths_at_once_equals_one_at_a_time_and_is_all_or_nothing() -> None:
    """remove_subgraph(paths=...) leaves what removing each path in turn leaves (a subtree listed
    inside another goes with it); a busy or unknown path among them removes nothing."""
    one, many = small_engine("low", nodes=4), small_engine("low", nodes=4)
    for eng in (one, many):
        eng.allocate(SOCKET)  # node0's socket: aggregates above the removed nodes are not empty
    for p in ("/cluster0/node2", "/cluster0/node3"):
        one.remove_subgraph(p)
    removed = many.remove_subgraph(paths=["/cluster0/node2", "/cluster0/node3/socket1", "/cluster0/node3"])
    assert len(removed) == len(set(removed)) and snapshot(many) == snapshot(one)
    assert recount_errors(many, [0, 1, 3600]) == []
    before = snapshot(many)
    with pytest.raises(StateError, match="job"):
        many.remove_subgraph(paths=["/cluster0/node1", "/cluster0/node0"])  # node0 holds the socket job
    with pytest.raises(CommandError, match="/cluster0/node9"):
        many.remove_subgraph(paths=["/cluster0/node1", "/cluster0/node9"])
    assert snapshot(many) == before


def test_remove_unknown_path_raises() -> None:
    """Removing a path that does not exist names it."""
    eng = small_engine()
    with pytest.raises(CommandError, match="/cluster0/node9"):
        eng.remove_subgraph("/cluster0/node9")


def test_duration_zero_means_until_end_of_graph() -> None:
    """A jobspec without duration holds its resources to the end of the graph's time."""
    eng = small_engine("low", nodes=1)
    js = jobspec(
        "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: core\n        count: 1\n",
        duration=0,
    )
    eng.allocate(js)
    r = eng.match(NODE, op="allocate_orelse_reserve")
    assert not r.ok


def test_find_lists_allocated_and_rejects_bad_criteria() -> None:
    """find returns allocated vertices and names a bad predicate."""
    eng = small_engine("low", nodes=2)
    eng.allocate(NODE)
    text = eng.find_text("sched-now=allocated")
    assert "node0" in text and "node1" not in text
    with pytest.raises(CommandError, match="colour"):
        eng.find_text("colour=red")
