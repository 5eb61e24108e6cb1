"""GraphStateStage.vertices_added: the bulk form of vertex_added, on columns and the out-edges cache."""

from __future__ import annotations

from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph


def _engine() -> Engine:
    return Engine(generate_graph(nodes=4, sockets=2, cores=4), policy="first")


def _state(eng: Engine) -> tuple[Any, ...]:
    tr = eng.traverser
    # (planners compare by identity: their repr, which shows the state, stands in)
    return (dict(tr._outedges), [list(map(repr, c)) for c in tr._vertex_columns()], tr.types.intern("core"))


@pytest.mark.parametrize("cached", ["fewer than the ids", "more than the ids"])
@pytest.mark.parametrize("ids", [[5, 9, 7], [20, 3], [11], []], ids=str)
def test_bulk_equals_one_at_a_time(cached: str, ids: list[int]) -> None:
    """The same columns and cache as vertex_added per id: a cached key among the ids is dropped, in the
    ids' range or not, however the cache compares in size with the ids (two ways of finding them)."""
    results = []
    for bulk in (True, False):
        eng = _engine()
        tr = eng.traverser
        keys = [3, 4, 9, 11, 14] if cached == "more than the ids" else [9, 1]
        tr._outedges = {k: [(0, 0, k)] for k in keys}
        tr.allocs[7] = {1: 1}  # a column entry the addition resets
        if bulk:
            tr.vertices_added(ids)
        else:
            for v in ids:
                tr.vertex_added(v)
        results.append(_state(eng))
    assert results[0] == results[1]
    assert not set(results[0][0]) & set(ids)
