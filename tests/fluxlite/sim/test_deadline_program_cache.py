"""Programs shared between runs (``program_for``): the same program a fresh build gives, and the same results."""

from __future__ import annotations

import numpy as np

from fluxlite.sim.deadline import program as program_mod
from fluxlite.sim.deadline.placement import STRATEGIES, Machine
from fluxlite.sim.deadline.program import CommModel, Geometry, Program, program_for
from fluxlite.sim.deadline.sim import simulate
from fluxlite.sim.deadline.workload import lublin_trace


def _same(a: Program, b: Program) -> bool:
    return (
        (a.type, a.n, a.comm, a.model, a.phases, a.active, a.forks, a.c)
        == (b.type, b.n, b.comm, b.model, b.phases, b.active, b.forks, b.c)
        and all(np.array_equal(x, y) for x, y in zip(a.src, b.src, strict=True))
        and all(np.array_equal(x, y) for x, y in zip(a.dst, b.dst, strict=True))
    )


def test_program_for_shares_exactly_what_a_fresh_build_gives(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(program_mod, "_PROGRAMS", type(program_mod._PROGRAMS)())
    jobs = lublin_trace(40, "heavy", "uniform", seed=3, cores=128)
    g1, g2 = Geometry(8, 4), Geometry(8, 4)
    for comm in ("async", "sync"):
        for j in jobs:
            p = program_for(j, comm, g1)
            assert _same(p, Program(j, comm, g1))
            assert program_for(j, comm, g2) is p  # same shape and coordinates: shared
    # another communication model, another geometry: not shared
    j = next(j for j in jobs if j.procs > 4)
    assert program_for(j, "async", g1, CommModel(kappa=2.0)) is not program_for(j, "async", g1)
    moved = Geometry(8, 4)
    moved.set_coordinates([(31 - i) % 8 for i in range(32)], [(31 - i) // 8 for i in range(32)])  # nodes renumbered
    p = program_for(j, "async", moved)
    assert p is not program_for(j, "async", g1)
    assert _same(p, Program(j, "async", moved))


def test_program_cache_is_bounded(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(program_mod, "_PROGRAMS", type(program_mod._PROGRAMS)())
    monkeypatch.setattr(program_mod, "PROGRAM_CACHE_SIZE", 10)
    g = Geometry(8, 4)
    jobs = lublin_trace(30, "normal", "uniform", seed=5, cores=128)
    for j in jobs:
        program_for(j, "async", g)
    assert len(program_mod._PROGRAMS) == 10
    assert program_for(jobs[-1], "async", g) is program_for(jobs[-1], "async", g)


def test_runs_after_other_strategies_give_the_results_of_a_cold_run(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    jobs = lublin_trace(60, "heavy", "uniform", seed=11, cores=128, max_runtime=4 * 3600)
    for comm in ("async", "sync"):
        cold = {}
        for s in STRATEGIES:
            monkeypatch.setattr(program_mod, "_PROGRAMS", type(program_mod._PROGRAMS)())
            cold[s] = simulate(jobs, s, comm, machine=Machine(8, 4, 4, strategy=s)).summary()
        monkeypatch.setattr(program_mod, "_PROGRAMS", type(program_mod._PROGRAMS)())
        for s in STRATEGIES:  # warm: each run reuses the programs of the runs before it
            warm = simulate(jobs, s, comm, machine=Machine(8, 4, 4, strategy=s)).summary()
            assert {k: v for k, v in warm.items() if k != "wall_seconds"} == {
                k: v for k, v in cold[s].items() if k != "wall_seconds"
            }
        assert len(program_mod._PROGRAMS) == len(jobs)
