"""The root cache and the prefix sort change no result.

:mod:`fluxlite.match.rootcache` keeps the pass-through root's merged child
evaluations across matches and :mod:`fluxlite.match._sortprefix` finds the
front of libstdc++'s ``std::sort`` order without sorting the rest.  Both must
give exactly what the plain walk and the full sort give, ties included.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import rule

from fluxlite.match import rootcache
from fluxlite.match._scoring import Evals, std_sort
from fluxlite.match._sortprefix import std_sort_prefix_blocks
from tests.fluxlite.test_shortcuts_differential import (
    OPS,
    SHORT_SOCKET,
    SOCKET_ONLY,
    TWO_CORES,
    Differential,
)


def _std_order(keys: list[int]) -> list[int]:
    items = [(k, i) for i, k in enumerate(keys)]
    std_sort(items, lambda a, b: a[0] < b[0])
    return [i for _k, i in items]


@given(st.lists(st.integers(0, 6), max_size=400) | st.lists(st.integers(-(10**12), 10**12), max_size=300))
@settings(max_examples=300, deadline=None)
def test_prefix_blocks_are_std_sort_order(keys: list[int]) -> None:
    blocks = list(std_sort_prefix_blocks(np.asarray(keys, dtype=np.int64)))
    got = np.concatenate(blocks).tolist() if blocks else []
    assert got == _std_order(keys)


@pytest.mark.parametrize("shape", ["equal", "sorted", "reversed", "organ", "few"])
def test_prefix_blocks_on_adversarial_shapes(shape: str) -> None:
    rng = random.Random(shape)
    n = 5000
    keys = {
        "equal": [7] * n,
        "sorted": sorted(rng.randrange(50) for _ in range(n)),
        "reversed": sorted((rng.randrange(50) for _ in range(n)), reverse=True),
        "organ": list(range(n // 2)) + list(range(n // 2, 0, -1)),
        "few": [rng.randrange(3) for _ in range(n)],
    }[shape]
    got = np.concatenate(list(std_sort_prefix_blocks(np.asarray(keys, dtype=np.int64)))).tolist()
    assert got == _std_order(keys)


@pytest.mark.parametrize("descending", [False, True])
def test_choose_best_k_with_keys_picks_the_full_sorts_front(descending: bool) -> None:
    rng = random.Random(int(descending))
    egs = [(rng.randrange(4), rng.randrange(1, 3), True, False, ((1, 1, True, i),)) for i in range(600)]
    for k in (1, 5, 40):
        full, fast = Evals(), Evals()
        for eg in egs:
            full.add(eg)
            fast.add(eg)
        fast.keys = np.asarray([eg[0] for eg in egs], dtype=np.int64)
        assert full.choose_best_k(k, descending) and fast.choose_best_k(k, descending)
        assert fast.best_i == full.best_i
        assert fast.egroups[: fast.best_i] == full.egroups[: full.best_i]
        assert sorted(fast.egroups) == sorted(egs)  # still a permutation


class RootCacheDifferential(Differential):
    """The shortcuts differential with the root cache used for any root (it starts at 512 children)."""

    def __init__(self) -> None:
        super().__init__()
        self._saved = rootcache.ROOT_CACHE_MIN
        rootcache.ROOT_CACHE_MIN = 1

    def teardown(self) -> None:
        rootcache.ROOT_CACHE_MIN = self._saved

    @rule(
        req=st.sampled_from([SOCKET_ONLY, TWO_CORES, SHORT_SOCKET]),
        op=st.sampled_from(OPS),
        repeat=st.integers(1, 8),
    )
    def match_below_root(self, req: object, op: str, repeat: int) -> None:
        """Requests whose top level is below the root's children: the root passes through."""
        self.match(req, op, repeat)


RootCacheDifferential.TestCase.settings = settings(
    max_examples=25, stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestRootCacheDifferential = RootCacheDifferential.TestCase
