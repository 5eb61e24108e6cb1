"""Manhattan ablations of the journal's figure 8: one first node per time interval, strict growth, no local search."""

from __future__ import annotations

import numpy as np
import pytest

from fluxlite.errors import InputError
from fluxlite.grid.alloc import (
    ABLATION_ALLOCATORS,
    choose_manhattan,
    choose_manhattan_first_seed,
    choose_manhattan_no_polish,
    choose_manhattan_strict_first_seed,
    grow_compact,
)
from fluxlite.grid.machine import GridInfo


def _grid(w: int, h: int) -> GridInfo:
    return GridInfo(w, h, False, list(range(w * h)), [[] for _ in range(w * h)])


def test_first_seed_tries_only_the_first_free_node() -> None:
    gi = _grid(4, 4)
    free = np.zeros(16, dtype=bool)
    free[[0, 10, 11, 14, 15]] = True  # node 0 alone; a free 2x2 block elsewhere
    assert sorted(choose_manhattan(gi, free, 4) or []) == [10, 11, 14, 15]  # the text: the next first node
    assert choose_manhattan_first_seed(gi, free, 4) is None  # figure 8 lines 21-23: next time interval
    assert choose_manhattan_strict_first_seed(gi, free, 4) is None
    free[0] = False  # now the first free node is in the block: both find it
    assert sorted(choose_manhattan_first_seed(gi, free, 4) or []) == [10, 11, 14, 15]
    # the literal growth takes 10's distance-minimal neighbour of lowest index, 6, which is busy
    assert choose_manhattan_strict_first_seed(gi, free, 4) is None
    assert sorted(choose_manhattan_strict_first_seed(gi, np.ones(16, dtype=bool), 4) or []) == [0, 1, 4, 5]
    assert choose_manhattan_first_seed(gi, free, 1) == [10]
    assert choose_manhattan_first_seed(gi, free, 5) is None
    assert choose_manhattan_first_seed(gi, free, 0) is None


def test_strict_first_seed_fails_on_a_free_l_the_text_growth_follows() -> None:
    gi = _grid(4, 4)
    free = np.zeros(16, dtype=bool)
    free[[0, 4, 8, 12, 13, 14, 15]] = True
    got = choose_manhattan_first_seed(gi, free, 4)
    assert got is not None and all(free[got]) and got[0] == 0
    assert choose_manhattan_strict_first_seed(gi, free, 4) is None  # node 1, nearest to 0, is busy


def test_no_polish_is_the_greedy_growth_without_the_local_search() -> None:
    gi = _grid(6, 6)
    free = np.zeros(36, dtype=bool)
    free[[1, 2, 3, 8, 11, 13, 15, 17, 18, 19, 20, 21, 25, 31, 32, 34, 35]] = True
    plain = choose_manhattan_no_polish(gi, free, 8)
    # nodes 1-3 and 8 form a region of 4 (< 8), so the growth starts at 11's region
    assert plain is not None and sorted(plain) == sorted(grow_compact(gi, free, 13, 8) or [])
    polished = choose_manhattan(gi, free, 8)
    assert polished is not None and sorted(polished) != sorted(plain)
    for part in (plain, polished):
        assert len(part) == 8 and all(free[part]) and gi.connected(part)
    assert gi.dist[np.ix_(polished, polished)].sum() < gi.dist[np.ix_(plain, plain)].sum()


def test_the_ablation_names_reach_the_engine_and_the_simulator() -> None:
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.sim import simulate
    from fluxlite.sim.deadline.workload import lublin_trace

    for name in ("first-seed", "strict-first-seed", "no-polish"):
        assert f"manhattan-{name}" in ABLATION_ALLOCATORS
    jobs = lublin_trace(150, "very-heavy", "uniform", seed=4, cores=128, lag_model="none")
    acc = {
        g: simulate(
            jobs, "manhattan", machine=Machine(8, 4, 4, strategy="manhattan", backend="grid"), manhattan_growth=g
        ).accepted
        for g in ("free", "first-seed", "strict-first-seed")
    }
    # each reading changes which jobs fit on this crowded 8x4 machine (the direction depends on the history)
    assert len(set(acc.values())) == 3, acc
    with pytest.raises(InputError, match="Manhattan growth"):
        simulate(jobs[:3], "manhattan", manhattan_growth="sideways")
