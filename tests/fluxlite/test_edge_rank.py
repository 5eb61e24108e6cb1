"""``GraphStateStage._set_edge_weight`` keeps a vertex's ranked out-edges (``(-weight, -uniq, eid)``,
sorted) in order.  It now replaces a key in place when its rank is kept and deletes and re-inserts it
otherwise; these tests compare it with the plain delete-and-insort on random rankings."""

from __future__ import annotations

import bisect
import random
from types import SimpleNamespace
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.match.state import GraphStateStage
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec, snapshot


def _plain(keys: list, weights: list[int], uniq: list[int], dst: list[int], e: int, w: int) -> None:
    old = (-weights[e], -uniq[dst[e]], e)
    i = bisect.bisect_left(keys, old)
    if i < len(keys) and keys[i] == old:
        del keys[i]
    bisect.insort(keys, (-w, -uniq[dst[e]], e))
    weights[e] = w


@pytest.mark.parametrize("seed", range(30))
def test_rank_update_equals_delete_and_insort(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice([1, 2, 3, 8, 40, 128])
    dst = list(range(1, n + 1))
    uniq = [rng.randrange(1000) for _ in range(n + 1)]  # ties in uniq too: the edge id breaks them
    weights = [rng.choice([0, 1, 4, 16, 32]) for _ in range(n)]
    listed = [e for e in range(n) if rng.random() < 0.9]  # an edge missing from the ranking is inserted
    keys = sorted((-weights[e], -uniq[dst[e]], e) for e in listed)
    stub = SimpleNamespace(
        _outedges={0: list(keys)}, e_weight=list(weights), g=SimpleNamespace(v_uniq=uniq, e_dst=dst)
    )
    ref_keys, ref_w = list(keys), list(weights)
    for _ in range(60):
        e = rng.randrange(n)
        w = rng.choice(
            [0, 1, 4, 16, 32, stub.e_weight[e], stub.e_weight[e] + 1, max(0, stub.e_weight[e] - 1)]
        )
        GraphStateStage._set_edge_weight(stub, 0, e, w)
        _plain(ref_keys, ref_w, uniq, dst, e, w)
        assert stub._outedges[0] == ref_keys and stub.e_weight == ref_w
    GraphStateStage._set_edge_weight(stub, 7, 0, 3)  # a vertex without a ranking: only the weight changes
    assert stub.e_weight[0] == 3 and 7 not in stub._outedges


@pytest.mark.parametrize("seed", range(40))
def test_rank_update_big_values_equal_delete_and_insort(seed: int) -> None:
    """Weights and uniq ids past the C range (a weight never set is ``UINT64_MAX``), near its edges,
    and ties: the typed compares (compiled) fall back to the object compares and end the same."""
    rng = random.Random(1000 + seed)
    n = rng.choice([1, 2, 3, 8, 40, 128])
    dst = list(range(1, n + 1))
    edge_vals = [0, 1, 2**62 - 1, 2**62, 2**63 - 1, 2**63, 2**64 - 1, 2**70]
    uniq = [rng.choice([rng.randrange(50), -rng.randrange(50), rng.choice(edge_vals)]) for _ in range(n + 1)]
    weights = [rng.choice([0, 1, 4, 16, 2**64 - 1, rng.choice(edge_vals)]) for _ in range(n)]
    listed = [e for e in range(n) if rng.random() < 0.9]
    keys = sorted((-weights[e], -uniq[dst[e]], e) for e in listed)
    stub = SimpleNamespace(
        _outedges={0: list(keys)}, e_weight=list(weights), g=SimpleNamespace(v_uniq=uniq, e_dst=dst)
    )
    ref_keys, ref_w = list(keys), list(weights)
    for _ in range(80):
        e = rng.randrange(n)
        cur = stub.e_weight[e]
        w = rng.choice([0, 1, 4, 16, cur, cur + 1, max(0, cur - 1), rng.choice(edge_vals)])
        GraphStateStage._set_edge_weight(stub, 0, e, w)
        _plain(ref_keys, ref_w, uniq, dst, e, w)
        assert stub._outedges[0] == ref_keys and stub.e_weight == ref_w


@pytest.mark.parametrize("seed", range(40))
def test_rank_set_typed_equals_delete_and_insort(seed: int) -> None:
    """``state._rank_set_typed`` (the C compares of ``_set_edge_weight``) called directly: when it
    answers True the list is the delete-and-insort one, when False it is unchanged."""
    from fluxlite.match.state import _rank_set_typed

    rng = random.Random(2000 + seed)
    n = rng.choice([0, 1, 2, 3, 8, 40, 128])
    big = rng.random() < 0.3
    dst = list(range(1, n + 1))
    uniq = [rng.randrange(30) for _ in range(n + 1)]  # ties: the edge id breaks them
    weights = [
        rng.choice([0, 1, 4, 16, 32] + ([2**64 - 1, 2**62, -(2**62) - 1] if big else [])) for _ in range(n)
    ]
    keys = sorted((-weights[e], -uniq[dst[e]], e) for e in range(n) if rng.random() < 0.85)
    for _ in range(60):
        if n == 0:
            assert _rank_set_typed(keys, 3, -1, 0, 4) in (True, False)
            break
        e = rng.randrange(n)
        cur = weights[e]
        w = rng.choice([0, 1, 4, 16, 32, cur, cur + 1, max(0, cur - 1)] + ([2**63] if big else []))
        ref = list(keys)
        ref_w = list(weights)
        _plain(ref, ref_w, uniq, dst, e, w)
        before = list(keys)
        if _rank_set_typed(keys, cur, -uniq[dst[e]], e, w):
            assert keys == ref
        else:
            assert keys == before
            keys[:] = ref
        weights[e] = w
    # not ints: never the C compares
    ks = [(-1.0, -2, 0), (0, -1, 1)]
    assert _rank_set_typed(ks, 1, -2, 0, 0) is False and ks == [(-1.0, -2, 0), (0, -1, 1)]
    assert _rank_set_typed([(0, -1, 1)], True, -2, 0, 0) is False


def _ref_upd_by_outedges(self: Any, ss: str, meta: Any, u: int, e: int) -> None:
    """``_upd_by_outedges`` as it was before the weight change was inlined into it."""
    col = self.subplan.get(ss)
    p = col[self.g.e_dst[e]] if col is not None else None
    if p is None:
        return
    pls = p._planners
    if not pls:
        return
    avail = pls[-1].avail_resources_at(meta.now)
    if avail == 0 and not p._spans:
        return
    if self._outedge_order(u) is None:
        return
    if self._undo is not None:
        self._undo.append((3, u, e, self.e_weight[e]))
    GraphStateStage._set_edge_weight(self, u, e, 0 if avail < 0 else avail)


def _spec(nodes: int, sockets: int, cores: int, duration: int) -> Any:
    if nodes:
        return jobspec(
            f"- type: node\n  count: {nodes}\n  with:\n  - type: slot\n    count: 1\n    label: default\n"
            f"    with:\n    - type: socket\n      count: {sockets}\n      with:\n      - type: core\n"
            f"        count: {cores}\n",
            duration,
        )
    return jobspec(
        f"- type: slot\n  count: 1\n  label: default\n  with:\n  - type: socket\n    count: 1\n    with:\n"
        f"    - type: core\n      count: {cores}\n",
        duration,
    )


@pytest.mark.parametrize("seed", range(4))
def test_upd_by_outedges_matches_the_plain_reranking(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The update walk's re-rank (``_upd_by_outedges``, its weight change inlined, by C compares
    compiled) against the method as it was, on random ``first`` sessions of allocations,
    reservations, cancels and ``update_allocate``-free grows of state: the same output, ranked
    out-edges, weights and whole state after every step."""
    rng = random.Random(seed)
    engs = [Engine(generate_graph(nodes=12, sockets=2, cores=4), policy="first") for _ in range(2)]
    jobs: list[int] = []
    for step in range(80):
        if jobs and rng.random() < 0.3:
            j = jobs.pop(rng.randrange(len(jobs)))
            for eng in engs:
                eng.cancel(j)
        js = _spec(
            rng.choice([0, 1, 2, 3]), rng.choice([1, 2]), rng.choice([1, 2, 4]), rng.choice([60, 600, 3600])
        )
        op = rng.choice(["allocate", "allocate_orelse_reserve"])
        got = []
        for k, eng in enumerate(engs):
            with monkeypatch.context() as m:
                if k == 1:
                    m.setattr(GraphStateStage, "_upd_by_outedges", _ref_upd_by_outedges)
                got.append(eng.match(js, op))
        a, b = got
        assert (a.ok, a.jobid, a.at, a.text) == (b.ok, b.jobid, b.at, b.text), step
        ta, tb = engs[0].traverser, engs[1].traverser
        assert ta._outedges == tb._outedges and ta.e_weight == tb.e_weight, step
        assert snapshot(engs[0]) == snapshot(engs[1]), step
        if a.ok:
            jobs.append(a.jobid)


def test_rank_set_typed_at_the_ends_of_the_list() -> None:
    """``_rank_set_typed`` reads ``keys`` without index checks (compiled): the moves that touch its
    first and last entries, and lists of one and two keys, end as delete-and-insort ends them."""
    from fluxlite.match.state import _rank_set_typed

    def ref(keys: list[tuple[int, int, int]], old: tuple[int, int, int], new: tuple[int, int, int]) -> list:
        out = [k for k in keys if k != old]
        bisect.insort(out, new)
        return out

    base = [(-4, -1, 0), (-3, -1, 1), (-2, -1, 2), (-1, -1, 3)]
    cases = [
        ([(-4, -1, 0)], 4, 0, 9),  # the only key, moved
        ([(-4, -1, 0)], 4, 0, 4),  # the only key, the same weight
        ([(-4, -1, 0), (-3, -1, 1)], 4, 0, 1),  # the first key past the last
        ([(-4, -1, 0), (-3, -1, 1)], 3, 1, 9),  # the last key before the first
        (base, 4, 0, 0),  # first to last
        (base, 1, 3, 9),  # last to first
        (base, 2, 2, 3),  # a tie with a neighbour: the edge id decides
        (base, 7, 9, 5),  # a key not in the list: inserted
        (base, 7, 9, 0),  # ... at the end
        (base, 7, 9, 99),  # ... at the front
    ]
    for keys0, ow, e, w in cases:
        keys = list(keys0)
        assert _rank_set_typed(keys, ow, -1, e, w) is True
        assert keys == ref(list(keys0), (-ow, -1, e), (-w, -1, e))
    keys: list[tuple[int, int, int]] = []
    assert _rank_set_typed(keys, 3, -1, 0, 4) is True and keys == [(-4, -1, 0)]


@pytest.mark.parametrize("seed", range(40))
def test_rank_set_typed_sentinel_equals_delete_and_insort(seed: int) -> None:
    """``_rank_set_typed(..., sent=True)``: ``UINT64_MAX`` (an edge never weighed, as on a new graph)
    compared as a sentinel below every other weight.  When it answers True the list is the
    delete-and-insort one (also when the new weight is ``UINT64_MAX``, or values near the sentinel's
    C value ride along), when False it is unchanged; on lists of weights from {small, UINT64_MAX}
    only, it always answers True."""
    from fluxlite.match.state import _rank_set_typed

    u64 = 2**64 - 1
    rng = random.Random(3000 + seed)
    n = rng.choice([1, 2, 3, 8, 40, 128])
    odd = rng.random() < 0.3  # weights whose C value would be ambiguous with the sentinel's
    dst = list(range(1, n + 1))
    uniq = [rng.randrange(30) for _ in range(n + 1)]
    pool = [0, 1, 4, 16, u64, u64] + ([2**62, 2**63, 2**63 - 1, u64 - 1] if odd else [])
    weights = [rng.choice(pool) for _ in range(n)]
    keys = sorted((-weights[e], -uniq[dst[e]], e) for e in range(n) if rng.random() < 0.85)
    for _ in range(60):
        e = rng.randrange(n)
        cur = weights[e]
        w = rng.choice([0, 1, 4, 16, 32, u64] + ([2**63, 2**62] if odd else []))
        ref = list(keys)
        ref_w = list(weights)
        _plain(ref, ref_w, uniq, dst, e, w)
        before = list(keys)
        got = _rank_set_typed(keys, cur, -uniq[dst[e]], e, w, True)
        if got:
            assert keys == ref
        else:
            assert odd and keys == before
            keys[:] = ref
        weights[e] = w
