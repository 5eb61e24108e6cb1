"""Single-level elasticity: grow, shrink, attach + update, and what they may touch."""

from __future__ import annotations

import io
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.cli import query as q
from fluxlite.errors import BusyError, CommandError, StateError, UnknownJobError, UnsatisfiableError
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import HUGE, NODE, SOCKET, observable, recount_errors, snapshot

TIMES = [0, 1, 3599, 3600, 7200]


def _engine(nodes: int = 4, policy: str = "low") -> Engine:
    return Engine(generate_graph(nodes=nodes, sockets=2, cores=4), policy=policy)


def _held(eng: Engine, jobid: int) -> set[tuple[str, int, bool]]:
    return set(eng.job_items(jobid))


# ---------------------------------------------------------------------- grow
def test_grow_adds_resources_to_the_job_and_keeps_what_it_had() -> None:
    eng = _engine()
    job = eng.allocate(NODE).jobid
    before = _held(eng, job)
    r = eng.grow(job, SOCKET, fmt="simple")
    assert r.ok and r.jobid == job
    after = _held(eng, job)
    assert before < after  # nothing lost, something gained
    new_paths = {p for p, _, _ in after - before}
    assert any(p.endswith("socket0") or p.endswith("socket1") for p in new_paths)
    assert all("node0" not in p for p in new_paths)  # node0 was already the job's, whole
    assert recount_errors(eng, TIMES) == []
    eng.cancel(job)
    assert eng.jobs == {}
    assert recount_errors(eng, TIMES) == []


def test_failed_grow_changes_nothing() -> None:
    eng = _engine(nodes=1)
    job = eng.allocate(NODE).jobid
    snap = snapshot(eng)
    with pytest.raises(BusyError):
        eng.grow(job, SOCKET)
    assert snapshot(eng) == snap
    with pytest.raises(UnsatisfiableError):
        eng.grow(job, HUGE)
    assert snapshot(eng) == snap
    with pytest.raises(UnknownJobError):
        eng.grow(99, SOCKET)
    assert snapshot(eng) == snap


def test_grow_without_satisfiability_says_busy_and_walks_once() -> None:
    """satisfiability=False: a failed grow is a BusyError saying the question was not asked,
    placed by one walk (no second walk at the end of the window); nothing changes."""
    eng = _engine(nodes=1)
    job = eng.allocate(NODE).jobid
    snap = snapshot(eng)
    ops: list[str] = []
    match = eng.match

    def spy(*a: Any, **k: Any) -> Any:
        ops.append(k["op"])
        return match(*a, **k)

    eng.match = spy  # type: ignore[method-assign]
    for spec in (SOCKET, HUGE):  # busy now, and impossible on this graph: the same answer
        with pytest.raises(BusyError, match="was not checked"):
            eng.grow(job, spec, satisfiability=False)
        assert snapshot(eng) == snap
    assert ops == ["allocate", "allocate"]
    with pytest.raises(UnsatisfiableError):  # the default still tells the two apart
        eng.grow(job, HUGE)
    assert ops[-1] == "allocate_with_satisfiability"
    assert snapshot(eng) == snap
    eng.cancel(job)
    job = eng.allocate(SOCKET).jobid
    r = eng.grow(job, SOCKET, fmt="simple", satisfiability=False)  # it does grow when it fits
    assert r.ok and r.jobid == job and len(_held(eng, job)) > 1
    assert recount_errors(eng, TIMES) == []


# ---------------------------------------------------------------------- shrink
def test_shrink_gives_back_exactly_the_grown_part() -> None:
    eng = _engine()
    job = eng.allocate(NODE).jobid
    snap = observable(eng, TIMES)
    held = _held(eng, job)
    eng.grow(job, SOCKET)
    grown = {p for p, _, _ in _held(eng, job) - held}
    socket = min(grown, key=len)
    assert eng.shrink(job, paths=[socket]) is False
    assert _held(eng, job) == held
    assert observable(eng, TIMES) == snap
    assert recount_errors(eng, TIMES) == []


def test_shrink_by_path_of_part_of_a_node_keeps_the_rest() -> None:
    eng = _engine()
    job = eng.allocate(NODE).jobid
    node = next(p for p, _, _ in eng.job_items(job) if p.endswith("/node0/socket1")).rsplit("/", 1)[0]
    assert eng.shrink(job, paths=[node + "/socket1"]) is False
    left = {p for p, _, _ in eng.job_items(job)}
    assert not any("/socket1" in p for p in left)
    assert any("/socket0/" in p for p in left)
    assert recount_errors(eng, TIMES) == []
    # the rest of the node is still the job's: releasing it all ends the job
    assert eng.shrink(job, paths=[node]) is True
    assert job not in eng.jobs
    assert recount_errors(eng, TIMES) == []


def test_bad_shrinks_change_nothing() -> None:
    eng = _engine()
    a = eng.allocate(NODE).jobid
    b = eng.allocate(NODE).jobid
    b_node = "/".join(eng.job_items(b)[0][0].split("/")[:3])
    assert b_node.rsplit("/", 1)[-1].startswith("node")
    snap = snapshot(eng)
    with pytest.raises(StateError, match="does not hold"):
        eng.shrink(a, paths=[b_node])  # b's resources, not a's
    with pytest.raises(CommandError):
        eng.shrink(a, paths=["/cluster0/node77"])
    with pytest.raises(UnknownJobError):
        eng.shrink(42, paths=[b_node])
    with pytest.raises(StateError):
        eng.shrink(a, paths=["/cluster0"])
    assert snapshot(eng) == snap


# ---------------------------------------------------------------------- attach + update cost
class _Touch(list):  # type: ignore[type-arg]
    """A column that records which vertex indices were read or written."""

    def __init__(self, data: list[Any], seen: set[Any]) -> None:
        super().__init__(data)
        self.seen = seen

    def __getitem__(self, i: Any) -> Any:
        self.seen.add(i if isinstance(i, int) else "slice")
        return super().__getitem__(i)

    def __setitem__(self, i: Any, v: Any) -> None:
        self.seen.add(i if isinstance(i, int) else "slice")
        super().__setitem__(i, v)

    def __iter__(self) -> Any:
        self.seen.add("all")
        return super().__iter__()


def _instrument(eng: Engine) -> set[Any]:
    seen: set[Any] = set()
    tr, g = eng.traverser, eng.graph
    for name in ("vspans", "allocs", "resvs", "tags", "xspans"):
        setattr(tr, name, _Touch(getattr(tr, name), seen))
    for table in (tr.subplan, tr.job2span):
        for ss in list(table):
            table[ss] = _Touch(table[ss], seen)
    for name in ("v_type", "v_size", "v_status", "v_name", "v_id", "v_rank"):
        setattr(g, name, _Touch(getattr(g, name), seen))
    tr.refresh_walk_cols()  # the update walk reads these columns through one tuple
    return seen


def test_attach_and_update_touch_only_the_subgraph_and_its_ancestors() -> None:
    # the subgraph: node 100 of a twin graph, as a MatchGrow reply carries it (JGF of a match)
    twin = Engine(generate_graph(nodes=101, sockets=2, cores=4), policy="high")
    sub = twin.allocate(NODE, fmt="jgf").text
    assert '"/cluster0/node100"' in sub
    eng = Engine(generate_graph(nodes=100, sockets=2, cores=4), policy="low")
    for _ in range(5):
        eng.allocate(NODE)  # busy state elsewhere in the graph
    n0 = len(eng.graph)
    seen = _instrument(eng)
    new = eng.attach(sub)
    r = eng.update_allocate(77, sub, format="jgf")
    assert r.ok
    g = eng.graph
    root = g.roots["containment"]
    allowed = set(new) | {root}
    assert len(new) == 1 + 2 + 8 and min(new) >= n0
    touched = {x for x in seen if not (isinstance(x, int) and x >= n0)}
    assert touched <= allowed, (
        f"touched outside the subgraph and its ancestors: {sorted(map(str, touched - allowed))}"
    )
    assert recount_errors(eng, TIMES) == []


# ---------------------------------------------------------------------- REPL
_TAIL = (
    "attributes:\n  system:\n    duration: 3600\n"
    "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
)
NODE_YAML = (
    "version: 1\nresources:\n  - type: node\n    count: 1\n    with:\n"
    "      - type: slot\n        count: 1\n        label: default\n        with:\n"
    "          - type: socket\n            count: 2\n            with:\n"
    "              - type: core\n                count: 4\n" + _TAIL
)
SOCKET_YAML = (
    "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
    "      - type: socket\n        count: 1\n        with:\n"
    "          - type: core\n            count: 4\n" + _TAIL
)


def _repl(eng: Engine, lines: list[str]) -> tuple[str, str]:
    from fluxlite.cli._registry import install_query_commands

    install_query_commands()
    out, err = io.StringIO(), io.StringIO()
    ctx = q.QueryContext(engine=eng, match_format="simple", out=out, err=err, stdout=out)
    q.run_commands(ctx, lines)
    return out.getvalue(), err.getvalue()


def test_repl_grow_shrink_update(tmp_path: Any) -> None:
    node = tmp_path / "node.yaml"
    sock = tmp_path / "socket.yaml"
    node.write_text(NODE_YAML)
    sock.write_text(SOCKET_YAML)
    eng = _engine()
    out, err = _repl(
        eng,
        [
            f"match allocate {node}",
            f"grow 1 {sock}",
            "shrink 1 path /cluster0/node1",
            "shrink 1 path /cluster0/node3/socket0",
            f"grow 9 {sock}",
            "grow x",
        ],
    )
    assert "RESOURCES=GROWN" in out
    assert err.count("ERROR") == 3, err
    assert "nonexistent job 9" in err
    assert "does not hold" in err
    assert recount_errors(eng, TIMES) == []
    # update: allocate exactly what a JGF lists, to a new job id
    twin = _engine()
    for n in range(3):
        twin.set_status(f"/cluster0/node{n}", "down")  # so its match lands on node3, free in eng
    jgf = tmp_path / "r.json"
    jgf.write_text(twin.allocate(SOCKET, fmt="jgf").text)
    out, err = _repl(eng, [f"update allocate jgf {jgf} 5 0 3600", f"update allocate jgf {jgf} 5 0 3600"])
    assert "INFO: JOBID=5" in out and "RESOURCES=ALLOCATED" in out
    assert "existing Jobid" in err
    assert 5 in eng.jobs
    # the same resources again, to another job: they are taken, nothing changes
    snap = snapshot(eng)
    out, err = _repl(eng, [f"update allocate jgf {jgf} 6 0 3600"])
    assert "No matching resources found" in out and "ERROR" in err
    assert snapshot(eng) == snap


def test_attach_with_allocation_in_one_step_and_rollback() -> None:
    twin = Engine(generate_graph(nodes=6, sockets=2, cores=4), policy="high")
    for n in range(4):
        twin.set_status(f"/cluster0/node{n}", "down")
    sub = twin.allocate(NODE, fmt="jgf").text  # a node of twin beyond eng's 4 nodes
    eng = _engine()
    job = eng.allocate(NODE).jobid
    held = _held(eng, job)
    # a second engine does the same in two steps: the results must agree
    ref = _engine()
    ref.allocate(NODE)
    ref_new = ref.attach(sub)
    ref.update_allocate(job, sub, format="jgf", duration=eng.traverser.graph_end)
    new = eng.attach(sub, allocate_to=job, fmt="simple")
    assert len(new) == len(ref_new) == 1 + 2 + 8
    assert "node" in eng.last_text
    assert _held(eng, job) > held
    assert observable(eng, TIMES) == observable(ref, TIMES)
    assert recount_errors(eng, TIMES) == []
    # the same subgraph again: its vertices exist and are taken -> refused, nothing changes
    snap = snapshot(eng)
    with pytest.raises(StateError):
        eng.attach(sub, allocate_to=job + 1)
    assert snapshot(eng) == snap
    # a new subgraph whose allocation fails (the job id is a reservation) is detached again
    other = Engine(generate_graph(nodes=7, sockets=2, cores=4), policy="high")
    for n in range(6):
        other.set_status(f"/cluster0/node{n}", "down")
    sub2 = other.allocate(NODE, fmt="jgf").text
    eng.jobs[99] = "reserved"  # a reserved job cannot take an allocation
    seen = (observable(eng, TIMES), dict(eng.graph.by_path), sorted(eng.graph.vertices()))
    try:
        n_before = len(eng.graph)
        with pytest.raises(StateError):
            eng.attach(sub2, allocate_to=99)
        assert len(eng.graph) == n_before
        assert "/cluster0/node6" not in eng.graph.by_path
        assert (observable(eng, TIMES), dict(eng.graph.by_path), sorted(eng.graph.vertices())) == seen
    finally:
        del eng.jobs[99]
    assert recount_errors(eng, TIMES) == []


def test_partial_cancel_of_one_socket_keeps_the_node_and_the_other_socket() -> None:
    """A JGF naming a node and one socket below it releases that socket; the node stays the job's."""
    from fluxlite.writers.jgf import subgraph_jgf

    eng = _engine(policy="first")
    job = eng.allocate(NODE).jobid
    g = eng.graph
    node = g.vertex_by_path("/".join(eng.job_items(job)[0][0].split("/")[:3]))
    s0, s1 = (g.vertex_by_path(f"{g.path(node)}/socket{i}") for i in (0, 1))
    assert eng.partial_cancel(job, subgraph_jgf(g, [node, *g.subtree(s0)]), "jgf") is False
    assert recount_errors(eng, TIMES) == []
    assert all("/socket0" not in p for p, _, _ in eng.job_items(job))
    assert eng.partial_cancel(job, subgraph_jgf(g, [node, *g.subtree(s1)]), "jgf") is True
    assert eng.jobs == {}
    assert recount_errors(eng, TIMES) == []


def test_shrink_of_resources_added_over_another_window() -> None:
    """A job grown over a different window keeps two aggregate spans; releasing the grown part drains only it."""
    twin = Engine(generate_graph(nodes=6, sockets=2, cores=4), policy="high")
    for n in range(4):
        twin.set_status(f"/cluster0/node{n}", "down")
    sub = twin.allocate(NODE, fmt="jgf").text
    eng = _engine()
    job = eng.allocate(NODE).jobid  # window [0, 3600)
    before = observable(eng, TIMES)
    new = eng.attach(sub, allocate_to=job)  # window [0, end of the graph)
    g = eng.graph
    node = next(g.path(v) for v in new if g.v_type[v] == "node")
    assert eng.shrink(job, paths=[node]) is False
    assert job in eng.jobs
    assert recount_errors(eng, TIMES) == []
    eng.remove_subgraph(path=node)
    assert observable(eng, TIMES) == before


def test_shrink_by_the_jgf_of_a_grow_on_a_node_the_job_already_uses() -> None:
    """The grow's JGF lists the shared cluster and node; only the grown socket is released."""
    eng = _engine(nodes=1)
    job = eng.allocate(SOCKET).jobid  # socket0 of node0
    held = _held(eng, job)
    grown = eng.grow(job, SOCKET, fmt="jgf")  # socket1 of the same node
    assert '"/cluster0/node0"' in grown.text and '"/cluster0"' in grown.text
    assert eng.shrink(job, jgf=grown.text) is False
    assert _held(eng, job) == held
    assert recount_errors(eng, TIMES) == []


def test_cancel_visits_only_the_jobs_part_of_a_wide_vertex() -> None:
    """Cancelling a one-node job under a 200-node cluster visits that node's subtree, not every node."""
    eng = Engine(generate_graph(nodes=200, sockets=2, cores=4), policy="first")
    jobs = [eng.allocate(NODE).jobid for _ in range(5)]
    grown = eng.grow(jobs[2], NODE)
    assert grown.ok
    before = observable(eng, TIMES)
    eng.cancel(jobs[2])
    assert eng.traverser.total_preorder <= 1 + 2 * (1 + 2 + 8)
    assert recount_errors(eng, TIMES) == []
    # the other jobs are intact, and the freed nodes are usable again
    assert before[0].keys() - {jobs[2]} == observable(eng, TIMES)[0].keys()
    assert eng.allocate(NODE).ok and eng.allocate(NODE).ok
    assert recount_errors(eng, TIMES) == []


# ------------------------------------------- grow onto a vertex the job already holds
LATER = [*TIMES, 7201, 10799, 10800]


def _no_span_left(eng: Engine) -> list[int]:
    tr = eng.traverser
    return [v for v, d in enumerate(tr.vspans) if d]


@pytest.mark.parametrize("window", [(0, 3600), (1800, 3600), (7200, 3600)])
def test_grow_onto_a_vertex_the_job_holds_is_refused_and_changes_nothing(window: tuple[int, int]) -> None:
    """A job holds a vertex once (Fluxion: one span per job and vertex; its update refuses a known
    job with a different R). The second span used to lose its table entry: cancel left it behind."""
    eng = _engine(nodes=1)
    before = observable(eng, LATER)
    got = eng.allocate(SOCKET, fmt="jgf")
    job = got.jobid
    snap = snapshot(eng)
    at, duration = window
    with pytest.raises(StateError, match="already held by job"):
        eng.update_allocate(job, got.text, at=at, duration=duration)
    assert snapshot(eng) == snap
    assert recount_errors(eng, TIMES) == []
    eng.cancel(job)
    assert _no_span_left(eng) == []
    assert recount_errors(eng, LATER) == []
    assert observable(eng, LATER) == before


def test_grow_under_a_node_the_job_holds_whole_is_refused() -> None:
    """With node_exclusive a listed core takes its node whole again: refused when the job uses the node."""
    import json

    eng = Engine(generate_graph(nodes=2, sockets=2, cores=4), policy="lonodex")
    before = observable(eng, TIMES)
    got = eng.allocate(SOCKET, fmt="jgf")
    job = got.jobid
    doc = json.loads(got.text)
    core = next(n for n in doc["graph"]["nodes"] if n["metadata"]["type"] == "core")
    core["metadata"]["exclusive"] = False
    doc["graph"] = {"nodes": [core], "edges": []}
    snap = snapshot(eng)
    with pytest.raises(StateError, match="node0 is already used by job"):
        eng.update_allocate(job, json.dumps(doc), at=7200, duration=3600)
    assert snapshot(eng) == snap
    eng.cancel(job)
    assert _no_span_left(eng) == []
    assert recount_errors(eng, TIMES) == []
    assert observable(eng, TIMES) == before


def test_update_under_a_node_another_job_holds_whole_is_refused_and_changes_nothing() -> None:
    """With node_exclusive the walk takes a listed core's node whole: when another job uses that node
    over the window the update is refused before anything changes (it used to fail half-way in the
    planner, leaving the node's and the cluster's aggregates wrong); once that job is gone it goes."""
    import json

    eng = Engine(generate_graph(nodes=2, sockets=2, cores=4), policy="lonodex")
    res = eng.allocate(SOCKET, fmt="jgf")
    first, got = res.jobid, json.loads(res.text)
    core = next(n for n in got["graph"]["nodes"] if n["metadata"]["paths"]["containment"].endswith("core7"))
    core["metadata"]["exclusive"] = False
    doc = json.dumps({"graph": {"nodes": [core], "edges": []}})
    snap = snapshot(eng)
    with pytest.raises(StateError, match="node0 is in use by another job"):
        eng.update_allocate(99, doc, at=0, duration=3600)
    assert snapshot(eng) == snap
    assert recount_errors(eng, TIMES) == []
    # a window after the other job's end does not meet it: accepted, and exact
    assert eng.update_allocate(99, doc, at=7200, duration=3600).ok
    assert recount_errors(eng, LATER) == []
    eng.cancel(99)
    eng.cancel(first)
    assert _no_span_left(eng) == []


def test_grow_onto_new_vertices_over_another_window_still_works() -> None:
    """The refusal is only for vertices the job holds: socket1 over a later window is added and released."""
    eng = _engine(nodes=1)
    before = observable(eng, LATER)
    job = eng.allocate(SOCKET).jobid  # socket0
    twin = _engine(nodes=1)
    twin.allocate(SOCKET)
    other = twin.allocate(SOCKET, fmt="jgf").text  # socket1 and its cores, with the shared path
    assert "socket1" in other
    r = eng.update_allocate(job, other, at=7200, duration=3600)
    assert r.ok
    assert any("socket1" in p for p, _, _ in _held(eng, job))
    assert recount_errors(eng, LATER) == []
    eng.cancel(job)
    assert _no_span_left(eng) == []
    assert recount_errors(eng, LATER) == []
    assert observable(eng, LATER) == before
