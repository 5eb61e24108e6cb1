"""``GraphStateStage._set_edge_weight`` keeps a vertex's ranked out-edges (``(-weight, -uniq, eid)``,
sorted) in order.  It now replaces a key in place when its rank is kept and deletes and re-inserts it
otherwise; these tests compare it with the plain delete-and-insort on random rankings."""

from __future__ import annotations

import bisect
import random
from types import SimpleNamespace

import pytest

from fluxlite.match.state import GraphStateStage


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
        w = rng.choice([0, 1, 4, 16, 32, stub.e_weight[e], stub.e_weight[e] + 1, max(0, stub.e_weight[e] - 1)])
        GraphStateStage._set_edge_weight(stub, 0, e, w)
        _plain(ref_keys, ref_w, uniq, dst, e, w)
        assert stub._outedges[0] == ref_keys and stub.e_weight == ref_w
    GraphStateStage._set_edge_weight(stub, 7, 0, 3)  # a vertex without a ranking: only the weight changes
    assert stub.e_weight[0] == 3 and 7 not in stub._outedges
