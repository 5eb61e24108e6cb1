"""Stopping ``fluxlite sim deadline sweep``: Ctrl-C, SIGTERM and a hard kill stop it and every worker.

Real processes: the sweep runs as a subprocess (its own session, as under a
terminal), the test sends the signal, then checks that the sweep and each of
its worker processes are gone within a few seconds and that a rerun resumes.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")

ENTRY = "import sys; from fluxlite.cli.main import main; sys.exit(main())"
#: six runs of about a second each on a quiet 2-core machine (2,000 jobs; at 150 jobs the faster
#: simulator finished all six within the test's 0.3 s, so the signal found no sweep to stop):
#: long enough to be stopped in the middle
ARGS = [
    "sim", "deadline", "sweep", "--strategies", "leak,hilbert", "--loads", "heavy", "--types", "1",
    "--comms", "async", "--traces", "3", "--jobs", "2000", "--grid", "8x8", "--quiet",
]  # fmt: skip


def _start(out: Path, *extra: str, args: list[str] = ARGS) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args, "--out", str(out), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # its own process group, as a shell job
        cwd=out.parent,
        # a foreground job's SIGINT, even when this test runs where SIGINT is ignored (a background
        # `cmd &` of a non-interactive shell): Python keeps an inherited SIG_IGN
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def _wait_for_workers(proc: subprocess.Popen[bytes], n: int, timeout: float = 30.0) -> list[int]:
    """The pids of ``n`` worker processes of ``proc`` once they exist (the sweep is then running)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        kids = psutil.Process(proc.pid).children(recursive=True)
        if len(kids) >= n:
            return [k.pid for k in kids]
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError(f"the sweep did not start {n} workers in {timeout} s")


def _gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still running after ``timeout`` seconds (zombies count as gone)."""
    end = time.monotonic() + timeout
    alive = list(pids)
    while alive and time.monotonic() < end:
        alive = [
            p for p in alive if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        time.sleep(0.05)
    return alive


def _kill_all(proc: subprocess.Popen[bytes], pids: list[int]) -> None:
    for p in [proc.pid, *pids]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    proc.wait(5)


@pytest.mark.parametrize(
    ("signum", "group"),
    [(signal.SIGINT, True), (signal.SIGTERM, False)],
    ids=["ctrl-c-to-the-group", "kill-pid"],
)
def test_a_signal_stops_the_sweep_and_its_workers_and_a_rerun_resumes(tmp_path, signum, group) -> None:
    out = tmp_path / "s.csv"
    proc = _start(out, "--workers", "2")
    workers = _wait_for_workers(proc, 2)
    try:
        time.sleep(0.3)  # the workers are inside their first runs
        t0 = time.monotonic()
        if group:  # a terminal's Ctrl-C reaches every process of the foreground group
            os.killpg(proc.pid, signum)
        else:  # `kill PID`: the sweep alone gets the signal
            os.kill(proc.pid, signum)
        rc = proc.wait(10)
        stopped_in = time.monotonic() - t0
        left = _gone(workers, 5.0)
    finally:
        _kill_all(proc, workers)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert rc == 128 + signum, err
    assert "Traceback" not in err and f"stopped by {signal.Signals(signum).name}" in err
    assert stopped_in < 5.0
    assert left == []
    before = _rows(out)
    assert len(before) < 6  # it was stopped before the end
    if group:
        return  # the rerun is the same after either signal: checked once
    again = subprocess.run(
        [sys.executable, "-c", ENTRY, *ARGS, "--out", str(out), "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert f"{6 - len(before)} runs done, {len(before)} already there, 6 planned" in again.stdout
    after = _rows(out)
    assert after[: len(before)] == before and len(after) == 6
    assert len({(r["strategy"], r["trace"]) for r in after}) == 6


def test_workers_die_with_a_hard_killed_sweep(tmp_path) -> None:
    """SIGKILL cannot be caught: the workers notice their parent is gone and end themselves."""
    out = tmp_path / "s.csv"
    proc = _start(out, "--workers", "2")
    workers = _wait_for_workers(proc, 2)
    try:
        time.sleep(0.3)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(5)
        left = _gone(workers, 5.0)
    finally:
        _kill_all(proc, workers)
    assert left == []


def test_a_torn_last_row_is_dropped_and_redone(tmp_path) -> None:
    """A row cut short by a hard kill does not count as done (and does not break the CSV)."""
    from fluxlite.sim.deadline.sweep import plan, sweep

    specs = plan(["count"], ["heavy"], ["0"], ["async"], 2, jobs=20, width=4, height=3, cores=2)
    out = tmp_path / "s.csv"
    sweep(specs, out, workers=1)
    whole = out.read_text()
    out.write_text(whole[: whole.rstrip("\n").rfind("\n") + 1] + "count,heavy,0,async,1,20,1")
    assert sweep(specs, out, workers=1) == {"planned": 2, "skipped": 1, "ran": 1}
    assert out.read_text().replace("\r", "").splitlines()[2].startswith("count,heavy,0,async,1,20,")
    assert len(_rows(out)) == 2


def test_stopping_a_dask_sweep_frees_the_cluster(tmp_path, dask_cluster) -> None:
    """Ctrl-C on a sweep fanned out over Dask cancels its tasks: the workers are idle again in seconds."""
    distributed = pytest.importorskip("distributed")
    out = tmp_path / "s.csv"
    cluster = dask_cluster
    with distributed.Client(cluster.scheduler_address) as client:
        # runs of 15 s or more: without the stop event the workers would stay busy long after
        big = [*ARGS[:-5], "--jobs", "10000", "--grid", "16x8", "--quiet"]
        proc = _start(out, "--scheduler", cluster.scheduler_address, args=big)
        try:
            end = time.monotonic() + 30
            while not any(client.processing().values()):
                assert time.monotonic() < end and proc.poll() is None
                time.sleep(0.05)
            time.sleep(2.0)  # past the trace's generation, inside the simulations
            t0 = time.monotonic()
            os.killpg(proc.pid, signal.SIGINT)
            rc = proc.wait(10)
            end = time.monotonic() + 8

            def running() -> int:  # tasks queued on the scheduler or still in a worker's thread
                queued = sum(len(t) for t in client.processing().values())
                return queued + sum(client.run(lambda dask_worker: len(dask_worker.state.executing)).values())

            while running() and time.monotonic() < end:
                time.sleep(0.05)
            left = running()
            idle_in = time.monotonic() - t0
        finally:
            _kill_all(proc, [])
    assert rc == 128 + signal.SIGINT, proc.stderr.read().decode() if proc.stderr else ""
    assert left == 0 and idle_in < 6.0, (left, idle_in)
    assert _rows(out) == []
