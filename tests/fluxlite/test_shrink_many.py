"""Shrinking a job by many paths at once: the same state as the per-group scan it replaced, in linear time.

``ReleaseStage._release_groups`` decides, per released subtree, which listed
vertices keep something of the job below them (``_keeps_below``).  It used to
scan all of the job's vertices once per subtree (a 64-node shrink: 64 scans of
~2,500 vertices); it now finds each subtree's vertices of the job once for all
subtrees (``_job_under_each``).  These tests run random sessions twice, once
with the old scan forced, and compare everything the engine holds.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.match.release import ReleaseStage
from fluxlite.readers.generate import generate_graph
from fluxlite.writers.jgf import subgraph_jgf
from tests.fluxlite.helpers import jobspec, recount_errors, snapshot

TIMES = [0, 1, 1800, 3599, 3600, 7200]


def _spec(nodes: int, sockets: int, cores: int) -> Any:
    if nodes:
        return jobspec(
            f"- type: node\n  count: {nodes}\n  with:\n  - type: slot\n    count: 1\n    label: default\n"
            f"    with:\n    - type: socket\n      count: {sockets}\n      with:\n      - type: core\n"
            f"        count: {cores}\n"
        )
    return jobspec(
        f"- type: slot\n  count: 1\n  label: default\n  with:\n  - type: socket\n    count: 1\n    with:\n"
        f"    - type: core\n      count: {cores}\n"
    )


_RELEASE_GROUPS = ReleaseStage.release_groups


def _without_under(self: Any, jobid: int, groups: Any, under: Any = None) -> bool:
    """release_groups without the subtree lists a caller (Engine.shrink) hands it."""
    return _RELEASE_GROUPS(self, jobid, groups)


def _session(seed: int, old_scan: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[Engine, list[Any]]:
    """Random jobs, grows and shrinks by several paths (whole nodes, sockets, cores, nested ones)."""
    with monkeypatch.context() as m:
        if old_scan:
            # no subtree lists: every group's _keeps_below scans all of the job's vertices (the old code)
            m.setattr(ReleaseStage, "_job_under_each", lambda self, jobid, roots: dict.fromkeys(roots))
            m.setattr(ReleaseStage, "release_groups", _without_under)
        rng = random.Random(seed)
        eng = Engine(generate_graph(nodes=6, sockets=2, cores=4), policy=rng.choice(["first", "low", "high"]))
        g = eng.graph
        results: list[Any] = []
        jobs: list[int] = []
        for _ in range(24):
            op = rng.random()
            if op < 0.35 or not jobs:
                r = eng.match(
                    _spec(rng.choice([0, 1, 2]), rng.choice([1, 2]), rng.choice([1, 2, 4])), "allocate"
                )
                results.append(("alloc", r.ok, r.jobid if r.ok else None))
                if r.ok:
                    jobs.append(r.jobid)
            elif op < 0.6:
                job = rng.choice(jobs)
                try:
                    eng.grow(job, _spec(rng.choice([0, 1]), 1, rng.choice([1, 2, 4])))
                    results.append(("grow", job, True))
                except Exception as exc:  # busy, unsatisfiable: the same in both runs
                    results.append(("grow", job, type(exc).__name__))
            elif op < 0.8:
                # a partial cancel naming nodes and some of their sockets: one group per node (rank),
                # each node listed with something of the job left below it
                job = rng.choice(jobs)
                held = eng.traverser.job_vertices(job)
                nodes = [v for v in held if g.v_type[v] == "node"]
                if not nodes:
                    continue
                listed: list[int] = []
                for node in rng.sample(nodes, k=min(len(nodes), rng.choice([1, 2, 3]))):
                    socks = [v for v in held if g.v_type[v] == "socket" and g.parent(v) == node]
                    listed += [node] + [
                        x for sk in rng.sample(socks, k=rng.randint(0, len(socks))) for x in g.subtree(sk)
                    ]
                try:
                    full = eng.partial_cancel(job, subgraph_jgf(g, listed), "jgf")
                    results.append(("partial", job, sorted(listed), full))
                    if full:
                        jobs.remove(job)
                except Exception as exc:
                    results.append(("partial", job, sorted(listed), type(exc).__name__))
            else:
                job = rng.choice(jobs)
                held = [v for v in eng.traverser.job_vertices(job) if g.v_type[v] != "cluster"]
                if not held:
                    continue
                pick = rng.sample(held, k=min(len(held), rng.choice([1, 2, 3, 5, 8])))
                paths = sorted({g.path(v) for v in pick})
                try:
                    full = eng.shrink(job, paths=paths)
                    results.append(("shrink", job, paths, full))
                    if full:
                        jobs.remove(job)
                except Exception as exc:
                    results.append(("shrink", job, paths, type(exc).__name__))
            results.append(snapshot(eng))
        assert recount_errors(eng, TIMES) == []
        return eng, results


@pytest.mark.parametrize("seed", range(40))
def test_shrink_by_many_paths_matches_the_per_group_scan(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    _, new = _session(seed, False, monkeypatch)
    _, old = _session(seed, True, monkeypatch)
    assert new == old


def test_keeps_below_with_the_subtree_list_equals_the_scan() -> None:
    """The two ways of answering ``_keeps_below`` agree for partial listings and nested roots, and the
    subtree list is not used when something listed lies outside it."""
    eng = Engine(generate_graph(nodes=3, sockets=2, cores=4), policy="first")
    job = eng.allocate(_spec(2, 2, 4)).jobid
    tr = eng.traverser
    g = eng.graph
    held = tr.job_vertices(job)
    node, other = (v for v in held if g.v_type[v] == "node")
    socket = next(v for v in held if g.v_type[v] == "socket" and g.parent(v) == node)
    core = next(v for v in held if g.parent(v) == socket)
    under = tr._job_under_each(job, [node, socket])  # nested roots: every root above gets the vertex
    assert core in under[node] and core in under[socket] and socket in under[node]
    assert under == {r: tr.job_vertices_under(job, [r])[r] for r in (node, socket)}
    for root, released in (
        (node, {node, socket}),  # node and socket listed, the socket's cores stay: both keep something
        (node, {node}),
        (node, set(under[node])),  # the whole subtree: nothing stays below
        (socket, {socket, core}),
        (node, {node, other}),  # a listed vertex outside the subtree: the full scan must answer
    ):
        want = tr._keeps_below(job, root, released)
        assert tr._keeps_below(job, root, released, under[root]) == want
    assert tr._keeps_below(job, node, {node, socket}) == {node, socket}
    assert tr._keeps_below(job, node, set(under[node])) == set()


@pytest.mark.parametrize("seed", range(6))
def test_bulk_removal_leaves_what_removal_one_vertex_at_a_time_leaves(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ResourceGraph.remove_vertices tells the traverser once (vertices_removed): the engine after
    removing subtrees (some held, forced) is the one the per-vertex notification leaves."""

    def run(bulk: bool) -> tuple:
        with monkeypatch.context() as m:
            if not bulk:  # remove_vertices then calls vertex_removed once a vertex
                m.setattr(type(eng_probe.traverser), "vertices_removed", None)
            rng = random.Random(seed)
            eng = Engine(generate_graph(nodes=5, sockets=2, cores=4), policy="low")
            for _ in range(4):
                eng.match(_spec(rng.choice([0, 1]), 1, rng.choice([1, 4])), "allocate")
            g = eng.graph
            nodes = [v for v in g.vertices() if g.v_type[v] == "node"]
            paths = [g.path(v) for v in rng.sample(nodes, k=3)]
            removed = eng.remove_subgraph(paths=paths, force=True)
            return snapshot(eng), sorted(removed), recount_errors(eng, TIMES)

    eng_probe = Engine(generate_graph(nodes=1, sockets=1, cores=1))
    got = run(True)
    assert got == run(False) and got[2] == []
