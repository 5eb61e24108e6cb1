"""The update walk's leaf families in bulk leave exactly the one-by-one walk's state and output.

After a select, the update walk records the leaf children of a vertex (the cores of a socket) that
all take the same dicts a column at a time (``UpdateStage._upd_family``), and lists a new job's
children of a wide vertex as it records them instead of scanning them again;
``traverser.family = False`` takes the leaves one by one and scans.  Busy sessions in small
(``allocate_orelse_reserve`` until the graph is full and reservations stand, cancels, grows of
running jobs, matches at other times, leaves held by many jobs) run through both; every answer and
output and the whole state (shared dicts, span ids, the job's vertex order, wide-vertex lists,
every planner) must agree after every step.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import FluxliteError
from fluxlite.jobspec import parse_jobspec
from fluxlite.match.update import UpdateStage
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.test_fresh_bulk import _same


def _request(rng: random.Random, cores: int) -> Any:
    return _spec_d(_resources(rng, cores), rng.choice([600, 3600, 7200]))


def _spec_d(res: str, duration: int) -> Any:
    return parse_jobspec(
        f"version: 1\nresources: {res}\nattributes: {{system: {{duration: {duration}}}}}\n"
        "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
    )


def _resources(rng: random.Random, cores: int) -> str:
    """Whole sockets (the bench's busy requests), part of a socket's cores, or a node."""
    k = rng.choice([cores, cores, cores, cores, max(1, cores // 2), 1])
    inner = f"{{type: socket, count: {rng.randint(1, 2)}, with: [{{type: core, count: {k}}}]}}"
    slot = f"{{type: slot, count: {rng.randint(1, 2)}, label: s, with: [{inner}]}}"
    if rng.random() < 0.4:
        excl = "exclusive: true, " if rng.random() < 0.3 else ""
        res = f"[{{type: node, count: {rng.randint(1, 3)}, {excl}with: [{slot}]}}]"
    else:
        res = f"[{slot}]"
    return res


@pytest.fixture
def family_hits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many families the bulk path recorded (so that no session passes without it)."""
    hits = [0]
    orig = UpdateStage._upd_family

    def counted(self: Any, *a: Any) -> int | None:
        got = orig(self, *a)
        hits[0] += got is not None
        return got

    monkeypatch.setattr(UpdateStage, "_upd_family", counted)
    return hits


#: (policy, nodes, cores per socket, steps): 70 nodes make the root a wide vertex (more than 64 children)
CASES = [
    ("first", 6, 16, 50),
    ("first", 70, 4, 30),
    ("low", 6, 16, 50),
    ("high", 6, 16, 50),
    ("lonode", 6, 16, 50),
    ("locality", 6, 16, 50),
    ("high", 70, 2, 30),
    ("lonodex", 6, 16, 30),
]


@pytest.mark.parametrize(("policy", "nodes", "cores", "steps"), CASES)
def test_busy_sessions_family_equals_one_by_one(
    policy: str, nodes: int, cores: int, steps: int, family_hits: list[int]
) -> None:
    rng = random.Random(4 + nodes)
    shape = {"nodes": nodes, "sockets": 2, "cores": cores, "gpus": rng.choice([0, 1])}
    engines = [Engine(generate_graph(**shape), policy=policy) for _ in range(2)]
    engines[1].traverser.family = False
    fast = engines[0]
    jobs: list[int] = []

    def both(fn: Any) -> Any:
        outs = []
        for eng in engines:
            try:
                r = fn(eng)
                outs.append((r.ok, r.jobid, r.at, r.text) if hasattr(r, "ok") else r)
            except FluxliteError as exc:
                outs.append((type(exc), str(exc)))
        assert outs[0] == outs[1]
        return outs[0]

    for _step in range(steps):
        op = rng.random()
        if op < 0.6 or not jobs:
            js = _request(rng, cores)
            got = both(lambda e, js=js: e.match(js, op="allocate_orelse_reserve"))
            if isinstance(got, tuple) and got[0] is True:
                jobs.append(got[1])
        elif op < 0.7:
            js = _request(rng, cores)
            at = rng.choice([100, 5000])
            got = both(lambda e, js=js, at=at: e.match(js, op="allocate", at=at))
            if isinstance(got, tuple) and got[0] is True:
                jobs.append(got[1])
        elif op < 0.8:
            # a running job grows (the walk with a job that already holds vertices)
            running = [j for j in jobs if fast.jobs.get(j) == "allocated"]
            if running:
                j = rng.choice(running)
                js = _request(rng, cores)
                both(lambda e, j=j, js=js: e.grow(j, js, fmt="simple"))
        else:
            victim = jobs.pop(rng.randrange(len(jobs)))
            both(lambda e, v=victim: e.cancel(v))
        _same(*engines)
    assert recount_errors(fast) == []
    if not policy.endswith("nodex"):  # (a node-exclusive policy takes nodes whole: another path)
        assert family_hits[0] >= 3


def _graph(rng: random.Random, nodes: int) -> Any:
    """Nodes of a socket of 8 cores and a socket of 3 memory vertices of 2 units; each parent's edges in
    random order (so that a family's handles are not in the walk's order)."""
    verts = [("/cluster0", "cluster", 0, 1)]
    for n in range(nodes):
        node = f"/cluster0/node{n}"
        verts += [
            (node, "node", n, 1),
            (f"{node}/socket0", "socket", 0, 1),
            (f"{node}/socket1", "socket", 1, 1),
        ]
        verts += [(f"{node}/socket0/core{c}", "core", c, 1) for c in range(8)]
        verts += [(f"{node}/socket1/memory{m}", "memory", m, 2) for m in range(3)]
    ids = {p: str(k) for k, (p, *_r) in enumerate(verts)}
    nodes_ = [{"id": ids[p], "metadata": {"type": t, "id": i, "rank": -1, "size": s, "paths": {"containment": p}}}
              for p, t, i, s in verts]  # fmt: skip
    edges = [{"source": ids[p.rsplit("/", 1)[0]], "target": ids[p]} for p, *_r in verts[1:]]
    rng.shuffle(edges)
    return load_graph(json.dumps({"graph": {"nodes": nodes_, "edges": edges}}).encode(), format="jgf")


@pytest.mark.parametrize(("policy", "nodes"), [("first", 1), ("high", 2), ("first", 3)])
def test_families_out_of_order_sized_and_held_by_many_jobs(
    policy: str, nodes: int, family_hits: list[int]
) -> None:
    """Families whose handles are not in sibling order, of leaves with several units (a pruning type),
    and held by more jobs than share dicts (reservations stacked on one node)."""
    rng = random.Random(nodes)
    engines = [Engine(_graph(random.Random(nodes), nodes), policy=policy, prune_filters="ALL:core,ALL:memory")
               for _ in range(2)]  # fmt: skip
    engines[1].traverser.family = False
    cores = _spec_d(
        "[{type: slot, count: 1, label: s, with: [{type: socket, count: 1, with: [{type: core, count: 8}]}]}]",
        600,
    )
    mem = _spec_d(
        "[{type: slot, count: 1, label: s, with: [{type: socket, count: 1, with: [{type: memory, count: 6}]}]}]",
        600,
    )
    part = _spec_d(
        "[{type: slot, count: 1, label: s, with: [{type: socket, count: 1, with: [{type: core, count: 3}]}]}]",
        900,
    )
    jobs: list[int] = []
    for _step in range(45):
        if jobs and rng.random() < 0.1:
            victim = jobs.pop(rng.randrange(len(jobs)))
            outs = [e.cancel(victim) for e in engines]
        else:
            js = rng.choice([cores, cores, mem, mem, part])
            outs = [
                (r.ok, r.jobid, r.at, r.text)
                for r in (e.match(js, op="allocate_orelse_reserve") for e in engines)
            ]
            assert outs[0] == outs[1]
            if outs[0][0]:
                jobs.append(outs[0][1])
        _same(*engines)
    assert recount_errors(engines[0]) == []
    assert family_hits[0] >= 3
