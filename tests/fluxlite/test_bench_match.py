"""``fluxlite bench match`` reports the cost per allocated vertex (a real, small run on L0)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fluxlite.cli.bench import main_match


def test_bench_match_reports_vertices_and_us_per_vertex(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "rows.json"
    rc = main_match(["--graphs", "L0", "--requests", "T7,T8", "--policies", "first", "--json", str(out)])
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    match = {r["request"]: r for r in rows if r["kind"] == "match"}
    # one node: the node, 2 sockets, 32 cores and the cluster it shares; one socket: 16 cores,
    # the socket, and the node and cluster above it
    assert match["T7"]["vertices"] == 1 + 2 + 32 + 1
    assert match["T8"]["vertices"] == 16 + 1 + 1 + 1
    for r in match.values():
        assert r["matches"] > 0 and r["full"]
        assert r["us_per_vertex"] == pytest.approx(r["median_ms"] * 1000.0 / r["vertices"])
    text = capsys.readouterr().out
    assert "us/vertex" in text


def test_bench_match_alternatives_need_the_flexible_traverser(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main_match(["--graphs", "L0", "--requests", "A4"])
    assert exc.value.code == 2
    out = tmp_path / "rows.json"
    rc = main_match(
        [
            "--graphs",
            "L0",
            "--requests",
            "A4",
            "--policies",
            "low",
            "--traverser",
            "flexible",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines() if '"match"' in line]
    # 8 nodes, each giving one slot of one 16-core socket (the alternative that places more
    # slots, 2 per node, and the slot count keeps one): 256 sockets fill after 32 matches
    assert row["traverser"] == "flexible" and row["full"] and row["matches"] == 32
    assert row["vertices"] == 8 * (1 + 1 + 16) + 1


def test_bench_match_gc_choice_is_recorded(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """Both collector settings run; the rows and the header say which one was timed."""
    for choice in ("default", "upkeep"):
        out = tmp_path / f"{choice}.json"
        argv = ["--graphs", "L0", "--requests", "T7", "--policies", "low", "--gc", choice, "--json", str(out)]
        assert main_match(argv) == 0
        (row,) = [json.loads(line) for line in out.read_text().splitlines() if '"match"' in line]
        assert row["gc"] == choice and row["full"]
        assert f"gc {choice};" in capsys.readouterr().out


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(x) for x in text.split()]


def test_killed_bench_match_leaves_no_files_and_no_worker(tmp_path: Path) -> None:
    """``kill PID`` during a run: the temporary directory goes, the worker goes, status 128+15."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "fluxlite.cli.main", "bench", "match", "--graphs", "L0",
         "--policies", "first,low", "--budget", "60"],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while not (workers and list(tmp.glob("fluxlite-bench-*"))):
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            assert time.monotonic() < deadline, "no worker started"
            time.sleep(0.05)
            workers = _children(proc.pid)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert list(tmp.iterdir()) == []
    deadline = time.monotonic() + 10
    while any(Path(f"/proc/{w}").exists() for w in workers):
        assert time.monotonic() < deadline, f"worker {workers} still running"
        time.sleep(0.05)
