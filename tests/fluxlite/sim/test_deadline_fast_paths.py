"""The deadline simulator's fast paths give exactly the straightforward computation's results.

Each reference below is the plain form of the rule (the code before the fast path): the
fast path must give the same numbers, float for float, on random inputs.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from fluxlite.sim.deadline import program
from fluxlite.sim.deadline.program import CommModel, Geometry, Program
from fluxlite.sim.deadline.workload import lublin_trace


def _reference_phase_time(
    prog: Program, i: int, node_of: np.ndarray, osub: np.ndarray, geom: Geometry, traffic: np.ndarray
) -> tuple[float, np.ndarray]:
    """The cost model written out (one np.*.at per rule, hop distances from coordinates)."""
    p = prog.active[i]
    m = prog.model
    c = prog.c
    t = c * osub[:p]
    src, dst = prog.src[i], prog.dst[i]
    own = np.zeros(geom.nodes)
    if len(src):
        v = m.kappa * c
        ns, nd = node_of[src], node_of[dst]
        hops = geom.hops(ns, nd)
        remote = hops > 0
        load = (traffic[ns] + traffic[nd]) * 0.5
        cost = np.where(remote, v * (1.0 + m.beta * hops) * (1.0 + m.gamma * load), v * m.local)
        comm = np.zeros(p)
        np.maximum.at(comm, dst, cost)
        if prog.comm == "sync":
            np.add.at(comm, src, cost)
        t = t + comm
        if remote.any():
            np.add.at(own, ns[remote], 1.0)
            np.add.at(own, nd[remote], 1.0)
    return float(t.max()), own


def _reference_forks(job, active: list[int]) -> list[list[tuple[int, int]]]:  # type: ignore[no-untyped-def]
    """One draw per child, in child order, from the job's seed (the program's first draws)."""
    rng = np.random.default_rng(job.seed)
    forks: list[list[tuple[int, int]]] = [[] for _ in active]
    for i in range(1, len(active)):
        for child in range(active[i - 1], active[i]):
            forks[i].append((child, int(rng.integers(0, child)) if child else 0))
    return forks


def _own_dense(own: dict[int, int], nodes: int) -> np.ndarray:
    dense = np.zeros(nodes)
    for n, k in own.items():
        assert k > 0  # nodes without traffic are left out
        dense[n] = k
    return dense


@pytest.mark.parametrize(
    ("comm", "torus", "table"),
    [("async", False, True), ("async", True, True), ("sync", False, True), ("sync", True, True), ("sync", False, False)],
)
def test_phase_time_equals_the_plain_cost_model(
    comm: str, torus: bool, table: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both forms of ``phase_cost`` (message by message on lists, and on arrays), whatever the
    phase's size, and ``phase_time`` (arrays in and out), against the cost model written out;
    ``table=False``: a machine without a hop table (hop distances from the coordinates)."""
    if not table:
        monkeypatch.setattr(program, "HOP_TABLE_NODES", 0)
    rng = np.random.default_rng(7 + torus)
    geom = Geometry(8, 4, torus=torus, cores_per_node=4)
    assert (geom.hop_rows() is not None) == table
    jobs = lublin_trace(40 if table else 12, "heavy", "uniform", seed=3, cores=128)
    models = [CommModel(), CommModel(gamma=0.0), CommModel(beta=0.0, local=0.0), CommModel(kappa=0.0)]
    checked = 0
    for k, base in enumerate(jobs):
        for jtype in (0, 1, 2, 3):
            job = dataclasses.replace(base, type=jtype, procs=int(rng.integers(1, 48)))
            prog = Program(job, comm, geom, models[k % len(models)])
            for i in range(prog.phases):
                p = prog.active[i]
                node_of = rng.integers(0, geom.nodes, size=p)
                traffic = rng.integers(0, 6, size=geom.nodes).astype(float)
                shared = rng.integers(1, 4, size=p).astype(float)
                for osub in (np.ones(p), shared, np.full(p, 3.0)):
                    want = _reference_phase_time(prog, i, node_of, osub, geom, traffic)
                    got = prog.phase_time(i, node_of, osub, geom, traffic)
                    assert got[0] == want[0] and np.array_equal(got[1], want[1])
                    one = float(osub[0]) if np.all(osub == osub[0]) else None  # one number for all
                    for loop, limit in ((True, 10**6), (False, 0)):  # each form, whatever the size
                        monkeypatch.setattr(program, "LOOP_PROCESSES", limit)
                        nodes = node_of.tolist() if loop else node_of
                        per = osub.tolist() if loop else osub
                        for o in (per, one) if one is not None else (per,):
                            dur, own = prog.phase_cost(i, nodes, o, geom, traffic.tolist())
                            assert dur == want[0] and type(dur) is float
                            assert np.array_equal(_own_dense(own, geom.nodes), want[1])
                    checked += 1
    assert checked > (1000 if table else 300)


@pytest.mark.parametrize("torus", [False, True])
def test_pairwise_by_pairs_equals_the_array_form(torus: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    geom = Geometry(16, 8, torus=torus)
    rng = np.random.default_rng(11)
    sets = [sorted(rng.choice(geom.nodes, size=int(k), replace=False).tolist()) for k in rng.integers(0, 20, 300)]
    limit = program.PAIRWISE_LOOP_NODES
    assert any(1 < len(s) <= limit for s in sets) and any(len(s) > limit for s in sets)
    by_pairs = [geom.pairwise(s) for s in sets]
    monkeypatch.setattr(program, "PAIRWISE_LOOP_NODES", 0)
    assert by_pairs == [geom.pairwise(s) for s in sets]


def _reference_messages(job, active: list[int]) -> list[tuple[np.ndarray, np.ndarray]]:  # type: ignore[no-untyped-def]
    """Each phase's (senders, receivers) built on its own, after the fork draws (the plain build)."""
    rng = np.random.default_rng(job.seed)
    _reference_forks_draw(rng, active)
    out = []
    for p in active:
        if p < 2:
            s_, d_ = np.zeros(0, np.int64), np.zeros(0, np.int64)
        elif job.type == 0:
            others = np.arange(1, p)
            s_ = np.concatenate([np.zeros(p - 1, np.int64), others])
            d_ = np.concatenate([others, np.zeros(p - 1, np.int64)])
        elif job.type == 1:
            k = np.arange(p)
            s_, d_ = np.concatenate([k, k]), np.concatenate([(k + 1) % p, (k - 1) % p])
        else:
            k = np.arange(p)
            s_, d_ = k, (k + rng.integers(1, p, size=p)) % p
        out.append((s_, d_))
    return out


def _reference_forks_draw(rng: np.random.Generator, active: list[int]) -> None:
    for i in range(1, len(active)):
        for child in range(active[i - 1], active[i]):
            rng.integers(0, child)


@pytest.mark.parametrize("torus", [False, True])
def test_programs_draw_the_same_forks_and_calibrate_the_same_as_the_plain_build(torus: bool) -> None:
    geom = Geometry(16, 8, torus=torus, cores_per_node=4)
    rng = np.random.default_rng(1 + torus)
    models = [CommModel(), CommModel(beta=0.0), CommModel(local=0.0, kappa=1.5), CommModel(local=3.0)]
    for k, base in enumerate(lublin_trace(30, "normal", "uniform", seed=9)):
        for jtype in (0, 1, 2, 3):
            job = dataclasses.replace(base, type=jtype, procs=int(rng.integers(1, 512)))
            for comm in ("async", "sync"):
                prog = Program(job, comm, geom, models[k % len(models)])
                assert prog.forks == _reference_forks(job, prog.active)
                msgs = _reference_messages(job, prog.active)
                assert [s.tolist() for s in prog.src] == [m[0].tolist() for m in msgs]
                assert [d.tolist() for d in prog.dst] == [m[1].tolist() for m in msgs]
                # calibration: unit time on the compact block, processes packed in order, c = 1
                block = geom.compact_block(math.ceil(job.procs / 4))
                node_of = np.asarray([block[k // 4] for k in range(job.procs)])
                c, prog.c = prog.c, 1.0
                unit = sum(
                    _reference_phase_time(prog, i, node_of, np.ones(job.procs), geom, np.zeros(geom.nodes))[0]
                    for i in range(prog.phases)
                )
                assert c == job.runtime / unit


def test_hop_table_is_the_hop_distance() -> None:
    for torus in (False, True):
        g = Geometry(7, 5, torus=torus)
        g.set_coordinates([(i * 3) % 7 for i in range(35)], [(i * 2) % 5 for i in range(35)])
        idx = np.arange(g.nodes)
        a, b = np.meshgrid(idx, idx, indexing="ij")
        tab = g.hop_table()
        assert tab is not None and np.array_equal(tab, g.hops(a, b))
        assert not tab.flags.writeable
