"""The variation-aware policy: vertices of the lowest ``perf_class`` first (Fluxion's var_aware_t).

Fluxion's ``variation`` policy scores a matched vertex ``MATCH_MET +
perf_class`` (the vertex property read with ``std::stoi``; 9999, the worst
class, when it is missing, unparsable or outside 0..9999) and keeps the
lowest scores; it adds no id to the score, so vertices of one class tie.
"""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.errors import BusyError
from fluxlite.match import parse_policy
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import NODE, TWO_NODES, jobspec, snapshot


def _engine(classes: dict[str, str], nodes: int = 6, shortcuts: bool = True) -> Engine:
    g = generate_graph(nodes=nodes, sockets=2, cores=4)
    for name, value in classes.items():
        g.set_property(g.vertex_by_path(f"/cluster0/{name}"), "perf_class", value)
    eng = Engine(g, policy="variation")
    eng.traverser.shortcuts = shortcuts
    return eng


def _nodes(text: str) -> list[str]:
    return [line.strip().split("[")[0].strip("-") for line in text.splitlines() if "node" in line]


def test_both_spellings_name_the_same_policy() -> None:
    """``variation`` and ``policy=variation`` select the variation-aware policy; lower scores win."""
    a, b = parse_policy("variation"), parse_policy("policy=variation")
    assert a == b
    assert a.order == "variation" and not a.descending
    assert not a.stop_on_first and not a.node_centric and not a.node_exclusive


@pytest.mark.parametrize("shortcuts", [True, False])
def test_nodes_are_given_out_from_the_best_performance_class(shortcuts: bool) -> None:
    """Node by node, the lowest perf_class goes first; a missing class counts as the worst."""
    eng = _engine({"node0": "7", "node1": "3", "node2": "2", "node4": "5", "node5": "0"}, shortcuts=shortcuts)
    order = [_nodes(eng.allocate(NODE).text) for _ in range(5)]
    assert order == [["node5"], ["node2"], ["node1"], ["node4"], ["node0"]]
    assert _nodes(eng.allocate(NODE).text) == ["node3"]  # the only one left, class 9999
    with pytest.raises(BusyError):
        eng.allocate(NODE)


def test_perf_class_is_read_as_std_stoi_reads_it() -> None:
    """Leading blanks and trailing text are tolerated; junk, negatives and > 9999 are the worst class."""
    classes = {
        "node0": "abc",
        "node1": "-1",
        "node2": "12000",
        "node3": " 4x",
        "node4": "+6",
        "node5": "9999",
    }
    eng = _engine(classes)
    assert _nodes(eng.allocate(NODE).text) == ["node3"]
    assert _nodes(eng.allocate(NODE).text) == ["node4"]
    # the rest all have class 9999: they tie
    assert len(_nodes(eng.allocate(TWO_NODES).text)) == 2


def test_two_nodes_take_the_two_best_classes() -> None:
    eng = _engine({"node0": "9", "node1": "8", "node2": "1", "node3": "4", "node4": "3", "node5": "7"})
    assert sorted(_nodes(eng.allocate(TWO_NODES).text)) == ["node2", "node4"]


def test_sockets_inside_the_chosen_node_follow_their_own_class() -> None:
    """Each level is scored by its own vertices' classes: best node first, then its best socket."""
    g = generate_graph(nodes=3, sockets=2, cores=4)
    for path, value in (("node1", "1"), ("node1/socket1", "2"), ("node2/socket0", "0")):
        g.set_property(g.vertex_by_path(f"/cluster0/{path}"), "perf_class", value)
    eng = Engine(g, policy="variation")
    one_socket = jobspec(
        "  - type: node\n    count: 1\n    with:\n      - type: socket\n        count: 1\n        with:\n"
        "          - type: slot\n            count: 1\n            label: default\n            with:\n"
        "              - type: core\n                count: 4\n"
    )
    text = eng.allocate(one_socket).text
    assert _nodes(text) == ["node1"]
    assert "socket1[" in text and "socket0[" not in text
    text = eng.allocate(one_socket).text
    assert _nodes(text) == ["node1"] and "socket0[" in text


def test_a_failed_match_changes_nothing() -> None:
    eng = _engine({"node0": "1"}, nodes=2)
    eng.allocate(TWO_NODES)
    eng.allocate(TWO_NODES)
    before = snapshot(eng)
    with pytest.raises(BusyError):
        eng.allocate(NODE)
    assert snapshot(eng) == before
