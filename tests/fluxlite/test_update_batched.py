"""``update_allocate`` and ``cancel`` leave exactly the state the general walks leave.

``update_allocate`` records the listed vertices directly from their marks
(``UpdateStage._update_items``) and ``cancel`` clears leaves that hold the
same shared dicts without a call each (``ReleaseStage._mod_kids``); with
``batched = False`` on the traverser both take the general walks.  Random
sessions run through two engines, one each way: exact-item allocations (whole
nodes, some cores, sockets, non-exclusive parents, over overlapping windows,
grows, reservations), matches, cancels and refusals, on generated graphs, the
grid machine (a ``network`` subsystem beside containment) and a GRUG-loaded
graph with two subsystems, under node-exclusive policies too.  After every
step the whole engine state is compared: each vertex's spans, tables, tags
and windows, every aggregate planner's spans and totals, the job records and
index, the change counters, the wide vertices' job children, the span
counter, the edge marks and weights, and the output text.  A refusal leaves
the state unchanged.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.errors import FluxliteError
from fluxlite.readers import generate_graph, load_graph
from fluxlite.sim.deadline.placement import Machine
from tests.conftest import RESOURCE, need
from tests.fluxlite.helpers import jobspec, snapshot

POWER = RESOURCE / "grugs" / "power.graphml"

NODE_CORES = jobspec(
    "  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: core\n            count: 2\n"
)


def full_state(eng: Engine) -> tuple:
    """Everything the update and release walks write, span ids included."""
    tr = eng.traverser
    return (
        snapshot(eng),
        {j: list(v) for j, v in tr.job_vtx.items()},
        {j: tr.job_vertices(j) for j in sorted(tr.job_vtx)},
        dict(tr._epoch),
        {k: None if v is None else list(v) for k, v in tr._wide_kids.items()},
        {k: list(v) for k, v in tr._extra_spans.items()},
        tr._span_seq,
        tr.token,
        list(tr.e_needs),
        list(tr.e_excl),
        list(tr.e_token),
        list(tr.e_weight),
        {k: list(v) for k, v in tr._outedges.items()},
        dict(eng.job_at),
        (tr.total_preorder, tr.total_postorder),
    )


def _pair(make: Any) -> tuple[Engine, Engine, list[int]]:
    a, b = make(), make()
    b.traverser.batched = False
    used: list[int] = []
    real = a.traverser._update_items

    def counting(*args: Any) -> Any:
        rc = real(*args)
        if rc is not None:
            used.append(rc)
        return rc

    a.traverser._update_items = counting  # type: ignore[method-assign]
    return a, b, used


def _subtree(eng: Engine, v: int) -> list[int]:
    return eng.graph.subtree(v, eng.traverser.dom)


def _random_items(eng: Engine, rng: random.Random) -> list[tuple[int, int, bool]]:
    g = eng.graph
    tr = eng.traverser
    dom = tr.dom
    nodes = [v for v in g.vertices() if g.v_type[v] == "node"]
    items: list[tuple[int, int, bool]] = []
    for n in rng.sample(nodes, rng.randint(1, min(4, len(nodes)))):
        sub = _subtree(eng, n)
        leaves = [v for v in sub if not any(col[v] for col in g.out.values())]
        kind = rng.random()
        if kind < 0.4:  # the whole node, exclusively (what the grid allocators hand over)
            items.extend((v, g.v_size[v], True) for v in sub)
        elif kind < 0.6:  # some leaves, the node listed non-exclusive or not at all
            if rng.random() < 0.5:
                items.append((n, 1, False))
            items.extend((v, g.v_size[v], rng.random() < 0.9) for v in rng.sample(leaves, rng.randint(1, len(leaves))))
        elif kind < 0.8:  # one internal vertex below the node with everything under it
            inner = [v for v in sub if v != n and any(col[v] for col in g.out.values())] or [n]
            top = rng.choice(inner)
            items.extend((v, g.v_size[v], True) for v in _subtree(eng, top))
        else:  # leaves only, some with fewer units than they have
            for v in rng.sample(leaves, rng.randint(1, len(leaves))):
                items.append((v, rng.randint(1, g.v_size[v]), True))
    if rng.random() < 0.1:
        items.append((g.roots[dom], 1, False))
    if rng.random() < 0.3:
        rng.shuffle(items)
    if rng.random() < 0.05 and items:
        items.append(items[0])  # a vertex listed twice: the general walk takes it
    return items


def _outcome(fn: Any, *args: Any, **kw: Any) -> tuple:
    try:
        r = fn(*args, **kw)
    except FluxliteError as exc:
        return ("error", type(exc).__name__, str(exc))
    return ("ok", getattr(r, "ok", None), getattr(r, "at", None), getattr(r, "text", None))


def run_session(make: Any, seed: int, steps: int, grid: bool = False) -> int:
    """Drive two engines (batched and general) with one random session; return how often the direct path ran."""
    rng = random.Random(seed)
    a, b, used = _pair(make)
    assert full_state(a) == full_state(b)
    jobid = 1
    for _step in range(steps):
        op = rng.random()
        live = sorted(a.jobs)
        at = rng.choice((0, 0, 100, 500, 1000, 1500))
        dur = rng.choice((100, 600, 1000, 3600))
        if op < 0.55 or not live:
            items = _random_items(a, rng)
            fmt = rng.choice((None, "simple", "simple", "pretty_simple", "jgf"))
            reserve = rng.random() < 0.2
            target = jobid
            if live and rng.random() < 0.15:
                target = rng.choice(live)  # a grow (refused for a vertex the job holds)
            else:
                jobid += 1
            before = full_state(a)
            ra = _outcome(a._allocate_items, target, list(items), at, dur, fmt, reserve)
            rb = _outcome(b._allocate_items, target, list(items), at, dur, fmt, reserve)
            assert ra == rb, (seed, _step, items)
            if ra[0] == "error":
                assert full_state(a) == before, (seed, _step, "a refusal changed the state")
        elif op < 0.65:
            js = None if grid else NODE_CORES
            if js is not None:
                ra = _outcome(a.match, js, op="allocate_orelse_reserve", jobid=jobid, at=at)
                rb = _outcome(b.match, js, op="allocate_orelse_reserve", jobid=jobid, at=at)
                jobid += 1
                assert ra == rb
        elif op < 0.72 and grid:
            # the grid allocator's whole-node items on the batched engine; the same items on the other
            ga = a.grid
            k = rng.randint(1, 6)
            before = full_state(a)
            placed: list[Any] = []
            real = a._allocate_items

            def spy(*args: Any, _real: Any = real, _placed: list[Any] = placed) -> Any:
                _placed.append(args)
                return _real(*args)

            a._allocate_items = spy  # type: ignore[method-assign]
            try:
                ra = _outcome(ga.allocate_deadline, k, at, at + dur * 3, now=0, duration=dur, jobid=jobid)
            finally:
                del a._allocate_items
            if placed:
                rb = _outcome(b._allocate_items, *placed[0])
                assert ra[0] == rb[0] == "ok"
            else:
                assert full_state(a) == before
            jobid += 1
        else:
            j = rng.choice(live)
            a.cancel(j)
            b.cancel(j)
        assert full_state(a) == full_state(b), (seed, _step)
    for j in sorted(a.jobs):
        a.cancel(j)
        b.cancel(j)
    assert full_state(a) == full_state(b)
    return len(used)


@pytest.mark.parametrize("policy", ["low", "first", "lonodex", "hinodex"])
def test_generated_graph_sessions(policy: str) -> None:
    """cluster -> rack -> node -> socket -> core sessions give the general walks' state after every step."""

    def make() -> Engine:
        return Engine(generate_graph(racks=2, nodes=6, sockets=2, cores=4), policy=policy)

    ran = sum(run_session(make, seed, 60) for seed in range(4))
    assert ran > 20  # the direct path did the work (node-exclusive policies: outside exclusive vertices)


def test_wide_vertex_sessions() -> None:
    """A root with more than 64 nodes (its children the job reached are remembered) gives the same state."""

    def make() -> Engine:
        return Engine(generate_graph(nodes=70, sockets=1, cores=2), policy="first")

    assert run_session(make, 11, 80) > 20


def test_grid_machine_sessions() -> None:
    """The deadline simulator's machine (containment plus a network subsystem), its allocator's whole nodes."""

    def make() -> Engine:
        return Machine(6, 4, 4, strategy="count", backend="grid").engine

    assert sum(run_session(make, 100 + seed, 80, grid=True) for seed in range(3)) > 60


@pytest.mark.parametrize("subsystems", [("containment",), ("containment", "power")])
def test_grug_graph_sessions(subsystems: tuple[str, ...]) -> None:
    """A GRUG-loaded graph with two subsystems (containment and power), walked with one or both."""
    need(POWER)

    def make() -> Engine:
        return Engine(load_graph(POWER), policy="low", subsystems=subsystems)

    assert run_session(make, 7, 60) > 10
