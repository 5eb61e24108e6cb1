"""Attach + allocate leaves exactly the engine state the reference path leaves, on random sessions.

The reference is the path before the grow-path work: every new subtree
primed by the recursive ``_prime`` (``attach_update``), then the ordinary
``update_allocate`` walk.  The fast paths (the column-wise priming of new
subtrees, ``_prime_new``; the fused attach + allocate, ``attach_allocate``)
are switched off for the reference engine.  Two engines run the same random
session (grows of random shapes attached to a child, shrinks, cancels,
matches on the grown graph) and their whole state is compared after every
step: per-vertex spans, tags and windows (and which vertices share one
dict), every aggregate planner, job spans, orderings, counters, the jobs.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import FluxliteError
from fluxlite.jobspec import parse_jobspec
from fluxlite.match._common import UINT64_MAX
from fluxlite.match.update import UpdateStage
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph


def _js(rng: random.Random, node: bool, shape: dict[str, int]) -> Any:
    """A random request of the shapes a grow asks for (nodes, sockets, cores, memory, gpus)."""
    cores = rng.randint(1, shape["cores"])
    extra = ""
    if shape["memory"] and rng.random() < 0.4:
        extra += f", {{type: memory, count: {rng.randint(1, 2)}}}"
    if shape["gpus"] and rng.random() < 0.5:
        extra += ", {type: gpu, count: 1}"
    inner = f"{{type: core, count: {cores}}}{extra}"
    if rng.random() < 0.4:
        inner = f"{{type: socket, count: 1, with: [{inner}]}}"
    slot = f"{{type: slot, count: {rng.randint(1, shape['sockets'])}, label: s, with: [{inner}]}}"
    if node:
        excl = "exclusive: true, " if rng.random() < 0.5 else ""
        res = f"[{{type: node, count: {rng.randint(1, 2)}, {excl}with: [{slot}]}}]"
    else:
        res = f"[{slot}]"
    return _spec(res)


def _spec(res: str) -> Any:
    return parse_jobspec(
        f"version: 1\nresources: {res}\nattributes: {{system: {{duration: 3600}}}}\n"
        "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
    )


def _ids(col: list[Any]) -> list[int]:
    """Which vertices share one dict: each dict numbered by its first vertex."""
    first: dict[int, int] = {}
    return [-1 if d is None else first.setdefault(id(d), v) for v, d in enumerate(col)]


def _trimmed(col: list[Any], empty: Any) -> list[Any]:
    """``col`` without its trailing ``empty`` entries."""
    n = len(col)
    while n and (col[n - 1] is None if empty is None else col[n - 1] == empty):
        n -= 1
    return col[:n]


def fingerprint(eng: Engine) -> dict[str, Any]:
    """The engine's whole state, each per-vertex and per-edge column without its empty tail: an
    attach rolled back (its allocation failed after its vertices were added) leaves their slots at
    the end of the columns, empty, and rustworkx hands out those indices again first, so the next
    vertices get the ids they would have had.  Everything else compares exactly."""
    tr = eng.traverser
    out: dict[str, Any] = {
        "graph": eng.save_state(),
        # (a subsystem no vertex or edge is in is not in the saved state, yet the graph knows it)
        "subsystems": (sorted(eng.graph.paths), sorted(eng.graph.out), sorted(eng.graph.roots)),
        "jobs": (dict(eng.jobs), dict(eng.job_at)),
        "nodes_up": tr.nodes_up,
        "prune": str(tr.prune),
        "span_seq": tr._span_seq,
        "e_weight": _trimmed(list(tr.e_weight), UINT64_MAX),
        "outedges": (tr._outedges_built, {k: list(v) for k, v in tr._outedges.items()}),
        "wide": {k: None if v is None else sorted(v) for k, v in tr._wide_kids.items()},
        "extra": dict(tr._extra_spans),
        "job_vtx": {j: sorted(set(v)) for j, v in tr.job_vtx.items()},
    }
    for name in ("vspans", "allocs", "resvs", "tags", "xspans"):
        col = _trimmed(getattr(tr, name), None)
        out[name] = [None if d is None else dict(d) for d in col]
        out[name + "_shared"] = _ids(col)
    for ss, col in tr.job2span.items():
        out["job2span " + ss] = [None if d is None else dict(d) for d in _trimmed(col, None)]
    for ss, col in tr.subplan.items():
        out["subplan " + ss] = [
            None if p is None else (p.resource_types, [p.resource_total_at(i) for i in range(len(p))])
            for p in _trimmed(col, None)
        ]
    return out


def same(a: Engine, b: Engine) -> None:
    fa, fb = fingerprint(a), fingerprint(b)
    for k in fa:
        assert fa[k] == fb[k], k
    for ss, col in a.traverser.subplan.items():
        other = b.traverser.subplan[ss]
        for v, p in enumerate(col):
            assert (p is None) == (other[v] is None), v
            if p is not None:
                assert p.equals(other[v]), (ss, v)


def _reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(UpdateStage, "_prime_new", lambda *_a: None)
    if hasattr(UpdateStage, "attach_allocate"):
        monkeypatch.setattr(UpdateStage, "attach_allocate", lambda *_a, **_k: None)


@pytest.mark.parametrize("seed", range(6))
def test_random_grow_sessions_leave_the_reference_state(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    shape = {
        "nodes": rng.randint(8, 12),
        "sockets": rng.randint(1, 2),
        "cores": rng.randint(2, 4),
        "memory": rng.choice([0, 2]),
        "gpus": rng.choice([0, 0, 1]),
    }
    policy = rng.choice(["first", "low", "high", "lonode"])
    parent = Engine(generate_graph(**shape), policy=policy)
    # the child's lease: one whole node; its first job: one core
    whole = f"{{type: core, count: {shape['cores']}}}"
    whole = f"[{{type: node, count: 1, with: [{{type: slot, count: 1, label: s, with: [{{type: socket, count: {shape['sockets']}, with: [{whole}]}}]}}]}}]"
    one = "[{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]"
    lease = parent.allocate(_spec(whole), fmt="jgf").text.encode()
    engines = []
    for _ref in (False, True):
        eng = Engine(load_graph(lease, format="jgf"), policy=policy)
        job = eng.allocate(_spec(one), fmt="jgf").jobid
        engines.append((eng, job))
    (fast, job), (slow, job2) = engines
    assert job == job2
    same(fast, slow)
    jobs = [job]
    attached = removed = 0
    grown: list[tuple[int, list[int]]] = []
    for _step in range(14):
        op = rng.random()
        if op < 0.55:
            try:
                sub = parent.allocate(_js(rng, rng.random() < 0.7, shape), fmt="jgf").text.encode()
            except FluxliteError:
                continue
            target = rng.choice(jobs)
            at = rng.choice([0, 0, 10])
            got = []
            for eng, ref in ((fast, False), (slow, True)):
                with monkeypatch.context() as m:
                    if ref:
                        _reference(m)
                    try:
                        got.append(eng.attach(sub, allocate_to=target, at=at, duration=3600))
                    except FluxliteError as exc:
                        got.append(type(exc))
            assert got[0] == got[1]
            if isinstance(got[0], list) and got[0]:
                attached += 1
                grown.append((target, got[0]))
        elif op < 0.65 and grown:
            # give a grown subtree back and remove it: the next attach reuses the handles (holes)
            target, new = grown.pop(rng.randrange(len(grown)))
            g = fast.graph
            newset = set(new)
            tops = [g.path(v, fast.dom) for v in new if g.parent(v, fast.dom) not in newset]
            outs = []
            for eng in (fast, slow):
                try:
                    eng.shrink(target, paths=tops)
                    for p in tops:
                        eng.remove_subgraph(path=p)
                    outs.append(True)
                except FluxliteError as exc:
                    outs.append(type(exc))
            assert outs[0] == outs[1]
            removed += outs[0] is True
        elif op < 0.75:
            js = _js(rng, False, shape)
            outs = []
            for eng in (fast, slow):
                try:
                    r = eng.allocate(js, fmt="simple")
                    outs.append((r.jobid, r.text))
                except FluxliteError as exc:
                    outs.append(type(exc))
            assert outs[0] == outs[1]
            if isinstance(outs[0], tuple):
                jobs.append(outs[0][0])
        elif op < 0.9 and len(jobs) > 1:
            victim = jobs.pop(rng.randrange(len(jobs)))
            outs = []
            for eng in (fast, slow):
                try:
                    eng.cancel(victim)
                    outs.append(True)
                except FluxliteError as exc:
                    outs.append(type(exc))
            assert outs[0] == outs[1]
        else:
            js = _js(rng, False, shape)
            outs = []
            for eng in (fast, slow):
                try:
                    outs.append(eng.allocate_orelse_reserve(js, fmt="simple").text)
                except FluxliteError as exc:
                    outs.append(type(exc))
            assert outs[0] == outs[1]
        same(fast, slow)
        assert recount_errors(fast) == []
    print("attached", attached, "removed", removed)
    assert attached >= 2


@pytest.mark.parametrize("seed", range(4))
def test_whole_node_grows_and_refills_leave_the_reference_state(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Grows of several whole nodes (a MatchGrow's usual subgraph), each shrunk and removed again, so that
    the next attach refills the removed handles: the fast paths leave the reference state every step."""
    rng = random.Random(100 + seed)
    shape = {"nodes": 16, "sockets": 2, "cores": rng.randint(2, 4), "memory": rng.choice([0, 2]), "gpus": seed % 2}
    parent = Engine(generate_graph(**shape), policy=rng.choice(["first", "low", "high"]))
    lease = parent.allocate(_spec("[{type: node, count: 1, exclusive: true, with: [{type: slot, count: 1, "
                                  "label: s, with: [{type: core, count: 1}]}]}]"), fmt="jgf").text.encode()  # fmt: skip
    engines = [Engine(load_graph(lease, format="jgf"), policy="first") for _ in range(2)]
    job = [e.allocate(_spec("[{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]")).jobid for e in engines]
    assert job[0] == job[1]
    same(*engines)
    held: list[tuple[int, list[str]]] = []
    again = 0  # the size of the grow just given back: growing that again refills its handles exactly
    for _step in range(8):
        if held and rng.random() < 0.5:
            pjob, tops = held.pop(rng.randrange(len(held)))
            for eng in engines:
                eng.shrink(job[0], paths=tops)
                for p in tops:
                    eng.remove_subgraph(path=p)
            parent.cancel(pjob)
            again = len(tops)
        else:
            k, again = again or rng.randint(1, 4), 0
            spec = _spec(f"[{{type: node, count: {k}, exclusive: true, with: [{{type: slot, count: 1, label: s, "
                         f"with: [{{type: core, count: {shape['cores']}}}]}}]}}]")  # fmt: skip
            try:
                r = parent.allocate(spec, fmt="jgf")
            except FluxliteError:
                continue
            got = []
            for eng, ref in zip(engines, (False, True)):
                with monkeypatch.context() as m:
                    if ref:
                        _reference(m)
                    got.append(eng.attach(r.text.encode(), allocate_to=job[0], duration=3600))
            assert got[0] == got[1]
            g = engines[0].graph
            newset = set(got[0])
            held.append((r.jobid, [g.path(v) for v in got[0] if g.parent(v) not in newset]))
        same(*engines)
        assert recount_errors(engines[0]) == []


def test_prime_new_leaves_a_vertex_with_two_new_parents_to_the_recursive_priming() -> None:
    """``_prime_new`` primes only new subtrees that are trees: a new leaf reached from two new
    parents, with a new vertex no new root reaches (so that the counts agree), makes it answer None,
    having set nothing."""
    eng = Engine(generate_graph(nodes=1, sockets=1, cores=2), policy="first")
    g, tr = eng.graph, eng.traverser
    root = g.roots["containment"]

    def plans() -> list[Any]:
        return [
            None if p is None else (p.resource_types, [p.resource_total_at(i) for i in range(len(p))])
            for p in tr.subplan["containment"]
        ]

    before = plans()
    # a new node with two sockets and one core below both, and a core no new root reaches (its own
    # parent): as many vertices reached as there are new ones, one of them twice
    new = g.add_vertices_bulk(
        ["node", "socket", "socket", "core", "core"],
        ["node", "socket", "socket", "core", "core"],
        ["node9", "socket90", "socket91", "core900", "core901"],
        [9, 90, 91, 900, 901],
        [-1] * 5,
        [1] * 5,
        [""] * 5,
        paths={
            "containment": [
                "/c/node9",
                "/c/node9/socket90",
                "/c/node9/socket91",
                "/c/node9/socket90/core900",
                "/c/node9/socket91/core901",
            ]
        },
    )
    n9, s0, s1, c, z = new
    g.add_edges_bulk([root, n9, n9, s0, s1, z], [n9, s0, s1, c, c, z], "containment", "contains")
    tr._sync_edges()
    n = len(g.v_type)
    for col in tr.subplan.values():
        col.extend([None] * (n - len(col)))
    assert tr._prime_new("containment", new, set(new)) is None
    assert plans()[: len(before)] == before
    assert all(p is None for p in tr.subplan["containment"][len(before) :])
    # the same subtree without the second edge into the core is primed
    g.remove_vertices(new)
    new = g.add_vertices_bulk(
        ["node", "socket", "core"],
        ["node", "socket", "core"],
        ["node9", "socket90", "core900"],
        [9, 90, 900],
        [-1] * 3,
        [1] * 3,
        [""] * 3,
        paths={"containment": ["/c/node9", "/c/node9/socket90", "/c/node9/socket90/core900"]},
    )
    g.add_edges_bulk([root, new[0], new[1]], new, "containment", "contains")
    tr._sync_edges()
    n = len(g.v_type)
    for col in tr.subplan.values():
        col.extend([None] * (n - len(col)))
    got = tr._prime_new("containment", new, set(new))
    assert got is not None and got[1] == [new[0]]
