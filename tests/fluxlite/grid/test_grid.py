"""Grid machines, the static grid allocators with deadlines and the leak strategies, on the real engine."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluxlite.api import Engine
from fluxlite.errors import BusyError, DeadlineError, InputError, MatchError, UnsatisfiableError
from fluxlite.grid import GridInfo, choose_hilbert, choose_manhattan, generate_grid, hilbert_cells
from tests.fluxlite.helpers import observable, recount_errors, snapshot


def _empty_grid(w: int, h: int, torus: bool = False) -> GridInfo:
    return GridInfo(w, h, torus, list(range(w * h)), [[] for _ in range(w * h)])


# ---------------------------------------------------------------- curve
@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40), st.integers(1, 40))
def test_hilbert_is_a_hamiltonian_path_of_unit_steps(w: int, h: int) -> None:
    cells = hilbert_cells(w, h)
    assert len(cells) == w * h
    assert set(cells) == {(x, y) for x in range(w) for y in range(h)}
    for (ax, ay), (bx, by) in itertools.pairwise(cells):
        assert abs(ax - bx) + abs(ay - by) == 1, (w, h, (ax, ay), (bx, by))


def test_hilbert_on_a_power_of_two_square_is_the_hilbert_curve() -> None:
    # the order-2 Hilbert curve visits each 2x2 quadrant completely before the next
    cells = hilbert_cells(4, 4)
    quads = [(x // 2, y // 2) for x, y in cells]
    assert [quads[i] for i in range(0, 16, 4)] == [(0, 0), (0, 1), (1, 1), (1, 0)]
    assert all(len(set(quads[i : i + 4])) == 1 for i in range(0, 16, 4))


# ---------------------------------------------------------------- machine
@pytest.mark.parametrize("torus", [False, True])
def test_generate_grid_shape_properties_and_network(torus: bool) -> None:
    g = generate_grid(5, 3, cores=2, torus=torus)
    assert g.types() == {"cluster": 1, "node": 15, "core": 30}
    v = g.vertex_by_path("/cluster0/node7/core1")
    assert v is not None
    node7 = g.vertex_by_path("/cluster0/node7")
    assert g.properties(node7) == {"x": "2", "y": "1"}
    gi = GridInfo.from_graph(g)
    assert (gi.width, gi.height, gi.torus) == (5, 3, torus)
    net = {(g.v_name[g.e_src[e]], g.v_name[g.e_dst[e]]) for e in g.edges() if g.e_ss[e] == "network"}
    assert ("node0", "node1") in net and ("node1", "node0") in net and ("node0", "node5") in net
    assert (("node0", "node4") in net) is torus  # wrap-around along x
    assert (("node0", "node10") in net) is torus  # and along y
    assert gi.distance(0, 4) == (1 if torus else 4)
    assert gi.compactness([0, 1, 5, 6]) == 8


def test_not_a_grid_is_a_clear_input_error() -> None:
    from fluxlite.readers.generate import generate_graph

    with pytest.raises(InputError, match="not a grid machine"):
        Engine(generate_graph(nodes=4), policy="hilbert")
    eng = Engine(generate_graph(nodes=4))
    with pytest.raises(InputError, match="not a grid machine"):
        eng.allocate_deadline(1, 0, 100, duration=10, policy="hilbert")


def _cli(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", *args],
        input=stdin,
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )


JOB = """version: 1
resources:
  - type: node
    count: 4
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: core
            count: 4
tasks:
  - command: [app]
    slot: default
    count:
      per_slot: 1
attributes:
  system:
    duration: 100
"""


def test_cli_generates_a_torus_that_query_loads_with_the_hilbert_policy(tmp_path: Path) -> None:
    r = _cli("graph", "generate", "--grid", "4x4", "--torus", "--cores", "4", "-o", str(tmp_path / "g.json"))
    assert r.returncode == 0, r.stderr
    (tmp_path / "job.yaml").write_text(JOB)
    cmds = (
        "match allocate job.yaml\nmatch allocate job.yaml\nmatch allocate job.yaml\nmatch allocate job.yaml\n"
    )
    cmds += "match allocate job.yaml\nmatch allocate_orelse_reserve job.yaml\nquit\n"
    r = _cli("query", "-L", "g.json", "-f", "jgf", "-P", "hilbert", stdin=cmds, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    # four jobs fill the 16 nodes along the curve: the four 2x2 quadrants
    hil = [y * 4 + x for x, y in hilbert_cells(4, 4)]
    out = r.stdout.split("INFO: =============================\n")
    assert r.stdout.count("RESOURCES=ALLOCATED") == 4
    assert r.stdout.count("RESOURCES=RESERVED") == 1
    first = [int(line.split("node")[1].split("[")[0]) for line in out[0].splitlines() if "node" in line]
    assert sorted(first) == sorted(hil[:4])
    eng = Engine.from_file(tmp_path / "g.json", format="jgf", policy="manhattan")
    assert eng.grid_info.torus


def test_cli_bad_grid_arguments_are_one_line_errors() -> None:
    for args in (["--grid", "4by4"], ["--torus"], ["--grid", "4x4", "--format", "grug"], ["--grid", "0x3"]):
        r = _cli("graph", "generate", *args)
        assert r.returncode != 0
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


# ---------------------------------------------------------------- static allocators
@settings(max_examples=80, deadline=None)
@given(st.integers(1, 12), st.integers(1, 12), st.data())
def test_manhattan_is_connected_and_never_worse_than_hilbert_on_an_empty_mesh(w: int, h: int, data) -> None:
    gi = _empty_grid(w, h)
    k = data.draw(st.integers(1, w * h))
    free = np.ones(w * h, dtype=bool)
    m = choose_manhattan(gi, free, k)
    hb = choose_hilbert(gi, free, k)
    assert m is not None and hb is not None and len(set(m)) == k
    assert gi.connected(m)
    assert gi.compactness(m) <= gi.compactness(hb)


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 10), st.integers(2, 10), st.booleans(), st.integers(0, 2**31), st.data())
def test_manhattan_partitions_are_connected_on_any_free_mask(w, h, torus, seed, data) -> None:
    gi = _empty_grid(w, h, torus)
    rnd = np.random.default_rng(seed)
    free = rnd.random(w * h) < 0.7
    k = data.draw(st.integers(1, w * h))
    m = choose_manhattan(gi, free, k)
    if m is None:
        from fluxlite.grid.alloc import free_regions

        _, sizes = free_regions(gi, free)
        assert len(sizes) == 0 or sizes.max() < k
    else:
        assert len(set(m)) == k and all(free[i] for i in m) and gi.connected(m)


def _random_deadline_run(policy: str, seed: int, steps: int = 60):
    rnd = random.Random(seed)
    eng = Engine(generate_grid(6, 4, cores=2, torus=seed % 2 == 1), policy=policy)
    gi = eng.grid_info
    now = 0
    live: list[tuple[int, int]] = []
    for _ in range(steps):
        now += rnd.randint(0, 30)
        for jid, end in list(live):
            if end <= now:
                eng.cancel(jid)
                live.remove((jid, end))
        k = rnd.choice([1, 2, 3, 4, 6, 8, 12])
        d = rnd.randint(10, 120)
        earliest = now + rnd.choice([0, 0, 20])
        deadline = earliest + d + rnd.choice([0, 30, 200])
        before = snapshot(eng)
        try:
            r = eng.allocate_deadline(k, earliest, deadline, now=now, duration=d)
        except DeadlineError:
            assert snapshot(eng) == before
            continue
        yield eng, gi, r, k, d, earliest, deadline, now
        live.append((r.jobid, r.at + d))
        assert not recount_errors(eng, [now, now + 50, now + 150])


@pytest.mark.parametrize("policy", ["hilbert", "manhattan", "count"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_deadline_allocations_meet_deadline_use_free_nodes_and_keep_aggregates(
    policy: str, seed: int
) -> None:
    accepted = 0
    for eng, gi, r, k, d, earliest, deadline, now in _random_deadline_run(policy, seed):
        accepted += 1
        assert r.ok and r.at >= earliest and r.at + d <= deadline
        assert r.reserved == (r.at > now)
        nodes = eng.job_nodes(r.jobid)
        assert len(nodes) == k
        # nobody else uses these nodes (or their cores) during the job's window
        tr = eng.traverser
        for i in nodes:
            for v in (gi.node_vid[i], *gi.cores[i]):
                for j, (s, e) in (tr.xspans[v] or {}).items():
                    assert j == r.jobid or e <= r.at or s >= r.at + d
        if policy == "hilbert":
            pos = sorted(int(gi.hilbert_pos[i]) for i in nodes)
            assert pos == list(range(pos[0], pos[0] + k)), "not a contiguous run of the curve"
        if policy == "manhattan":
            assert gi.connected(nodes)
        # earliest: with count, one second earlier the job could not start
        if policy == "count" and r.at > max(earliest, now):
            assert eng.grid.free_nodes(r.at - 1, d).sum() < k
    assert accepted > 5


def test_deadline_errors_are_distinct_and_change_nothing() -> None:
    eng = Engine(generate_grid(4, 2, cores=2), policy="hilbert")
    r = eng.allocate_deadline(8, 0, 100, duration=100)
    assert r.at == 0 and not r.reserved
    before = snapshot(eng)
    with pytest.raises(DeadlineError) as exc:
        eng.allocate_deadline(1, 0, 150, duration=60)
    assert not isinstance(exc.value, (BusyError, UnsatisfiableError))
    assert isinstance(exc.value, MatchError)
    assert snapshot(eng) == before
    with pytest.raises(UnsatisfiableError):
        eng.allocate_deadline(9, 0, 10**6, duration=60)
    with pytest.raises(InputError):
        eng.allocate_deadline(0, 0, 10**6, duration=60)
    assert snapshot(eng) == before
    # the next candidate time is when the first job ends
    r2 = eng.allocate_deadline(2, 0, 160, duration=60)
    assert r2.at == 100 and r2.reserved


def test_allocate_with_a_grid_policy_is_busy_not_deadline() -> None:
    from fluxlite.jobspec import parse_jobspec

    eng = Engine(generate_grid(2, 2, cores=4), policy="manhattan")
    js = parse_jobspec(JOB)
    eng.allocate(js)
    with pytest.raises(BusyError):
        eng.allocate(js)
    r = eng.allocate_orelse_reserve(js)
    assert r.reserved and r.at == 100


# ---------------------------------------------------------------- leak
def _check_leak_state(eng: Engine) -> None:
    tr = eng.traverser
    gi = eng.grid_info
    for cs in gi.cores:
        for c in cs:
            # jobs may use a core one after the other, never at the same time
            spans = sorted((tr.xspans[c] or {}).values())
            for (_s1, e1), (s2, _e2) in itertools.pairwise(spans):
                assert e1 <= s2, "a core is used by two jobs at once"
    for jid, job in eng.leak_jobs.items():
        over = [p for p in job.procs if p.core is None]
        assert job.oversubscribed == len(over)
        if job.strategy == "leak-noncontig":
            assert not over
        cores = [p.core for p in job.procs if p.core is not None]
        assert len(cores) == len(set(cores)), "two processes of a job on one core"
        for p in job.procs:
            if p.core is not None:
                assert jid in (tr.tags[p.core] or {})
                assert gi.node_of_core[p.core] == p.node


@pytest.mark.parametrize("strategy", ["leak", "leak-noncontig"])
@pytest.mark.parametrize("seed", [5, 6, 7])
def test_leak_never_places_on_a_busy_core_and_keeps_aggregates(strategy: str, seed: int) -> None:
    rnd = random.Random(seed)
    eng = Engine(generate_grid(5, 4, cores=2, torus=seed == 6))
    now = 0
    oversub = 0
    for _ in range(80):
        now += rnd.randint(0, 5)
        jobs = list(eng.leak_jobs.values())
        op = rnd.random()
        if op < 0.25 or not jobs:
            before = snapshot(eng)
            try:
                eng.leak_start(rnd.randint(1, 6), strategy, now=now, duration=1000)
            except BusyError:
                assert snapshot(eng) == before
        elif op < 0.7:
            job = rnd.choice(jobs)
            parent = rnd.choice(job.procs).node if job.procs else None
            free_before = eng.grid.free_nodes(now, 1).sum()
            before = snapshot(eng)
            try:
                p = eng.grow(job.jobid, None, strategy=strategy, parent=parent, now=now)
            except BusyError:
                assert strategy == "leak-noncontig"
                assert snapshot(eng) == before
                continue
            oversub += p.oversubscribed
            if p.oversubscribed:
                assert p.node == parent and strategy == "leak"
            assert eng.grid.free_nodes(now, 1).sum() <= free_before
        elif op < 0.95:
            job = rnd.choice(jobs)
            if job.procs:
                eng.leak_join(job.jobid, rnd.choice(job.procs))
        else:
            eng.cancel(rnd.choice(jobs).jobid)
        _check_leak_state(eng)
        assert not recount_errors(eng, [now, now + 10])
    if strategy == "leak-noncontig":
        assert oversub == 0


def test_leak_fork_order_parent_then_neighbour_then_oversubscribe() -> None:
    eng = Engine(generate_grid(3, 1, cores=2))
    job = eng.leak_start(2, "leak", now=0, duration=100)
    assert {p.node for p in job.procs} == {0}  # both cores of the start node
    p = eng.grow(job.jobid, None, strategy="leak", parent=0, now=1)
    assert p.node == 1 and not p.oversubscribed
    other = eng.leak_start(3, "leak", now=1, duration=100)  # takes the rest: node 1's core, node 2
    assert other.jobid != job.jobid
    p = eng.grow(job.jobid, None, strategy="leak", parent=0, now=2)
    assert p.oversubscribed and p.core is None and job.oversubscribed == 1
    # the join of a process on node 0 hands its core to the oversubscribed one
    first = job.procs[0]
    assert eng.leak_join(job.jobid, first) is False
    assert job.oversubscribed == 0 and p.core == first.core
    assert not recount_errors(eng, [2, 50])
    # a whole job joined away is gone
    for q in list(other.procs):
        gone = eng.leak_join(other.jobid, q)
    assert gone and other.jobid not in eng.jobs


@pytest.mark.parametrize("seed", range(4))
def test_joining_several_processes_at_once_equals_joining_them_one_by_one(seed: int) -> None:
    """A phase boundary's joins in one call: same engine state as one call each (heirs included)."""
    rnd = random.Random(seed)

    def build() -> tuple[Engine, list]:
        eng = Engine(generate_grid(4, 3, cores=2))
        jobs = [eng.leak_start(rnd2.randint(2, 7), "leak", now=0, duration=500) for _ in range(3)]
        for _ in range(8):  # forks, some oversubscribed once the machine is full
            j = jobs[rnd2.randrange(3)]
            eng.grow(j.jobid, None, strategy="leak", parent=rnd2.choice(j.procs).node, now=1)
        return eng, jobs

    rnd2 = random.Random(seed)
    one, jobs1 = build()
    rnd2 = random.Random(seed)
    many, jobs2 = build()
    assert snapshot(one) == snapshot(many)
    k = rnd.randrange(len(jobs1))
    idx = rnd.sample(range(len(jobs1[k].procs)), rnd.randint(1, len(jobs1[k].procs)))
    ending1 = [jobs1[k].procs[i] for i in idx]
    ending2 = [jobs2[k].procs[i] for i in idx]
    gone1 = False
    for p in ending1:
        gone1 = one.leak_join(jobs1[k].jobid, p)
    gone2 = many.leak_join(jobs2[k].jobid, ending2)
    assert gone1 == gone2
    assert snapshot(one) == snapshot(many)
    assert [(p.node, p.core, p.oversubscribed) for p in jobs1[k].procs] == [
        (p.node, p.core, p.oversubscribed) for p in jobs2[k].procs
    ]
    assert not recount_errors(many, [1, 400])


def test_a_join_of_a_foreign_or_repeated_process_refuses_the_whole_call_unchanged() -> None:
    eng = Engine(generate_grid(3, 1, cores=2))
    a = eng.leak_start(2, "leak", now=0, duration=100)
    b = eng.leak_start(2, "leak", now=0, duration=100)
    before = snapshot(eng)
    procs_before = list(a.procs)
    from fluxlite.errors import StateError

    for bad in ([a.procs[0], b.procs[0]], [a.procs[0], a.procs[0]]):
        with pytest.raises(StateError):
            eng.leak_join(a.jobid, bad)
        assert snapshot(eng) == before and a.procs == procs_before


def test_leak_noncontig_opens_a_new_region_in_snake_order() -> None:
    eng = Engine(generate_grid(4, 1, cores=1))
    a = eng.leak_start(1, "leak-noncontig", now=0, duration=50)
    b = eng.leak_start(1, "leak-noncontig", now=0, duration=50)
    nodes = {a.procs[0].node, b.procs[0].node}
    assert len(nodes) == 2
    # fill every neighbour of a's node, then fork: a new region far away
    while True:
        free = eng.grid.free_nodes(0, 50)
        if free.sum() <= 1:
            break
        eng.grow(b.jobid, None, strategy="leak-noncontig", parent=b.procs[-1].node, now=0)
    p = eng.grow(a.jobid, None, strategy="leak-noncontig", parent=a.procs[0].node, now=1)
    assert not p.oversubscribed and p.core is not None
    with pytest.raises(BusyError):
        eng.grow(a.jobid, None, strategy="leak-noncontig", parent=a.procs[0].node, now=1)


def test_repl_deadline_leak_grow_and_join(tmp_path: Path) -> None:
    r = _cli("graph", "generate", "--grid", "4x2", "--cores", "2", "-o", str(tmp_path / "g.json"))
    assert r.returncode == 0, r.stderr
    (tmp_path / "job.yaml").write_text(JOB.replace("duration: 100", "duration: 3600"))
    # the same steps through the Python API tell where the leak job's processes go
    eng = Engine.from_file(tmp_path / "g.json", format="jgf", policy="hilbert")
    for jid in (2, 3):
        eng.allocate_deadline(4, 0, 7200, duration=3600, jobid=jid)
    eng.allocate_deadline(4, 0, 7300, duration=3600, jobid=4)
    eng.cancel(3)
    job = eng.leak_start(3, now=0, duration=100, jobid=6)
    eng.grow(6, None, strategy="leak", now=1)
    eng.grow(6, None, strategy="leak", now=1)
    last = eng.graph.path(job.procs[-1].core)
    cmds = [
        "deadline 0 100 job.yaml",  # 1: 3600 s never fit before 100: rejected
        "deadline 0 7200 job.yaml",  # 2: now
        "deadline 0 7200 job.yaml",  # 3: now, the other half
        "deadline 0 7300 job.yaml",  # 4: at 3600
        "deadline 0 7100 job.yaml",  # 5: rejected (the machine is full until 3600)
        "cancel 3",
        "leak-start 3 duration=100",  # 6
        "grow 6 - strategy=leak now=1",
        "grow 6 - strategy=leak now=1",  # 5 processes on 4 nodes x 2 cores... still free
        f"join 6 {last}",
        "help deadline",
        "quit",
    ]
    r = _cli(
        "query", "-L", "g.json", "-f", "jgf", "-P", "hilbert", stdin="\n".join(cmds) + "\n", cwd=tmp_path
    )
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    assert r.stdout.count("RESOURCES=REJECTED (DEADLINE)") == 2
    assert "ERROR: deadline 1: REJECTED: cannot meet the deadline" in r.stderr
    assert "ERROR: deadline 5: REJECTED" in r.stderr
    assert "SCHEDULED AT=3600" in r.stdout
    assert r.stdout.count("RESOURCES=GROWN") == 2
    assert f"INFO: PROCESS node={job.procs[-1].node} {last}" in r.stdout
    assert "RESOURCES=SHRUNK" in r.stdout
    assert "deadline (D)" in r.stdout


def test_down_nodes_are_never_chosen_and_state_round_trips() -> None:
    eng = Engine(generate_grid(4, 4, cores=2), policy="hilbert")
    gi = eng.grid_info
    eng.set_status("/cluster0/node1", "down")
    r = eng.allocate_deadline(4, 0, 1000, duration=100)
    assert 1 not in eng.job_nodes(r.jobid)
    pos = sorted(int(gi.hilbert_pos[i]) for i in eng.job_nodes(r.jobid))
    assert pos == list(range(pos[0], pos[0] + 4))
    job = eng.leak_start(20, "leak-noncontig", now=0, duration=50)
    assert all(p.node != 1 for p in job.procs)
    with pytest.raises(UnsatisfiableError):
        eng.allocate_deadline(16, 0, 10**6, duration=10)
    occ = eng.grid.occupancy(10)
    assert sorted(int(i) for i in np.flatnonzero(occ == r.jobid)) == sorted(eng.job_nodes(r.jobid))
    assert occ[1] == 0 and eng.grid.occupancy(200)[eng.job_nodes(r.jobid)[0]] == 0
    again = Engine.restore_state(eng.save_state())
    assert again.grid_policy == "hilbert"
    assert again.job_nodes(r.jobid) == eng.job_nodes(r.jobid)
    assert not recount_errors(again, [0, 60, 120])


def test_a_jobspec_request_counts_nodes_or_whole_nodes_of_cores() -> None:
    from fluxlite.jobspec import parse_jobspec

    eng = Engine(generate_grid(4, 4, cores=4), policy="count")
    r = eng.allocate_deadline(parse_jobspec(JOB), 0, 1000)
    assert len(eng.job_nodes(r.jobid)) == 4  # node count 4, duration 100 from the jobspec
    cores_only = JOB.replace("type: node\n    count: 4", "type: slot\n    count: 1\n    label: x").replace(
        "      - type: slot\n        count: 1\n        label: default\n        with:\n          - type: core\n            count: 4",
        "      - type: core\n        count: 6",
    )
    cores_only = cores_only.replace("slot: default", "slot: x")
    r2 = eng.allocate_deadline(parse_jobspec(cores_only), 0, 1000)
    assert len(eng.job_nodes(r2.jobid)) == 2  # 6 cores = 2 whole nodes of 4


@settings(max_examples=12, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["hilbert", "manhattan", "count"]))
def test_static_and_leak_jobs_share_one_machine_without_conflicts(seed: int, policy: str) -> None:
    rnd = random.Random(seed)
    eng = Engine(generate_grid(4, 3, cores=2, torus=rnd.random() < 0.5), policy=policy)
    gi = eng.grid_info
    now = 0
    for _ in range(40):
        now += rnd.randint(0, 20)
        jobs = list(eng.leak_jobs.values())
        op = rnd.random()
        before = snapshot(eng)
        try:
            if op < 0.35:
                d = rnd.randint(5, 60)
                r = eng.allocate_deadline(
                    rnd.randint(1, 5), now, now + d + rnd.randint(0, 80), now=now, duration=d
                )
                for i in eng.job_nodes(r.jobid):
                    for c in gi.cores[i]:
                        assert r.jobid in eng.traverser.tags[c]
            elif op < 0.55:
                eng.leak_start(
                    rnd.randint(1, 4), rnd.choice(["leak", "leak-noncontig"]), now=now, duration=60
                )
            elif op < 0.75 and jobs:
                job = rnd.choice(jobs)
                if now < job.end:
                    eng.grow(job.jobid, None, strategy=job.strategy, parent=None, now=now)
            elif op < 0.9 and jobs:
                job = rnd.choice(jobs)
                if job.procs:
                    eng.leak_join(job.jobid, rnd.choice(job.procs))
            elif eng.jobs:
                eng.cancel(rnd.choice(sorted(eng.jobs)))
        except (DeadlineError, BusyError):
            assert snapshot(eng) == before
        _check_leak_state(eng)
        assert not recount_errors(eng, [now, now + 30, now + 90])


def test_a_join_frees_the_node_for_static_jobs_at_once() -> None:
    eng = Engine(generate_grid(3, 1, cores=2), policy="count")
    job = eng.leak_start(2, "leak", now=0, duration=100)
    p = eng.grow(job.jobid, None, strategy="leak", parent=0, now=5)
    assert p.node == 1
    before = snapshot(eng)
    with pytest.raises(DeadlineError):
        eng.allocate_deadline(2, 10, 60, now=10, duration=50)
    assert snapshot(eng) == before
    eng.leak_join(job.jobid, p)
    r = eng.allocate_deadline(2, 10, 60, now=10, duration=50)
    assert r.at == 10 and sorted(eng.job_nodes(r.jobid)) == [1, 2]
    assert not recount_errors(eng, [10, 50, 99])


def test_shrink_of_a_leak_core_drops_its_process() -> None:
    eng = Engine(generate_grid(2, 1, cores=2))
    job = eng.leak_start(3, "leak", now=0, duration=100)
    victim = job.procs[1]
    assert eng.shrink(job.jobid, paths=[eng.graph.path(victim.core)]) is False
    assert victim not in job.procs and len(job.procs) == 2
    _check_leak_state(eng)
    assert eng.shrink(job.jobid, paths=[eng.graph.path(p.core) for p in job.procs]) is True
    assert job.jobid not in eng.leak_jobs and job.jobid not in eng.jobs
    assert not recount_errors(eng, [0, 50])


@pytest.mark.parametrize("strategy", ["leak", "leak-noncontig"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_fork_batch_places_like_one_fork_each_and_allocates_once(strategy: str, seed: int) -> None:
    """fork_batch: the placements, the job's processes and the engine's state of sequential forks."""
    rng = random.Random(seed)

    def build() -> Engine:
        eng = Engine(generate_grid(5, 4, cores=2), policy="first")
        for j in range(6):
            eng.leak_start(rng_sizes[j], strategy=strategy, now=0, duration=200, jobid=j + 1)
        return eng

    rng_sizes = [rng.randint(1, 5) for _ in range(6)]
    parents = [rng.randrange(20) for _ in range(14)]
    one, batch = build(), build()
    seq = []
    for p in parents:
        try:
            seq.append(one.grow(3, None, strategy=strategy, parent=p, now=5))
        except BusyError:
            seq.append(None)
    calls = 0
    real = batch._allocate_items

    def counting(*a: object, **k: object) -> object:
        nonlocal calls
        calls += 1
        return real(*a, **k)

    batch._allocate_items = counting  # type: ignore[method-assign]
    with batch.grid.fork_batch(3, 5) as b:
        got = [b.fork(p) for p in parents]
    assert calls == (1 if any(g is not None and g.core is not None for g in got) else 0)
    assert [(p.node, p.core) if p else None for p in seq] == [(p.node, p.core) if p else None for p in got]
    assert [(p.node, p.core) for p in one.leak_jobs[3].procs] == [
        (p.node, p.core) for p in batch.leak_jobs[3].procs
    ]
    assert observable(one, [0, 5, 100, 199]) == observable(batch, [0, 5, 100, 199])  # span ids aside
    assert recount_errors(batch, [0, 5, 100]) == []
    # a failing block leaves the job and the engine as they were
    before = (snapshot(batch), [(p.node, p.core) for p in batch.leak_jobs[3].procs])
    with pytest.raises(RuntimeError), batch.grid.fork_batch(3, 6) as b:
        b.fork(parents[0])
        raise RuntimeError("stop")
    assert (snapshot(batch), [(p.node, p.core) for p in batch.leak_jobs[3].procs]) == before


def test_strict_manhattan_fails_where_its_compact_shape_is_busy_and_the_free_growth_does_not() -> None:
    """The figure-8 ablation: the distance-minimal neighbour is taken before its freeness is checked."""
    from fluxlite.grid.alloc import ABLATION_ALLOCATORS, choose_manhattan, choose_manhattan_strict

    gi = GridInfo(4, 4, False, list(range(16)), [[] for _ in range(16)])
    free = np.ones(16, dtype=bool)
    # empty machine: both give a compact 2x2 block from node 0
    assert sorted(choose_manhattan_strict(gi, free, 4) or []) == [0, 1, 4, 5]
    assert sorted(choose_manhattan(gi, free, 4) or []) == [0, 1, 4, 5]
    # a free 1-wide column 0 and free row 3: connected, 7 nodes, but no compact block anywhere
    free[:] = False
    free[[0, 4, 8, 12, 13, 14, 15]] = True
    assert choose_manhattan(gi, free, 4) is not None  # grows along the free L
    assert choose_manhattan_strict(gi, free, 4) is None  # node 1 (next to 0) is busy: every start fails
    assert ABLATION_ALLOCATORS["manhattan-strict"] is choose_manhattan_strict
    eng = Engine(generate_grid(4, 4, cores=1), policy="manhattan")
    with pytest.raises(MatchError):
        for j in range(1, 6):
            eng.allocate_deadline(4, 0, 100, duration=100, jobid=j, policy="manhattan-strict")
    assert len(eng.jobs) == 4  # four 2x2 blocks fill the 4x4 machine; the fifth finds none
