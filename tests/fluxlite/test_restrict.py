"""Matches restricted to named nodes: the full match's answer, at the cost of the named nodes.

A constraint that names hosts (RFC 31 ``hostlist``, ``ranks``) or the
engine's ``hosts=`` lets the traverser walk only the paths from the root to
the named nodes (``fluxlite.match._restrict``).  The differential below
gives two engines the same random operations: one restricts, the other
(``traverser.restrict = False``) walks the whole graph and refuses the
other nodes one by one through the same constraint.  Outputs and the whole
state must stay identical.  The graphs carry resources outside nodes (a
rack's switch, a cluster's file system) so that the rule for requests that
could use those is exercised too.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from fluxlite.api import Engine
from fluxlite.errors import FluxliteError, InputError
from fluxlite.jobspec import parse_constraint
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import CORE, NODE, SOCKET, TWO_NODES, jobspec, snapshot

RACK_NODES = jobspec(
    "  - type: rack\n    count: 1\n    with:\n      - type: node\n        count: 2\n        with:\n"
    "          - type: socket\n            count: 1\n            with:\n"
    "              - type: slot\n                count: 1\n                label: default\n"
    "                with:\n                  - type: core\n                    count: 1\n"
)
NODES_EXCL = jobspec(
    "  - type: node\n    count: 3\n    exclusive: true\n    with:\n"
    "      - type: socket\n        count: 1\n        with:\n"
    "          - type: slot\n            count: 1\n            label: default\n"
    "            with:\n              - type: core\n                count: 1\n"
)
RANGE_NODES = jobspec(
    "  - type: node\n    count:\n      min: 1\n      max: 4\n      operator: '+'\n      operand: 1\n"
    "    with:\n      - type: socket\n        count: 1\n        with:\n"
    "          - type: slot\n            count: 1\n            label: default\n"
    "            with:\n              - type: core\n                count: 2\n"
)
# resources outside nodes: a switch under each rack, a file system under the cluster
SWITCH = jobspec(
    "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: switch\n        count: 1\n"
)
RACK_SWITCH = jobspec(
    "  - type: rack\n    count: 1\n    with:\n      - type: switch\n        count: 1\n"
    "      - type: node\n        count: 1\n        with:\n"
    "          - type: socket\n            count: 1\n            with:\n"
    "              - type: slot\n                count: 1\n                label: default\n"
    "                with:\n                  - type: core\n                    count: 1\n"
)
FS_AND_CORES = jobspec(
    "  - type: cluster\n    count: 1\n    with:\n      - type: fs\n        count: 1\n"
    "      - type: rack\n        count: 1\n        with:\n"
    "          - type: node\n            count: 1\n            with:\n"
    "              - type: socket\n                count: 1\n                with:\n"
    "                  - type: slot\n                    count: 1\n                    label: default\n"
    "                    with:\n                      - type: core\n                        count: 2\n"
)
SHORT_NODE = dataclasses.replace(NODE, duration=600.0)
REQUESTS = [
    CORE,
    NODE,
    SOCKET,
    TWO_NODES,
    RACK_NODES,
    NODES_EXCL,
    RANGE_NODES,
    SWITCH,
    RACK_SWITCH,
    FS_AND_CORES,
    SHORT_NODE,
]
OPS = [
    "allocate",
    "allocate_orelse_reserve",
    "allocate_with_satisfiability",
    "satisfiability",
    "without_allocating_future",
]


def _graph(racks: int, nodes: int, extras: bool):
    g = generate_graph(racks=racks, nodes=nodes, sockets=2, cores=4)
    if extras:
        root = g.roots["containment"]
        for i, r in enumerate(g.by_type("rack")):
            path = g.path(r) + "/switch0"
            s = g.add_vertex("switch", "switch", f"switch{i}", 0, paths={"containment": path})
            g.add_edge(r, s)
        fs = g.add_vertex("fs", "fs", "fs0", 0, paths={"containment": g.path(root) + "/fs0"})
        g.add_edge(root, fs)
    return g


def _constrained(js, constraint: dict):
    return dataclasses.replace(js, constraint=parse_constraint(constraint))


class Restricted(RuleBasedStateMachine):
    """A restricted engine and a full-walk engine, same operations, same answers."""

    def __init__(self) -> None:
        super().__init__()
        self.fast: Engine
        self.plain: Engine

    @initialize(
        policy=st.sampled_from(["first", "low", "high", "lonode", "hinodex", "locality"]),
        shape=st.sampled_from([(0, 24, False), (3, 8, True), (4, 6, False), (2, 12, True)]),
    )
    def build(self, policy: str, shape: tuple[int, int, bool]) -> None:
        racks, nodes, extras = shape
        self.fast = Engine(_graph(racks, nodes, extras), policy=policy)
        self.plain = Engine(_graph(racks, nodes, extras), policy=policy)
        self.plain.traverser.restrict = False
        g = self.fast.graph
        self.names = sorted(g.v_name[v] for v in g.by_type("node"))
        self.paths = sorted(g.path(v) for v in g.by_type("node"))

    def _both(self, fn: str, *args: object, **kw: object) -> list:
        outs = []
        for eng in (self.fast, self.plain):
            try:
                r = getattr(eng, fn)(*args, **kw)
                if hasattr(r, "ok"):
                    r = (r.ok, r.jobid, r.at, r.errno, r.text, r.error, r.reserved, r.jobid_used)
                outs.append(("ok", r))
            except FluxliteError as exc:
                outs.append(("err", type(exc).__name__, str(exc)))
        assert outs[0] == outs[1]
        return outs

    @rule(
        req=st.sampled_from(REQUESTS),
        op=st.sampled_from(OPS),
        data=st.data(),
        form=st.sampled_from(["hosts", "hostlist", "ranks", "and-ranks", "or"]),
        repeat=st.integers(1, 3),
    )
    def match(self, req: object, op: str, data: st.DataObject, form: str, repeat: int) -> None:
        k = data.draw(st.integers(0, max(1, len(self.names) // 3)))
        hosts = sorted(data.draw(st.sets(st.sampled_from(self.names), max_size=k)))
        ranks = sorted(int(h.removeprefix("node")) for h in hosts)
        kw: dict = {}
        if form == "hosts":
            kw["hosts"] = hosts
        elif form == "hostlist":
            kw["hosts"] = ",".join(hosts)
            if not hosts:
                kw["hosts"] = "nohost"
        elif form == "ranks":
            req = _constrained(req, {"ranks": [",".join(map(str, ranks))]})
        elif form == "and-ranks":
            req = _constrained(req, {"and": [{"ranks": [",".join(map(str, ranks))]}, {"properties": ["^x"]}]})
        else:
            half = len(hosts) // 2
            req = _constrained(
                req,
                {
                    "or": [
                        {"hostlist": [",".join(hosts[:half]) or "none"]},
                        {"hostlist": [",".join(hosts[half:]) or "none"]},
                    ]
                },
            )
        before = self.fast.traverser.restricted_runs
        for _ in range(repeat):
            self._both("match", req, op=op, **kw)
        assert self.plain.traverser.restricted_runs == 0
        self.restricted = self.fast.traverser.restricted_runs > before

    @rule(req=st.sampled_from([NODE, CORE, TWO_NODES]), op=st.sampled_from(OPS))
    def match_anywhere(self, req: object, op: str) -> None:
        self._both("match", req, op=op)

    @precondition(lambda self: bool(self.fast.jobs))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        self._both("cancel", data.draw(st.sampled_from(sorted(self.fast.jobs))))

    @rule(data=st.data(), up=st.booleans())
    def set_status(self, data: st.DataObject, up: bool) -> None:
        self._both("set_status", data.draw(st.sampled_from(self.paths)), "up" if up else "down")

    @invariant()
    def same_state(self) -> None:
        if hasattr(self, "fast"):
            assert snapshot(self.fast) == snapshot(self.plain)


Restricted.TestCase.settings = settings(
    max_examples=30, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestRestrictedDifferential = Restricted.TestCase


def _wide(nodes: int = 600) -> Engine:
    return Engine(generate_graph(racks=4, nodes=nodes // 4, sockets=2, cores=4), policy="low")


@pytest.mark.parametrize("op", ["allocate", "allocate_orelse_reserve", "satisfiability"])
def test_a_hostlist_match_costs_the_named_nodes_not_the_graph(op: str) -> None:
    """8 named nodes: the restricted walk visits as many vertices on 400 nodes as on 2,400, the full walk more.

    Same answers as the full walk either way.
    """
    visits = {}
    for nodes in (400, 2400):
        q = nodes // 4  # nodes per rack: the same 8 places in both graphs
        hosts = f"node[3,77,{q + 50}-{q + 52},{3 * q},{3 * q + 1},{nodes - 1}]"
        for restrict in (True, False):
            eng = _wide(nodes)
            eng.traverser.restrict = restrict
            js = _constrained(TWO_NODES, {"hostlist": [hosts]})
            # fill the named nodes' cores half, so that a reservation searches later times too
            for _ in range(16):
                assert eng.match(CORE, op="allocate_orelse_reserve", hosts=hosts).ok
            r = eng.match(js, op=op)
            visits[nodes, restrict] = (eng.preorder_count, (r.ok, r.at, r.text, r.errno))
    assert visits[400, True][1] == visits[400, False][1]
    assert visits[2400, True][1] == visits[2400, False][1]
    # 8 x (node, 2 sockets, 8 cores) + the path
    assert visits[400, True][0] == visits[2400, True][0] <= 8 * 11 + 20
    assert visits[2400, False][0] > 2 * visits[400, False][0]


def test_restricted_runs_count_only_constraints_that_name_nodes() -> None:
    """Properties alone, or most of the graph named, walk everything (no gain to expect)."""
    eng = _wide(40)
    tr = eng.traverser
    eng.match(NODE, hosts=["node1", "node2"])
    assert tr.restricted_runs == 1
    eng.match(_constrained(NODE, {"properties": ["^x"]}))
    eng.match(NODE, hosts=",".join(f"node{i}" for i in range(30)))
    assert tr.restricted_runs == 1
    eng.match(SWITCH, hosts=["node1"])  # no switch outside nodes in this graph: restricted
    assert tr.restricted_runs == 2


def test_a_request_that_could_use_a_resource_outside_nodes_walks_everything() -> None:
    """A switch request with no node request above or below it may be served under any rack: no restriction."""
    eng = Engine(_graph(3, 8, True), policy="first")
    tr = eng.traverser
    for js in (SWITCH, RACK_SWITCH, FS_AND_CORES):
        assert eng.match(js, hosts=["node9"]).ok
    assert tr.restricted_runs == 0
    r = eng.match(NODE, hosts=["node10"])  # node, socket, core: never outside a node
    assert r.ok and tr.restricted_runs == 1 and "node10" in r.text


def test_hosts_are_and_ed_with_the_jobspec_constraint() -> None:
    eng = _wide(40)
    js = _constrained(NODE, {"hostlist": ["node[0-3]"]})
    r = eng.match(js, hosts=["node3", "node7"])
    assert r.ok and "node3" in r.text
    assert not eng.match(js, hosts=["node3", "node7"]).ok  # node3 is taken, node7 is not allowed
    assert not eng.satisfiable(js, hosts=["node7"])
    assert eng.satisfiable(js, hosts="node[1-2]")


def test_a_grow_can_be_restricted_to_named_nodes() -> None:
    eng = _wide(40)
    r = eng.allocate(NODE, hosts=["node5"])
    assert "node5" in r.text
    g = eng.grow(r.jobid, NODE, fmt="simple", hosts="node[30-31]")
    assert "node30" in g.text and "node5" not in g.text


@pytest.mark.parametrize("hosts", ["node[", "a]b", ["node1", ""], ["x" * 5000], [None]])
def test_bad_hosts_are_refused_and_change_nothing(hosts: object) -> None:
    eng = _wide(40)
    before = snapshot(eng)
    with pytest.raises(InputError):
        eng.allocate(NODE, hosts=hosts)
    assert snapshot(eng) == before
