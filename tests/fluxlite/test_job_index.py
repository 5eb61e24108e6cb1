"""The per-job vertex index: what a job holds is found without scanning the graph.

Cancel, shrink, partial release and ``job_items`` read the traverser's
index of the vertices each job holds, so they touch only the job's
vertices and their ancestors: every per-vertex column is instrumented and
any read or write outside that set (or a scan of a whole column) fails.
"""

from __future__ import annotations

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import NODE, SOCKET, jobspec, recount_errors
from tests.fluxlite.test_elastic import TIMES, _instrument

TWO_FULL_NODES = jobspec(
    "  - type: node\n    count: 2\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: socket\n            count: 2\n            with:\n"
    "              - type: core\n                count: 4\n"
)


def _scan(eng: Engine, jobid: int) -> list[int]:
    """The job's vertices by a full scan of the tags column (the reference)."""
    return [v for v in eng.graph.vertices() if eng.traverser.tags[v] and jobid in eng.traverser.tags[v]]


def _allowed(eng: Engine, jobid: int) -> set[object]:
    g, dom = eng.graph, eng.traverser.dom
    out: set[object] = set()
    for v in _scan(eng, jobid):
        out.add(v)
        out.update(g.ancestors(v, dom))
    return out


def _setup() -> tuple[Engine, int, int, str, int]:
    """Busy nodes, a job with two whole nodes grown by one socket elsewhere, another job.

    Returns (engine, job, other job, path of the grown socket, rank of one whole node).
    """
    eng = Engine(generate_graph(nodes=100, sockets=2, cores=4), policy="low")
    for _ in range(5):
        eng.allocate(NODE)
    job = eng.allocate(TWO_FULL_NODES).jobid
    nodes = sorted({p.split("/")[2] for p, _, _ in eng.job_items(job)})
    assert len(nodes) == 2
    assert eng.grow(job, SOCKET, fmt="simple").ok
    grown = [p for p, _, _ in eng.job_items(job) if p.split("/")[2] not in nodes]
    socket = min(grown, key=len)
    assert socket.rsplit("/", 1)[-1].startswith("socket")
    other = eng.allocate(SOCKET).jobid
    rank = eng.graph.v_rank[eng.graph.vertex_by_path(f"/cluster0/{nodes[1]}")]
    return eng, job, other, socket, rank


def _rank_r(rank: int) -> str:
    return (
        f'{{"version": 1, "execution": {{"R_lite": [{{"rank": "{rank}", "children": {{"core": "0-7"}}}}]}}}}'
    )


def _check(eng: Engine, seen: set[object], allowed: set[object], what: str) -> None:
    outside = seen - allowed
    assert not outside, f"{what} touched outside the job and its ancestors: {sorted(map(str, outside))[:10]}"


def test_index_equals_a_full_scan_through_grow_shrink_release_and_cancel() -> None:
    """After every operation the index answers exactly what a scan of the graph answers."""
    eng, job, other, socket, rank = _setup()
    tr = eng.traverser
    for j in (job, other, 1, 5):
        assert tr.job_vertices(j) == _scan(eng, j)
    eng.shrink(job, paths=[socket])
    assert tr.job_vertices(job) == _scan(eng, job)
    eng.partial_cancel(job, _rank_r(rank))
    assert tr.job_vertices(job) == _scan(eng, job) != []
    assert list(tr.iter_jobs()) == sorted(eng.jobs)
    eng.cancel(job)
    assert tr.job_vertices(job) == [] == _scan(eng, job)
    assert job not in tr.job_vtx
    assert tr.job_vertices(other) == _scan(eng, other)
    assert recount_errors(eng, TIMES) == []


def test_job_operations_touch_only_the_job_and_its_ancestors() -> None:
    """job_items, shrink, partial release and cancel read no vertex outside the job and its ancestors."""
    eng, job, other, socket, rank = _setup()
    others_before = eng.job_items(other)
    allowed = _allowed(eng, job)
    seen = _instrument(eng)

    items = eng.job_items(job)
    assert len(items) == 2 * (2 + 8) + (1 + 4)  # two whole nodes' sockets and cores, one socket more
    _check(eng, seen, allowed, "job_items")

    seen.clear()
    assert not eng.shrink(job, paths=[socket])
    _check(eng, seen, allowed, "shrink")

    seen.clear()
    assert not eng.partial_cancel(job, _rank_r(rank))
    _check(eng, seen, allowed, "partial release")

    seen.clear()
    eng.cancel(job)
    _check(eng, seen, allowed, "cancel")

    assert eng.job_items(other) == others_before
    assert recount_errors(eng, TIMES) == []


def test_restored_engine_has_the_same_index() -> None:
    """save_state / restore_state rebuild the index: every job's vertices match a scan."""
    eng, job, _other, _socket, _rank = _setup()
    back = Engine.restore_state(eng.save_state())
    for j in sorted(eng.jobs):
        assert back.traverser.job_vertices(j) == _scan(back, j)
        assert sorted(back.job_items(j)) == sorted(eng.job_items(j))
    back.cancel(job)
    assert back.traverser.job_vertices(job) == []
    assert recount_errors(back, TIMES) == []
