"""Fresh-subtree templates (fluxlite.match.fresh) change no result and no state.

Two engines on the same graph, one with the templates and one without
(``traverser.fresh = False``), receive the same operations; every output and
the whole state (per-vertex dicts with their span ids, aggregates, edge
weights and the first policy's child order, the per-job index) must stay
identical.  Allocations made from templates are then cancelled, released in
part, shrunk and reserved around, which reads what the replay wrote.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import initialize, invariant, precondition, rule

from fluxlite.api import Engine
from fluxlite.match import fresh as fresh_module
from fluxlite.readers.generate import generate_graph
from tests.fluxlite import test_shortcuts_differential as base
from tests.fluxlite.helpers import jobspec, snapshot


def nodes_req(count: int, sockets: int = 2, cores: int = 8, exclusive: bool = False) -> object:
    """node[count] -> slot -> socket[sockets] -> core[cores]."""
    x = "\n    exclusive: true" if exclusive else ""
    return jobspec(
        f"  - type: node\n    count: {count}{x}\n    with:\n      - type: slot\n        count: 1\n"
        "        label: default\n        with:\n"
        f"          - type: socket\n            count: {sockets}\n            with:\n"
        f"              - type: core\n                count: {cores}\n"
    )


BIG = nodes_req(12)
HALF = nodes_req(5, sockets=1, cores=8)
PART = nodes_req(6, sockets=2, cores=3)
EXCL = nodes_req(4, sockets=1, cores=1, exclusive=True)
SOCKETS = jobspec(
    "  - type: slot\n    count: 6\n    label: default\n    with:\n      - type: socket\n        count: 1\n"
    "        with:\n          - type: core\n            count: 8\n"
)
CORES = jobspec(
    "  - type: slot\n    count: 3\n    label: default\n    with:\n      - type: core\n        count: 5\n"
)
REQUESTS = [BIG, HALF, PART, EXCL, SOCKETS, CORES]
OPS = ["allocate", "allocate_orelse_reserve", "allocate_with_satisfiability", "satisfiability"]


def engine(policy: str, racks: int = 0, nodes: int = 24, fresh: bool = True) -> Engine:
    eng = Engine(generate_graph(racks=racks, nodes=nodes, sockets=2, cores=8), policy=policy)
    eng.traverser.fresh = fresh
    return eng


def full_state(eng: Engine) -> tuple:
    """``snapshot`` plus what only the matcher reads: edge weights, child order, the per-job index."""
    tr = eng.traverser
    return (
        snapshot(eng),
        list(tr.e_weight),
        {k: list(v) for k, v in tr._outedges.items()},
        {j: tr.job_vertices(j) for j in sorted(tr.job_vtx)},
        tr._span_seq,
    )


class FreshDifferential(base.Differential):
    """The shortcuts differential's rules (cancel, set_status via ``_both``) on templates on vs off."""

    @initialize(policy=st.sampled_from(["first", "low", "high", "lonodex"]), racks=st.sampled_from([0, 3]))
    def build(self, policy: str, racks: int) -> None:  # type: ignore[override]
        self.fast = engine(policy, racks)
        self.plain = engine(policy, racks, fresh=False)
        self.nodes = sorted(p for p in self.fast.graph.by_path if p.rsplit("/", 1)[-1].startswith("node"))

    @rule(req=st.sampled_from(REQUESTS), op=st.sampled_from(OPS), repeat=st.integers(1, 3))
    def match(self, req: object, op: str, repeat: int) -> None:
        super().match(req, op, repeat)

    @rule(
        req=st.sampled_from(REQUESTS),
        op=st.sampled_from(OPS[:2]),
        at=st.sampled_from([600, 3600, 7200]),
    )
    def match_later(self, req: object, op: str, at: int) -> None:
        """Matches at other times: templates are kept per window and replayed in others' jobs."""
        a = self.fast.match(req, op=op, at=at)
        b = self.plain.match(req, op=op, at=at)
        assert (a.ok, a.at, a.errno, a.text, a.error) == (b.ok, b.at, b.errno, b.text, b.error)

    @precondition(lambda self: any(s == "allocated" for s in self.fast.jobs.values()))
    @rule(data=st.data(), req=st.sampled_from([HALF, SOCKETS, EXCL]), now=st.sampled_from([0, 1800]))
    def grow(self, data: st.DataObject, req: object, now: int) -> None:
        """A running job grows: templates replayed with a job id that already holds vertices."""
        jobid = data.draw(st.sampled_from(sorted(j for j, s in self.fast.jobs.items() if s == "allocated")))
        self._both("grow", jobid, req, fmt="simple", now=now)

    @precondition(lambda self: any(s == "allocated" for s in self.fast.jobs.values()))
    @rule(data=st.data(), rank=st.integers(min_value=0, max_value=23))
    def release_rank(self, data: st.DataObject, rank: int) -> None:
        jobid = data.draw(st.sampled_from(sorted(j for j, s in self.fast.jobs.items() if s == "allocated")))
        r = f'{{"version": 1, "execution": {{"R_lite": [{{"rank": "{rank}", "children": {{"core": "0-7"}}}}]}}}}'
        self._both("partial_cancel", jobid, r, "rv1exec")

    @precondition(lambda self: any(s == "allocated" for s in self.fast.jobs.values()))
    @rule(data=st.data())
    def shrink(self, data: st.DataObject) -> None:
        jobid = data.draw(st.sampled_from(sorted(j for j, s in self.fast.jobs.items() if s == "allocated")))
        held = [p for p in self.nodes if self.fast.traverser.tags[self.fast.graph.by_path[p]]]
        if held:
            self._both("shrink", jobid, [data.draw(st.sampled_from(held))])

    @invariant()
    def same_state(self) -> None:
        if hasattr(self, "fast"):
            assert full_state(self.fast) == full_state(self.plain)
            assert self.fast.jobs == self.plain.jobs


FreshDifferential.TestCase.settings = settings(
    max_examples=25, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestFreshDifferential = FreshDifferential.TestCase


def replays(eng: Engine) -> tuple[int, int]:
    return tuple(eng.traverser.fresh_stats)  # type: ignore[return-value]


def test_big_match_on_a_free_graph_is_replayed_and_identical() -> None:
    """12 whole nodes: one walked, eleven replayed in select and in update; output and state as the plain walk."""
    for policy in ("first", "low", "high", "lonodex"):
        fast, plain = engine(policy), engine(policy, fresh=False)
        a, b = fast.match(BIG), plain.match(BIG)
        assert a.ok and a.text == b.text
        assert full_state(fast) == full_state(plain)
        sel, upd = replays(fast)
        assert sel >= 11 and upd >= 11, (policy, sel, upd)
        assert replays(plain) == (0, 0)


def test_busy_subtrees_are_walked_plainly() -> None:
    """A node holding anything (a job, a reservation, a down status) is never replayed, and results agree."""
    fast, plain = engine("first"), engine("first", fresh=False)
    for eng in (fast, plain):
        eng.match(CORES)  # 15 cores on the first nodes
        eng.set_status(sorted(p for p in eng.graph.by_path if p.endswith("/node5"))[0], "down")
        eng.match(nodes_req(3), op="allocate_orelse_reserve")
    for _ in range(3):
        a, b = fast.match(BIG, op="allocate_orelse_reserve"), plain.match(BIG, op="allocate_orelse_reserve")
        assert (a.ok, a.at, a.text) == (b.ok, b.at, b.text)
        assert full_state(fast) == full_state(plain)


def test_after_cancel_and_partial_release_nodes_are_fresh_again() -> None:
    """Cancel and partial release of a replayed allocation leave nodes that are replayed again, identically."""
    fast, plain = engine("low"), engine("low", fresh=False)
    for eng in (fast, plain):
        r = eng.match(BIG)
        eng.partial_cancel(
            r.jobid, '{"version": 1, "execution": {"R_lite": [{"rank": "3", "children": {"core": "0-15"}}]}}'
        )
        eng.match(BIG)
        eng.cancel(r.jobid)
    before = replays(fast)
    a, b = fast.match(BIG), plain.match(BIG)
    assert a.ok and a.text == b.text
    assert full_state(fast) == full_state(plain)
    assert replays(fast)[0] > before[0]


def test_switch_off_gives_the_plain_walk() -> None:
    """``fresh = False`` records and replays nothing."""
    eng = engine("first", fresh=False)
    assert eng.match(BIG).ok
    assert replays(eng) == (0, 0)


def test_partly_used_nodes_after_templated_matches() -> None:
    """Nodes left with one free socket each are walked plainly after the templated matches, identically.

    (Sockets are recorded here too -- socket[3] -- but are no twins: GRUG
    numbers cores per node, so the ids below two sockets of a node differ.)
    """
    req = nodes_req(4, sockets=3, cores=8)
    for policy in ("first", "low"):
        engines = []
        for fresh in (True, False):
            eng = Engine(generate_graph(nodes=10, sockets=4, cores=8), policy=policy)
            eng.traverser.fresh = fresh
            engines.append(eng)
        fast, plain = engines
        for _ in range(3):
            a, b = fast.match(req), plain.match(req)
            assert (a.ok, a.text) == (b.ok, b.text)
            assert full_state(fast) == full_state(plain)
        assert replays(fast)[0] >= 2 * 3, replays(fast)  # two matches on fresh nodes: 3 twins each
        fast.cancel(1)
        plain.cancel(1)
        a, b = fast.match(req, op="allocate_orelse_reserve"), plain.match(req, op="allocate_orelse_reserve")
        assert (a.ok, a.at, a.text) == (b.ok, b.at, b.text)
        assert full_state(fast) == full_state(plain)


ONE = nodes_req(1)
SOCKET = jobspec(
    "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: socket\n        count: 1\n"
    "        with:\n          - type: core\n            count: 8\n"
)


def test_templates_are_kept_across_matches() -> None:
    """A one-node (and a one-socket) request is replayed from the library from its second match on.

    The replaying jobs have other ids, other windows (a reservation after
    the graph is full) and other span ids than the recording job: their
    state must be their own, exactly as the plain walk writes it.
    """
    for req in (ONE, SOCKET):
        for policy in ("first", "low"):
            fast, plain = engine(policy, nodes=6), engine(policy, nodes=6, fresh=False)
            results = []
            for k in range(14):
                op = "allocate_orelse_reserve" if k % 2 else "allocate"
                a, b = fast.match(req, op=op), plain.match(req, op=op)
                assert (a.ok, a.jobid, a.at, a.text) == (b.ok, b.jobid, b.at, b.text), (req, policy, k)
                assert full_state(fast) == full_state(plain), (req, policy, k)
                results.append(a)
            assert any(r.at > 0 for r in results)  # some were reservations
            sel, upd = replays(fast)
            assert sel >= 4 and upd >= 4, (policy, sel, upd)
            # cancel everything: the nodes are fresh again and replayed for new jobs (from the
            # second on with the first policy: cancelled jobs leave other edge weights, recorded once)
            for r in results:
                if r.ok:
                    fast.cancel(r.jobid)
                    plain.cancel(r.jobid)
            before = replays(fast)
            for _ in range(2):
                a, b = fast.match(req), plain.match(req)
                assert (a.ok, a.text) == (b.ok, b.text)
                assert full_state(fast) == full_state(plain)
            assert replays(fast)[1] > before[1]


def test_library_is_dropped_when_the_graph_changes() -> None:
    """A change of the graph's structure (here: a node removed) drops every template and shape.

    The matches after it record afresh on the new structure and agree with the plain walk.
    """
    fast, plain = engine("first", nodes=6), engine("first", nodes=6, fresh=False)
    for eng in (fast, plain):
        assert eng.match(ONE).ok and eng.match(ONE).ok
    tr = fast.traverser
    old_lib, old_shapes = tr._flib, tr._fshape
    assert old_lib and old_shapes
    free = next(
        p for p in sorted(fast.graph.by_path) if p.count("/") == 2 and not tr.tags[fast.graph.by_path[p]]
    )
    for eng in (fast, plain):
        eng.remove_subgraph(free)
    assert fast.match(ONE).ok and plain.match(ONE).ok
    # new library and shape cache (the old ones are gone), filled by the match after the change
    assert tr._flib is not old_lib and tr._fshape is not old_shapes
    assert tr._flib and tr._fver == fast.graph.version
    assert full_state(fast) == full_state(plain)
    for _ in range(3):
        a, b = fast.match(ONE), plain.match(ONE)
        assert (a.ok, a.text) == (b.ok, b.text)
        assert full_state(fast) == full_state(plain)


def test_mutable_request_trees_are_not_kept() -> None:
    """Templates of a request tree that could change (a list) are not kept for later matches."""
    fast, plain = engine("first", nodes=6), engine("first", nodes=6, fresh=False)
    mutable = dataclasses.replace(ONE, resources=list(ONE.resources))
    for _ in range(3):
        a, b = fast.match(mutable), plain.match(mutable)
        assert (a.ok, a.text) == (b.ok, b.text)
        assert full_state(fast) == full_state(plain)
    assert not any(ctx[0] == "select" for ctx in fast.traverser._flib)
    assert fast.match(ONE).ok
    assert any(ctx[0] == "select" for ctx in fast.traverser._flib)


def test_library_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """A context keeps at most ``_KEYS_MAX`` keys: past it, it starts over (and keeps working)."""
    monkeypatch.setattr(fresh_module, "_KEYS_MAX", 2)
    fast, plain = engine("first", nodes=12), engine("first", nodes=12, fresh=False)
    for req in (ONE, SOCKET, HALF, ONE, SOCKET, HALF):
        a, b = fast.match(req), plain.match(req)
        assert (a.ok, a.text) == (b.ok, b.text)
        assert full_state(fast) == full_state(plain)
        for tmpls, tries in fast.traverser._flib.values():
            assert len(tmpls) <= 2 and len(tries) <= 2


def test_signatures_of_an_immutable_tree_are_kept_between_selects(monkeypatch: pytest.MonkeyPatch) -> None:
    """An immutable request tree's signatures are computed once, not at every select pass; the
    matches agree with the plain walk, and a mutable tree still gets its signatures anew each pass."""
    calls = [0]
    real = fresh_module._request_sig

    def counting(resources: object, ud: object) -> object:
        calls[0] += 1
        return real(resources, ud)  # type: ignore[arg-type]

    monkeypatch.setattr(fresh_module, "_request_sig", counting)
    fast, plain = engine("first", nodes=6), engine("first", nodes=6, fresh=False)
    for req in (ONE, SOCKET):
        a, b = fast.match(req), plain.match(req)
        assert (a.ok, a.text) == (b.ok, b.text)
    first = calls[0]
    assert first > 0
    for k in range(8):
        req = (ONE, SOCKET)[k % 2]
        op = "allocate_orelse_reserve" if k % 3 else "allocate"
        a, b = fast.match(req, op=op), plain.match(req, op=op)
        assert (a.ok, a.jobid, a.at, a.text) == (b.ok, b.jobid, b.at, b.text), k
        assert full_state(fast) == full_state(plain), k
    assert calls[0] == first  # kept: no signature computed again
    mutable = dataclasses.replace(ONE, resources=list(ONE.resources))
    a, b = (
        fast.match(mutable, op="allocate_orelse_reserve"),
        plain.match(mutable, op="allocate_orelse_reserve"),
    )
    assert (a.ok, a.at, a.text) == (b.ok, b.at, b.text)
    assert calls[0] > first


@pytest.mark.parametrize("tamper", ["none", "targets", "order", "uniq", "size"])
def test_a_twin_is_exactly_the_shape_shifted(tamper: str) -> None:
    """``_fresh_twin`` accepts a node whose subtree is the recorded one shifted, and refuses one whose
    inner edges lead elsewhere, list the children in another order, or differ in a uniq id or size."""
    eng = engine("first", nodes=4)
    g, tr = eng.graph, eng.traverser
    tr._fresh_sync()
    nodes = [g.by_path[p] for p in sorted(g.by_path) if p.count("/") == 2]
    a, b = nodes[0], nodes[2]
    shape, e0a = tr._fresh_shape(a)
    col = g.out[tr.dom]
    sock = next(g.e_dst[e] for e in col[b] if g.v_type[g.e_dst[e]] == "socket")
    e1, e2 = col[sock][0], col[sock][1]
    if tamper == "targets":
        g.e_dst[e1], g.e_dst[e2] = g.e_dst[e2], g.e_dst[e1]
    elif tamper == "order":
        col[sock][0], col[sock][1] = e2, e1
    elif tamper == "uniq":
        g.v_uniq[g.e_dst[e1]] += 1000
    elif tamper == "size":
        g.v_size[g.e_dst[e1]] = 2
    got = tr._fresh_twin(shape, b)
    if tamper == "none":
        assert got == e0a + (b - a)  # GRUG lays each node's vertices and edges out contiguously
        assert tr._fresh_twin(shape, b) == got  # cached
    else:
        assert got is None


@pytest.mark.parametrize("policy", ["first", "low", "high"])
def test_a_lazy_jgf_writer_is_replayed_with_the_records_of_the_plain_walk(policy: str) -> None:
    """The lazy JGF writer (a hierarchy's columns answer) takes update templates as the simple one
    does: its records (vertices, needs, exclusivity, edges), the text it renders and the state are
    the plain walk's, while the update replays subtrees; an eager writer still walks plainly."""
    from fluxlite.writers.jgf import JgfColumnsWriter

    engines, writers = [], []
    for fresh in (True, False):
        eng = engine(policy, nodes=12, fresh=fresh)
        w = JgfColumnsWriter()
        w.lazy = True
        eng.set_writer("jgf", w)
        engines.append(eng)
        writers.append(w)
    fast, plain = engines
    held: list[int] = []
    for k, req in enumerate([ONE, nodes_req(3), SOCKET, ONE, nodes_req(4), EXCL, ONE, nodes_req(2)] * 2):
        a, b = fast.match(req, fmt="jgf"), plain.match(req, fmt="jgf")
        assert (a.ok, a.jobid, a.text) == (b.ok, b.jobid, b.text), k
        if a.ok:
            assert writers[0].emitted == writers[1].emitted, k
            assert writers[0].render(fast.graph) == writers[1].render(plain.graph), k
            held.append(a.jobid)
        assert full_state(fast) == full_state(plain), k
        if len(held) > 2:
            j = held.pop(0)
            fast.cancel(j)
            plain.cancel(j)
            assert full_state(fast) == full_state(plain), k
    assert replays(fast)[1] >= 8, replays(fast)
    # the same session with the eager writer: the update is walked plainly (its text is written per vertex)
    eager = engine(policy, nodes=12)
    eager.set_writer("jgf", JgfColumnsWriter())
    for req in (ONE, ONE, nodes_req(3)):
        assert eager.match(req, fmt="jgf").ok
    assert replays(eager)[1] == 0
