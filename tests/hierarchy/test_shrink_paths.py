"""The shrink's faster steps give what the plain ones gave.

Each step a shrink takes at every level it climbs (``Engine.holders``, ``vertices_held``,
``node_vertices``, ``release_set``, ``_free_origin_roots``, ``_drop_origin_paths``, ``_items_of``)
is checked against the plain code it replaced, kept here as the reference; the hand-back in the
columns wire form is checked against the JGF one by whole engine states at every level, and its
fallbacks (a parent that turns the form away, a malformed document, the state file) by what they
leave.  In one process, through ``Direct`` parents (see ``test_instance.py``).
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson
import pytest

from fluxlite.api import Engine
from fluxlite.errors import InputError
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers.generate import generate_graph
from hierarchy import Instance
from hierarchy._jgfsub import document_nodes, subgraph_jgf
from hierarchy._release import node_vertices, release_set, vertices_held
from hierarchy._wire import MAGIC, WireError, as_jgf, encode_subgraph, is_columns
from hierarchy.base import ShrinkOutcome
from hierarchy.instance.handback import _paths_and_ranks
from tests.hierarchy.helpers import CORES, nodes_jobspec, saved_records, socket_jobspec
from tests.hierarchy.test_instance import Direct, _root

# ---------------------------------------------------------------- the plain code, as it was


def ref_holders(eng: Engine, vids: Iterable[int]) -> dict[int, list[int]]:
    tr = eng.traverser
    out: dict[int, list[int]] = {}
    for v in vids:
        for col in (tr.tags, tr.allocs, tr.resvs):
            d = col[v]
            if d:
                for j in d:
                    lst = out.setdefault(j, [])
                    if not lst or lst[-1] != v:
                        lst.append(v)
    return out


def ref_node_vertices(g: Any, dom: str, vids: Iterable[int]) -> list[int]:
    seen: dict[int, bool] = {}
    out: list[int] = []
    for v in vids:
        chain: list[int] = []
        u: int | None = v
        ok = False
        while u is not None:
            known = seen.get(u)
            if known is not None:
                ok = known
                break
            chain.append(u)
            if g.v_rank[u] >= 0:
                ok = True
                break
            u = g.parent(u, dom)
        for w in chain:
            seen[w] = ok
        if ok:
            out.append(v)
    return out


def ref_free_origin_roots(inst: Instance, candidates: Iterable[int]) -> dict[str, list[int]]:
    g = inst.engine.graph
    dom = inst.engine.dom
    origin_of = inst._origin_of
    busy: set[int] = set()
    for item in inst.returning:
        busy.update(v for v in (g.vertex_by_path(p) for p in item["roots"]) if v is not None)
    cand: set[int] = set()
    for v in candidates:
        if not g.is_live(v) or g.path(v, dom) not in origin_of:
            continue
        cand.add(v)
        for a in g.ancestors(v, dom):
            if g.path(a, dom) not in origin_of:
                break
            cand.add(a)
    chosen: set[int] = set()
    out: dict[str, list[int]] = {}
    for v in sorted(cand, key=lambda u: len(g.path(u, dom))):
        if v in busy or any(a in chosen or a in busy for a in g.ancestors(v, dom)):
            continue
        if ref_holders(inst.engine, g.subtree(v, dom)):
            continue
        chosen.add(v)
        src = inst.origins[origin_of[g.path(v, dom)]].source
        out.setdefault(src, []).append(v)
    return out


def ref_drop(origin_of: dict[str, int], roots: Iterable[str]) -> list[str]:
    prefixes = tuple(roots)
    subs = tuple(r + "/" for r in prefixes)
    return [p for p in origin_of if p in prefixes or p.startswith(subs)]


def ref_items_of(inst: Instance, jobid: int, vids: Iterable[int]) -> list[tuple[int, int, bool]]:
    g = inst.engine.graph
    want = set(vids)
    out = []
    for path, units, excl in inst.engine.job_items(jobid):
        v = g.vertex_by_path(path)
        if v in want:
            out.append((v, units, excl))
    return out


# ---------------------------------------------------------------- trees


class Columns(Direct):
    """A Direct parent that asks for the columns wire form (as the gRPC client does by default)."""

    accept_columns = True


class OldParent(Columns):
    """A parent from before shrinks read the columns form: such a document is not JGF to it."""

    def __init__(self, inst: Instance) -> None:
        super().__init__(inst)
        self.docs: list[bytes] = []

    def shrink(self, jobid: int, **kw: Any) -> ShrinkOutcome:
        self.docs.append(kw.get("jgf", b""))
        if is_columns(kw.get("jgf", b"")):
            raise InputError("shrink request: not JSON")
        return super().shrink(jobid, **kw)


def _tree(parent_cls: type[Direct], levels: int = 3) -> list[Instance]:
    """root (8 nodes) <- L1 (4 nodes) <- L2 (2 nodes), each leasing from the one above, every level
    below the root full (a filler job; the leaf's job is :func:`_grow_job`'s), so that a grow at the
    leaf climbs to the root; every level's client is ``parent_cls``."""
    insts = [_root(8)]
    sizes = [4, 2][: levels - 1]
    for i, n in enumerate(sizes, start=1):
        insts.append(Instance.from_parent(parent_cls(insts[-1]), nodes_jobspec(n).encode(), name=f"L{i}", depth=i))
    for inst, n, below in zip(insts[1:-1], sizes, sizes[1:]):
        inst.match_allocate(nodes_jobspec(n - below).encode())
    return insts


def _grow_job(insts: list[Instance]) -> int:
    """The leaf's job, on all of the leaf's nodes."""
    leaf = insts[-1]
    return leaf.match_allocate(nodes_jobspec(leaf.info()["free"]["node"]).encode()).jobid


def _state(insts: list[Instance]) -> list[Any]:
    for inst in insts:
        inst.info()  # (waits for a deferred attach)
    return [
        (
            inst.engine.save_state(),
            sorted(inst._origin_of.items()),
            [{k: v for k, v in o.public().items() if k != "request_id"} for o in inst.origins.values()],
        )
        for inst in insts  # (an origin's request id is random)
    ]


def _run(parent_cls: type[Direct]) -> tuple[list[list[Any]], list[Instance]]:
    """Grows and shrinks of several shapes at the leaf; every level's whole state after each step."""
    insts = _tree(parent_cls)
    leaf = insts[-1]
    job = _grow_job(insts)
    states = []
    for spec in (nodes_jobspec(2), socket_jobspec(), nodes_jobspec(1)):
        g = leaf.match_grow(job, spec.encode())
        states.append(_state(insts))
        out = leaf.shrink(job, jgf=g.jgf)
        assert out.returned and not out.pending
        states.append(_state(insts))
    # shrinks by paths: one node of a two-node grow, then the other
    g = leaf.match_grow(job, nodes_jobspec(2).encode())
    nodes = sorted(n["metadata"]["paths"]["containment"] for n in orjson.loads(g.jgf)["graph"]["nodes"]
                   if n["metadata"]["type"] == "node")  # fmt: skip
    out = leaf.shrink(job, paths=[nodes[0]])
    assert out.returned and not out.pending
    states.append(_state(insts))
    out = leaf.shrink(job, paths=[nodes[1]])
    assert out.returned and not out.pending
    states.append(_state(insts))
    for inst in insts:
        assert inst.info(recount=True)["recount_errors"] == []
    return states, insts


# ---------------------------------------------------------------- the steps against the plain code


def _busy_engine() -> tuple[Engine, list[int]]:
    eng = Engine(generate_graph(nodes=6, sockets=2, cores=CORES), policy="first")
    jobs = [eng.allocate(parse_jobspec(nodes_jobspec(2)), fmt="jgf").jobid]
    jobs.append(eng.allocate(parse_jobspec(socket_jobspec()), fmt="jgf").jobid)
    jobs.append(eng.allocate(parse_jobspec(socket_jobspec(2)), fmt="jgf").jobid)
    return eng, jobs


def test_holders_and_vertices_held_answer_as_the_plain_loop() -> None:
    eng, jobs = _busy_engine()
    g = eng.graph
    every = list(range(len(g.v_rank)))
    rng = random.Random(7)
    free = [v for v in every if not ref_holders(eng, [v])]
    assert free and len(free) < len(every)
    samples = [every, free, [], every[::-1], free[:3] + every[-5:]]
    samples += [rng.sample(every, k) for k in (1, 5, 20, len(every) // 2) for _ in range(5)]
    for vids in samples:
        assert eng.holders(vids) == ref_holders(eng, vids)
        assert eng.holders(iter(vids)) == ref_holders(eng, vids)  # (any iterable)
        for j in [*jobs, 999]:
            assert vertices_held(eng, j, vids) == set(ref_holders(eng, vids).get(j, ()))
            assert vertices_held(eng, j, iter(vids)) == set(ref_holders(eng, vids).get(j, ()))


def test_node_vertices_and_release_set_answer_as_the_plain_code() -> None:
    root = _root(4)
    mid = Instance.from_parent(Direct(root), nodes_jobspec(2).encode(), name="mid")
    job = mid.match_allocate(nodes_jobspec(1).encode()).jobid
    rng = random.Random(3)
    for eng in (root.engine, mid.engine):  # (a generated graph; one read from JGF, rank -1 below nodes)
        g = eng.graph
        every = [v for v in range(len(g.v_rank)) if g.is_live(v)]
        for vids in [every, every[::-1], *(rng.sample(every, min(k, len(every))) for k in (1, 3, 10, 30) for _ in range(4))]:
            assert node_vertices(g, eng.dom, vids) == ref_node_vertices(g, eng.dom, vids)
    g = mid.engine.graph
    held = sorted(vertices_held(mid.engine, job, range(len(g.v_rank))))
    for vids in [held, held[::-1], *(rng.sample(held, min(k, len(held))) for k in (1, 4, 9) for _ in range(4))]:
        nodes = ref_node_vertices(g, mid.engine.dom, vids)
        assert release_set(mid.engine, job, nodes, in_nodes=True) == release_set(mid.engine, job, vids)


def test_free_origin_roots_as_the_plain_code_with_held_and_pending_subtrees() -> None:
    insts = _tree(Direct)
    mid, leaf = insts[1], insts[2]
    job = _grow_job(insts)
    g1 = leaf.match_grow(job, nodes_jobspec(2).encode())
    leaf.match_grow(job, socket_jobspec().encode())
    for inst in insts:
        inst.info()
    eng = leaf.engine
    g = eng.graph
    origin = [g.vertex_by_path(p) for p in leaf._origin_of]
    held = sorted(vertices_held(eng, job, origin))
    assert held
    # free what the first grow brought, keep the socket's grow held
    paths = sorted({n["metadata"]["paths"]["containment"] for n in orjson.loads(g1.jgf)["graph"]["nodes"]
                    if n["metadata"]["type"] == "node"})  # fmt: skip
    from hierarchy._release import release_vertices

    rel = release_set(eng, job, node_vertices(g, eng.dom, [v for p in paths for v in g.subtree(g.vertex_by_path(p))]))
    release_vertices(eng, job, rel)
    every = [v for v in range(len(g.v_rank)) if g.is_live(v)]
    rng = random.Random(11)
    samples = [rel, rel[::-1], every, *(rng.sample(every, min(k, len(every))) for k in (1, 5, 25) for _ in range(6))]
    for cands in samples:
        assert leaf._free_origin_roots(cands) == ref_free_origin_roots(leaf, cands)
    # a pending hand-back makes its roots (and all below) busy
    leaf.returning.append({"roots": [paths[0]], "source": "parent", "request_id": "x", "jgf": b""})
    for cands in samples:
        assert leaf._free_origin_roots(cands) == ref_free_origin_roots(leaf, cands)
    assert mid.info(recount=True)["recount_errors"] == []


def test_drop_origin_paths_as_the_plain_prefix_test() -> None:
    inst = _root(2)
    paths = ["/c", "/c/n5", "/c/n5/s0", "/c/n5/s0/k1", "/c/n50", "/c/n50/s0", "/c/n5x", "/c/n6/s1", "/d/n5/s0", "/c/n6"]
    for roots in (["/c/n5"], ["/c/n5", "/c/n6/s1"], ["/c"], ["/c/n50/s0", "/c/n5/s0"], [], ["/z"], ["/c/n5/"]):
        from hierarchy.instance.records import Origin

        inst.origins = {1: Origin(1, "parent", "r", 1, set(paths))}
        inst._origin_of = dict.fromkeys(paths, 1)
        want = ref_drop(inst._origin_of, roots)
        assert inst._drop_origin_paths(roots) == want
        assert sorted(inst._origin_of) == sorted(set(paths) - set(want))
        assert (1 in inst.origins) == bool(set(paths) - set(want))


def test_items_of_as_the_path_lookup() -> None:
    insts = _tree(Direct)
    leaf = insts[2]
    job = _grow_job(insts)
    leaf.match_grow(job, nodes_jobspec(1).encode())
    leaf.match_grow(job, socket_jobspec().encode())
    g = leaf.engine.graph
    every = [v for v in range(len(g.v_rank)) if g.is_live(v)]
    rng = random.Random(5)
    for vids in [every, [], *(rng.sample(every, min(k, len(every))) for k in (1, 7, 40) for _ in range(5))]:
        assert leaf._items_of(job, vids) == ref_items_of(leaf, job, vids)
    # where a path is shared by ranks, every item's path is looked up (the plain way)
    g.shared["/nowhere"] = [0, 1]
    try:
        for vids in [every, rng.sample(every, 9)]:
            assert leaf._items_of(job, vids) == ref_items_of(leaf, job, vids)
    finally:
        del g.shared["/nowhere"]


# ---------------------------------------------------------------- the columns hand-back


def test_columns_hand_back_leaves_every_level_as_the_jgf_one() -> None:
    with_columns, insts = _run(Columns)
    with_jgf, _ = _run(Direct)
    assert len(with_columns) == len(with_jgf) == 8
    for k, (a, b) in enumerate(zip(with_columns, with_jgf)):
        assert a == b, f"step {k}"
    assert all(inst._columns_up for inst in insts)


def test_columns_hand_back_is_what_the_parent_reads_from_the_jgf() -> None:
    insts = _tree(Columns)
    leaf = insts[-1]
    job = _grow_job(insts)
    leaf.match_grow(job, nodes_jobspec(2).encode())
    leaf.info()
    sent: list[bytes] = []
    real = leaf._hand_back_document

    def spy(source: str, vids: list[int]) -> bytes:
        doc = real(source, vids)
        sent.append(doc)
        g = leaf.engine.graph
        text = subgraph_jgf(g, vids)
        got = list(_paths_and_ranks(doc, leaf.engine.dom))
        assert got == list(_paths_and_ranks(text, leaf.engine.dom))
        assert got == list(zip(*document_nodes(text, leaf.engine.dom, "t")[:2]))
        return doc

    leaf._hand_back_document = spy  # type: ignore[method-assign]
    out = leaf.shrink(job, paths=[p for p in leaf._origin_of if p.count("/") == 2])
    assert out.returned and sent and all(is_columns(d) for d in sent)


def test_a_graph_with_fluxions_ids_hands_back_jgf() -> None:
    """Where the graph has Fluxion's ids (generated or a GRUG load) the form would carry those uniq ids
    and ranks, where the JGF has the graph's own: such a level writes JGF.  A graph read from a
    parent's JGF has none."""
    root = _root(2)
    mid = Instance.from_parent(Columns(root), nodes_jobspec(1).encode(), name="mid")
    for eng, form in ((root.engine, False), (mid.engine, True)):
        g = eng.graph
        assert (g.fluxion_ids is None) is form
        doc = encode_subgraph(g, [v for v in range(len(g.v_rank)) if g.is_live(v)])
        assert (doc is not None and is_columns(doc)) is form


def test_a_parent_that_turns_the_columns_form_away_gets_the_jgf_from_then_on() -> None:
    insts = _tree(OldParent, levels=2)
    leaf = insts[1]
    job = _grow_job(insts)
    states = []
    for _ in range(2):
        g = leaf.match_grow(job, nodes_jobspec(1).encode())
        out = leaf.shrink(job, jgf=g.jgf)
        assert out.returned and not out.pending
        states.append(_state(insts))
    docs = leaf.parent.docs  # type: ignore[attr-defined]
    assert [is_columns(d) for d in docs] == [True, False, False]  # refused once, then JGF only
    assert not leaf._columns_up and not leaf.returning
    ref = _tree(Direct, levels=2)
    rjob = _grow_job(ref)
    want = []
    for _ in range(2):
        g = ref[1].match_grow(rjob, nodes_jobspec(1).encode())
        ref[1].shrink(rjob, jgf=g.jgf)
        want.append(_state(ref))
    assert states == want


def test_a_malformed_columns_shrink_document_changes_nothing() -> None:
    insts = _tree(Columns, levels=2)
    root, leaf = insts
    job = _grow_job(insts)
    g = leaf.match_grow(job, nodes_jobspec(1).encode())
    leaf.info()
    before = _state(insts)
    bad_docs = [MAGIC + b"\xff\xff", MAGIC, MAGIC + b"\x08\x02"]
    g_leaf = leaf.engine.graph
    doc = encode_subgraph(g_leaf, node_vertices(g_leaf, leaf.engine.dom, list(range(len(g_leaf.v_rank)))))
    assert doc is not None
    bad_docs.append(doc[:-3])  # cut short
    for bad in bad_docs:
        with pytest.raises(InputError):
            root.shrink(leaf.parent_jobid, jgf=bad, lease_token=leaf.parent_token)
        with pytest.raises(InputError):
            leaf.shrink(job, jgf=bad)
    assert _state(insts) == before
    with pytest.raises(WireError):
        _paths_and_ranks(MAGIC + b"\xff", "containment")
    out = leaf.shrink(job, jgf=g.jgf)
    assert out.returned and not out.pending


def test_a_pending_columns_hand_back_is_kept_in_its_payload_file(tmp_path: Path) -> None:
    from hierarchy import InstanceUnavailableError

    class Gone(Columns):
        down = False

        def shrink(self, jobid: int, **kw: Any) -> ShrinkOutcome:
            if self.down:
                exc = InstanceUnavailableError("no answer before the deadline")
                exc.ambiguous = True  # type: ignore[attr-defined]
                raise exc
            return super().shrink(jobid, **kw)

    root = _root(8)
    parent = Gone(root)
    leaf = Instance.from_parent(parent, nodes_jobspec(2).encode(), name="leaf", state_path=tmp_path / "leaf.state")
    job = leaf.match_allocate(nodes_jobspec(2).encode()).jobid
    g = leaf.match_grow(job, nodes_jobspec(1).encode())
    leaf.info()
    parent.down = True
    out = leaf.shrink(job, jgf=g.jgf)
    assert out.pending and not out.returned
    (item,) = leaf.returning
    assert is_columns(item["jgf"])
    (kept,) = saved_records(tmp_path / "leaf.state", "returning")
    assert kept["jgf"] == item["jgf"]  # (kept as sent: the columns)
    text = as_jgf(kept["jgf"])
    dom = leaf.engine.dom
    assert list(_paths_and_ranks(text, dom)) == list(_paths_and_ranks(item["jgf"], dom))
    back = Instance.restore(tmp_path / "leaf.state", parent=Columns(root))
    assert back.retry_returns(force=True) == 1 and not back.returning
    assert root.info(recount=True)["recount_errors"] == [] and back.info(recount=True)["recount_errors"] == []
