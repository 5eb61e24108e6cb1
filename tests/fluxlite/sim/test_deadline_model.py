"""Deadline workloads and job programs: seeded traces, deadline slack, SWF extensions, calibration."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fluxlite.errors import InputError
from fluxlite.sim.deadline.program import CommModel, Geometry, Program
from fluxlite.sim.deadline.workload import LOADS, from_swf, lublin_trace, to_swf
from fluxlite.sim.swf import read_swf


def test_traces_are_seeded_and_deadlines_leave_room() -> None:
    """Same seed, same trace; every job fits before its deadline with its requested runtime."""
    a = lublin_trace(300, "heavy", "uniform", seed=7)
    assert a == lublin_trace(300, "heavy", "uniform", seed=7)
    assert a != lublin_trace(300, "heavy", "uniform", seed=8)
    for j in a:
        assert 1 <= j.procs <= 512
        assert j.submit <= j.earliest_start
        assert j.earliest_start + j.requested <= j.deadline
        assert j.requested >= j.runtime
    assert {j.type for j in a} == {0, 1, 2, 3}
    assert {j.type for j in lublin_trace(50, "normal", "2", seed=1)} == {2}
    # serial jobs and power-of-two sizes are frequent, as in the model
    sizes = [j.procs for j in a]
    assert 0.15 < sizes.count(1) / len(sizes) < 0.35
    assert sum(1 for s in sizes if s & (s - 1) == 0) / len(sizes) > 0.5


def test_slack_grows_with_size() -> None:
    """Relative slack (deadline window / requested runtime) is larger for larger jobs on average."""
    jobs = lublin_trace(2000, "normal", "uniform", seed=3)

    def rel(j):  # type: ignore[no-untyped-def]
        return (j.deadline - j.earliest_start) / j.requested

    small = [rel(j) for j in jobs if j.procs <= 2]
    big = [rel(j) for j in jobs if j.procs >= 64]
    assert np.mean(big) > np.mean(small) + 0.5


@pytest.mark.parametrize("load", ["normal", "heavy", "very-heavy"])
def test_load_sets_mean_interarrival(load: str) -> None:
    """The inter-arrival factor is the mean gap between submissions (seconds)."""
    jobs = lublin_trace(500, load, "0", seed=11)
    gaps = np.diff([j.submit for j in jobs])
    assert math.isclose(gaps.mean(), LOADS[load], rel_tol=0.05, abs_tol=1.0)


def test_bad_workload_parameters() -> None:
    """Unknown loads and types, and empty traces, are input errors."""
    with pytest.raises(InputError, match="unknown load"):
        lublin_trace(10, "crazy")
    with pytest.raises(InputError, match="unknown job type"):
        lublin_trace(10, "normal", "7")
    with pytest.raises(InputError, match="at least one job"):
        lublin_trace(0)


def test_swf_round_trip_keeps_the_extensions(tmp_path) -> None:
    """to_swf writes type/earliest start/deadline columns that from_swf reads back unchanged."""
    jobs = lublin_trace(40, "heavy", "uniform", seed=5)
    f = tmp_path / "t.swf"
    to_swf(jobs, f)
    assert read_swf(f).extensions == ("type", "earliest_start", "deadline")
    back = from_swf(f)
    for a, b in zip(jobs, back):
        assert (a.jobid, a.submit, a.procs, a.runtime, a.requested, a.type, a.earliest_start, a.deadline) == (
            b.jobid,
            b.submit,
            b.procs,
            b.runtime,
            b.requested,
            b.type,
            b.earliest_start,
            b.deadline,
        )


def test_plain_swf_gets_generated_extensions(tmp_path) -> None:
    """A plain SWF trace gets types and deadlines from the seed; jobs without size/runtime are skipped."""
    f = tmp_path / "plain.swf"
    f.write_text(
        "; MaxProcs: 512\n"
        "1 0 5 100 4 -1 -1 4 200 -1 1 1 1 -1 -1 -1 -1 -1\n"
        "2 10 5 -1 -1 -1 -1 -1 -1 -1 5 1 1 -1 -1 -1 -1 -1\n"
        "3 20 5 50 1 -1 -1 -1 60 -1 1 1 1 -1 -1 -1 -1 -1\n"
    )
    jobs = from_swf(f, "3", seed=1)
    assert [j.jobid for j in jobs] == [1, 3] and {j.type for j in jobs} == {3}
    assert jobs[0].procs == 4 and jobs[0].runtime == 100
    assert all(j.earliest_start + j.requested <= j.deadline for j in jobs)


@pytest.mark.parametrize("jtype", [0, 1, 2, 3])
@pytest.mark.parametrize("comm", ["async", "sync"])
def test_program_is_calibrated_on_a_compact_empty_partition(jtype: int, comm: str) -> None:
    """The program takes exactly its runtime on the compact block; spreading it out makes it slower."""
    import dataclasses

    geom = Geometry(16, 8, cores_per_node=4)
    job = dataclasses.replace(lublin_trace(1, seed=1)[0], procs=24, runtime=1000, requested=1250, type=jtype)
    prog = Program(job, comm, geom)
    block = geom.compact_block(6)
    zero = np.zeros(geom.nodes)
    total = 0.0
    spread_total = 0.0
    spread = [0, 15, 112, 127, 7, 120]  # the four corners and more: far apart
    for i in range(prog.phases):
        p = prog.active[i]
        node_of = np.asarray([block[k // 4] for k in range(p)])
        total += prog.phase_time(i, node_of, np.ones(p), geom, zero)[0]
        far = np.asarray([spread[k // 4] for k in range(p)])
        spread_total += prog.phase_time(i, far, np.ones(p), geom, zero)[0]
    assert math.isclose(total, 1000.0, rel_tol=1e-9)
    if jtype == 0 and comm == "async":
        assert spread_total >= total
    else:
        assert spread_total > total
    # loaded links and oversubscription slow a phase down
    node_of = np.asarray([block[k // 4] for k in range(prog.active[0])])
    base = prog.phase_time(0, node_of, np.ones(prog.active[0]), geom, zero)[0]
    assert prog.phase_time(0, node_of, 2 * np.ones(prog.active[0]), geom, zero)[0] > base


def test_torus_distances_wrap() -> None:
    """Hop distance is Manhattan on a mesh and wraps around on a torus."""
    mesh, torus = Geometry(16, 8), Geometry(16, 8, torus=True)
    a, b = np.asarray([0]), np.asarray([15 + 7 * 16])
    assert mesh.hops(a, b)[0] == 22 and torus.hops(a, b)[0] == 2
    assert mesh.pairwise([0, 1, 16, 17]) == 8


def test_dynamic_types_fork_and_join() -> None:
    """Types 2 and 3 grow to the full size at mid-run and shrink back; forks name earlier parents."""
    import dataclasses

    job = dataclasses.replace(lublin_trace(1, seed=2)[0], procs=40, type=3)
    prog = Program(job, "async", Geometry(16, 8), CommModel())
    assert max(prog.active) == 40 and prog.active[0] == prog.active[-1] == 10
    for i, forks in enumerate(prog.forks):
        for child, parent in forks:
            assert parent < child and prog.active[i - 1] <= child < prog.active[i]
