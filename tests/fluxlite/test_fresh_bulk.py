"""The bulk allocation of a subtree attached just before leaves exactly the walk's engine state.

``Engine.attach(..., allocate_to=job)`` (the receiving end of a MatchGrow) attaches a subgraph and
allocates it to the job.  ``update_allocate`` records the new subtrees in bulk
(``UpdateStage._upd_fresh_dfv``: no check or mark per new vertex, families of leaves written a column
at a time); ``traverser.fresh_bulk = False`` walks them as any other items.  Two engines run the same
random session (grows of random shapes, node-exclusive policies, grows of a job that already holds
other nodes, grows at another window, attaches without an allocation followed by one, shrinks and
removals that make the next attach refill freed handles, matches, cancels) and their whole state is
compared after every step, including the job's vertex order and the per-vertex change counters.
Failures injected at every aggregate change of the bulk walk leave both engines the same.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import FluxliteError
from fluxlite.match.update import UpdateStage
from fluxlite.planner import PlannerMulti
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.test_attach_equivalence import _js, _spec, fingerprint


def _state(eng: Engine) -> dict[str, Any]:
    tr = eng.traverser
    out = fingerprint(eng)
    out["job_vtx order"] = {j: list(v) for j, v in tr.job_vtx.items()}
    out["epoch"] = dict(tr._epoch)
    out["wide order"] = dict(tr._wide_kids)
    for ss, col in tr.subplan.items():
        out["planners " + ss] = [
            None
            if p is None
            else (p._counter, dict(p._spans), [(q._times, q._rem, q._ref, q._spans) for q in p._planners])
            for p in col
        ]
    return out


#: what a failed attach must leave as it was (past the old end of a column: nothing)
_STATE_KEYS = ("jobs", "job_vtx", "vspans", "allocs", "resvs", "tags", "xspans", "job2span containment",
               "extra", "wide", "graph")  # fmt: skip


def _same(a: Engine, b: Engine) -> None:
    fa, fb = _state(a), _state(b)
    for k in fa:
        assert fa[k] == fb[k], k


@pytest.fixture
def bulk_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many new subtrees the bulk path recorded (so that no session passes without it)."""
    calls = [0]
    orig = UpdateStage._upd_fresh_dfv

    def counted(self: Any, *a: Any) -> int:
        calls[0] += self.fresh_bulk
        return orig(self, *a)

    monkeypatch.setattr(UpdateStage, "_upd_fresh_dfv", counted)
    return calls


def _pair(lease: bytes, policy: str) -> tuple[Engine, Engine]:
    fast = Engine(load_graph(lease, format="jgf"), policy=policy)
    slow = Engine(load_graph(lease, format="jgf"), policy=policy)
    slow.traverser.fresh_bulk = False
    return fast, slow


def _both(engines: tuple[Engine, Engine], fn: Any, *args: Any, **kw: Any) -> Any:
    """``fn(engine, *args, **kw)`` on both engines (a name: that method): the same answer or error."""
    outs = []
    for eng in engines:
        try:
            outs.append(getattr(eng, fn)(*args, **kw) if isinstance(fn, str) else fn(eng, *args, **kw))
        except FluxliteError as exc:
            outs.append((type(exc), str(exc)))
    assert outs[0] == outs[1]
    return outs[0]


_ONE_CORE = _spec("[{type: slot, count: 1, label: s, with: [{type: core, count: 1}]}]")


def _jobid(e: Engine, method: str, *args: Any, text: bool = False, **kw: Any) -> Any:
    r = getattr(e, method)(*args, **kw)
    return (r.jobid, r.text) if text else r.jobid


@pytest.mark.parametrize("seed", range(8))
def test_random_grow_sessions_bulk_equals_walk(seed: int, bulk_calls: list[int]) -> None:
    rng = random.Random(seed)
    shape = {
        "nodes": rng.randint(8, 12),
        "sockets": rng.randint(1, 2),
        "cores": rng.randint(2, 4),
        "memory": rng.choice([0, 2]),
        "gpus": rng.choice([0, 0, 1]),
    }
    policy = rng.choice(["first", "low", "high", "lonodex", "hinodex", "first"])
    parent = Engine(generate_graph(**shape), policy=rng.choice(["first", "low"]))
    whole = f"{{type: core, count: {shape['cores']}}}"
    whole = (
        f"[{{type: node, count: 1, with: [{{type: slot, count: 1, label: s, with: [{{type: socket, "
        f"count: {shape['sockets']}, with: [{whole}]}}]}}]}}]"
    )
    lease = parent.allocate(_spec(whole), fmt="jgf").text.encode()
    engines = _pair(lease, policy)
    fast, slow = engines
    jobs = [_both(engines, _jobid, "allocate", _ONE_CORE)]
    grown: list[tuple[int, list[str]]] = []
    for _step in range(16):
        op = rng.random()
        if op < 0.5:
            try:
                r = parent.allocate(_js(rng, rng.random() < 0.7, shape), fmt="jgf")
            except FluxliteError:
                continue
            target = rng.choice(jobs)
            at = rng.choice([0, 0, 0, 10])
            got = _both(engines, "attach", r.text.encode(), allocate_to=target, at=at, duration=3600)
            if isinstance(got, list) and got:
                g = fast.graph
                newset = set(got)
                grown.append((target, [g.path(v) for v in got if g.parent(v) not in newset]))
        elif op < 0.58:
            # attached first, allocated with a second call (the bulk path still applies: nothing in between)
            try:
                r = parent.allocate(_js(rng, True, shape), fmt="jgf")
            except FluxliteError:
                continue
            _both(engines, "attach", r.text.encode())
            jid = max(jobs) + 100
            res = _both(engines, _jobid, "update_allocate", jid, r.text, fmt=None, duration=3600)
            if res == jid:
                jobs.append(jid)
        elif op < 0.68 and grown:
            target, tops = grown.pop(rng.randrange(len(grown)))

            def give_back(e: Engine, target: int = target, tops: list[str] = tops) -> bool:
                e.shrink(target, paths=tops)
                for p in tops:
                    e.remove_subgraph(path=p)
                return True

            _both(engines, give_back)
        elif op < 0.8:
            js = _js(rng, False, shape)
            got = _both(engines, _jobid, "allocate", js, fmt="simple", text=True)
            if isinstance(got[0], int):
                jobs.append(got[0])
        elif len(jobs) > 1:
            victim = jobs.pop(rng.randrange(len(jobs)))
            _both(engines, "cancel", victim)
        _same(fast, slow)
    assert recount_errors(fast) == []
    assert bulk_calls[0] >= 1


def _grow_setup(policy: str = "first") -> tuple[Engine, tuple[Engine, Engine], int]:
    parent = Engine(generate_graph(nodes=12, sockets=2, cores=4, memory=2, gpus=1), policy="first")
    lease = parent.allocate(_spec("[{type: node, count: 2, with: [{type: slot, count: 1, label: s, with: "
                                  "[{type: socket, count: 2, with: [{type: core, count: 4}]}]}]}]"), fmt="jgf").text.encode()  # fmt: skip
    engines = _pair(lease, policy)
    job = _both(engines, _jobid, "allocate", _ONE_CORE)
    return parent, engines, job


@pytest.mark.parametrize("policy", ["first", "lonodex"])
def test_failures_in_the_bulk_walk_leave_the_same_state(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A planner failure at each aggregate change of the allocation: both paths undo to the same state."""
    parent, engines, job = _grow_setup(policy)
    text = parent.allocate(_spec("[{type: node, count: 3, with: [{type: slot, count: 1, label: s, with: "
                                 "[{type: socket, count: 2, with: [{type: core, count: 4}]}]}]}]"), fmt="jgf").text  # fmt: skip
    before = _state(engines[0])
    orig = PlannerMulti.add_span_amounts
    k = 0
    while True:
        count = [0]

        def failing(self: PlannerMulti, *a: Any, count: list[int] = count, k: int = k) -> int:
            count[0] += 1
            if count[0] == k + 1:
                raise FluxliteError("injected")
            return orig(self, *a)

        outs = []
        for eng in engines:
            count[0] = 0
            with monkeypatch.context() as m:
                m.setattr(PlannerMulti, "add_span_amounts", failing)
                try:
                    eng.attach(text.encode(), allocate_to=job, duration=3600)
                    outs.append("ok")
                except FluxliteError as exc:
                    outs.append(str(exc))
        assert outs[0] == outs[1]
        if outs[0] == "ok":
            break
        _same(*engines)
        after = _state(engines[0])
        # the attached vertices are gone again and the jobs' state is as before
        # the per-vertex columns keep their length, empty past the old end)
        for x, old in before.items():
            new = after[x]
            if x not in _STATE_KEYS:  # (change counters, span ids a failed call handed out, caches)
                continue
            if isinstance(old, list) and isinstance(new, list) and len(new) > len(old):
                assert all(v is None or v == -1 for v in new[len(old) :]), x
                new = new[: len(old)]
            assert new == old, x
        k += 1
    assert k >= 5  # the failures covered the walk's aggregate changes
    _same(*engines)


def test_refusals_are_the_walks(bulk_calls: list[int]) -> None:
    """An item that is not free, an item listed twice, a grow onto held vertices: same errors, no change."""
    parent, engines, job = _grow_setup()
    r = parent.allocate(_spec("[{type: node, count: 2, with: [{type: slot, count: 1, label: s, with: "
                              "[{type: socket, count: 1, with: [{type: core, count: 2}]}]}]}]"), fmt="jgf")  # fmt: skip
    _both(engines, "attach", r.text.encode(), allocate_to=job, duration=3600)
    _same(*engines)
    # the same document again: the vertices exist (reused), the job holds them: refused
    got = _both(engines, "attach", r.text.encode(), allocate_to=job, duration=3600)
    assert isinstance(got, tuple)
    _same(*engines)
    # a new job onto the lease's busy core together with new nodes: refused as a whole
    busy = engines[0].traverser.job_vertices(job)
    assert busy
    r2 = parent.allocate(_spec("[{type: node, count: 1, with: [{type: slot, count: 1, label: s, with: "
                               "[{type: socket, count: 1, with: [{type: core, count: 1}]}]}]}]"), fmt="jgf")  # fmt: skip
    got = _both(engines, "attach", r2.text.encode(), allocate_to=job, duration=3600, at=0)
    _same(*engines)
    assert bulk_calls[0] >= 2


def _doc(vertices: list[tuple[str, str, int, int, bool]]) -> str:
    """A JGF document of ``vertices`` (path, type, id, size, exclusive), each with an edge from its parent."""
    nodes, edges, ids = [], [], {}
    for k, (path, typ, vid, size, excl) in enumerate(vertices):
        ids[path] = str(k)
        meta: dict[str, Any] = {
            "type": typ,
            "id": vid,
            "rank": -1,
            "size": size,
            "paths": {"containment": path},
        }
        if excl:
            meta["exclusive"] = True
        nodes.append({"id": str(k), "metadata": meta})
    for path, *_ in vertices:
        parent = path.rsplit("/", 1)[0]
        if parent in ids:
            edges.append({"source": ids[parent], "target": ids[path]})
    return json.dumps({"graph": {"nodes": nodes, "edges": edges}})


def _random_subtrees(rng: random.Random, first: int, sizes: bool) -> list[tuple[str, str, int, int, bool]]:
    """New nodes of random shapes under /cluster0: sockets of 1-70 cores (a wide vertex past 64), GPUs,
    memory beside the sockets (a node with leaf and inner children), random exclusivity and sizes."""
    out = [("/cluster0", "cluster", 0, 1, False)]
    for n in range(first, first + rng.randint(1, 3)):
        node = f"/cluster0/node{n}"
        out.append((node, "node", n, 1, rng.random() < 0.3))
        for s in range(rng.randint(0, 2)):
            sock = f"{node}/socket{s}"
            out.append((sock, "socket", s, 1, rng.random() < 0.7))
            cores = rng.choice([1, 2, 4, 4, 16, 66]) if rng.random() < 0.9 else rng.randint(60, 70)
            kinds = [("core", c) for c in range(cores)] + [("gpu", g) for g in range(rng.randint(0, 1))]
            if rng.random() < 0.2:
                rng.shuffle(kinds)
            if rng.random() < 0.2:  # a family of one type and several sizes
                kinds = [("memory", m) for m in range(rng.randint(2, 4))]
            for typ, i in kinds:
                size = rng.randint(1, 3) if sizes and typ == "memory" else 1
                out.append((f"{sock}/{typ}{i}", typ, i, size, rng.random() < 0.95))
        for m in range(rng.randint(0, 2)):
            size = rng.randint(1, 4) if sizes else 1
            out.append((f"{node}/memory{m}", "memory", m, size, rng.random() < 0.8))
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_items_on_fresh_subtrees(seed: int, bulk_calls: list[int]) -> None:
    """Hand-made subtrees attached, then allocated with random units (some more than a vertex has) and
    random exclusivity, as a grow or as a new job, at random windows: the bulk path gives the walk's
    answers and state every step."""
    rng = random.Random(1000 + seed)
    parent = Engine(generate_graph(nodes=2, sockets=1, cores=4, memory=2), policy="first")
    lease = parent.allocate(_spec("[{type: node, count: 1, with: [{type: slot, count: 1, label: s, with: "
                                  "[{type: socket, count: 1, with: [{type: core, count: 4}]}]}]}]"), fmt="jgf").text.encode()  # fmt: skip
    engines = _pair(lease, ["first", "lonodex", "low", "hinodex"][seed % 4])
    job = _both(engines, _jobid, "allocate", _ONE_CORE)
    jobs = [job]
    first = 10
    for _step in range(10):
        verts = _random_subtrees(rng, first, sizes=True)
        first += 4
        doc = _doc(verts)
        at = rng.choice([0, 0, 50])
        if rng.random() < 0.5:
            target = rng.choice(jobs)
            _both(engines, "attach", doc, allocate_to=target, at=at, duration=3600)
        else:
            _both(engines, "attach", doc)
            # the same paths with other units and exclusivity, allocated with nothing in between
            ones = rng.random() < 0.4  # one unit of everything (the bulk path's one number of units)
            asked = [(p, t, i, 1 if ones else max(1, s - rng.randint(0, 2)), t != "cluster" and rng.random() < 0.9)
                     for p, t, i, s, _x in verts]  # fmt: skip
            if rng.random() < 0.25:  # one vertex asked for more units than it has: refused
                k = rng.randrange(1, len(asked))
                asked[k] = (*asked[k][:3], verts[k][3] + 1, True)
            jid = rng.choice([*jobs, max(jobs) + 1])

            def alloc(e: Engine, asked: list = asked, jid: int = jid, at: int = at) -> int:
                # (Engine.update_allocate reads units from a document, which must give the graph's sizes)
                items = [(e.graph.vertex_by_path(p), u, x) for p, _t, _i, u, x in asked]
                return e._allocate_items(jid, items, at, 3600, None, False).jobid

            res = _both(engines, alloc)
            if res == jid and jid not in jobs:
                jobs.append(jid)
        _same(*engines)
        if rng.random() < 0.3 and len(jobs) > 1:
            victim = jobs.pop(rng.randrange(1, len(jobs)))
            _both(engines, "cancel", victim)
            _same(*engines)
    assert recount_errors(engines[0]) == []
    assert bulk_calls[0] >= 3


def test_first_refusal_is_named_as_the_walk_names_it(bulk_calls: list[int]) -> None:
    """Items that already held vertices among new ones: the check still names the first refused item."""
    parent, engines, job = _grow_setup()
    other = _both(engines, _jobid, "allocate", _ONE_CORE)
    busy = [
        v
        for j in (job, other)
        for v in engines[0].traverser.job_vertices(j)
        if engines[0].graph.v_type[v] == "core"
    ]
    assert len(busy) == 2
    r = parent.allocate(_spec("[{type: node, count: 1, with: [{type: slot, count: 1, label: s, with: "
                              "[{type: socket, count: 1, with: [{type: core, count: 2}]}]}]}]"), fmt="jgf")  # fmt: skip
    for order in (busy, busy[::-1]):

        def alloc(e: Engine, order: list[int] = order) -> int:
            new = e.attach(r.text.encode())
            items = [(v, 1, e.graph.v_type[v] != "node") for v in new]
            items[1:1] = [(order[0], 1, True)]
            items.append((order[1], 1, True))
            try:
                return e._allocate_items(other + 1, items, 0, 3600, None, False).jobid
            finally:
                e._detach(new)

        got = _both(engines, alloc)
        assert isinstance(got, tuple) and engines[0].graph.path(order[0]) in got[1]
        _same(*engines)
    assert bulk_calls[0] == 0  # refused before the walk


@pytest.mark.parametrize("attached", [True, False], ids=["fresh subtree", "existing vertices"])
@pytest.mark.parametrize("taken", ["free", "held"])
def test_items_given_as_columns_are_items(attached: bool, taken: str) -> None:
    """``update_allocate(..., columns=...)`` (what ``Engine.attach`` hands it, no tuple per item) leaves the
    state, answer and error that the same items as tuples leave: on a subtree just attached (the bulk
    path) and on existing vertices (the items are then made from the columns), granted or refused."""
    parent = Engine(generate_graph(nodes=4, sockets=2, cores=4), policy="first")
    node = "[{type: node, count: 1, with: [{type: slot, count: 1, label: s, with: [{type: socket, count: 1, with: "
    lease = parent.allocate(_spec(node + "[{type: core, count: 2}]}]}]}]"), fmt="jgf").text.encode()
    grow = parent.allocate(_spec(node + "[{type: core, count: 3}]}]}]}]"), fmt="jgf").text.encode()
    results = []
    for as_columns in (True, False):
        eng = Engine(load_graph(lease, format="jgf"), policy="first")
        job = eng.allocate(_ONE_CORE).jobid
        g = eng.graph
        if attached:
            vs = eng.attach(grow)
        else:
            vs = [v for v in g.vertices() if g.v_type[v] == "core" and not eng.traverser.tags[v]]
        if taken == "held":
            eng.allocate(_ONE_CORE)  # a core the items list is someone else's now
            vs = [v for v in g.vertices() if g.v_type[v] == "core"]
        units = [g.v_size[v] for v in vs]
        excl = [g.v_type[v] == "core" for v in vs]
        try:
            if as_columns:
                res = eng._allocate_items(job, None, 0, 3600, None, False, (vs, units, excl))
            else:
                res = eng._allocate_items(job, list(zip(vs, units, excl)), 0, 3600, None, False)
            out: Any = (res.ok, res.text)
        except FluxliteError as exc:
            out = (type(exc), str(exc))
        results.append((out, _state(eng)))
    assert results[0][0] == results[1][0]
    assert results[0][1] == results[1][1]
