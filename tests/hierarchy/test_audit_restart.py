"""An instance started on an audit log that already has lines marks where its own run begins."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import orjson

from tests.hierarchy.helpers import short_tmpdir, write_graph


def _run_once(d: Path) -> None:
    ready = d / "ready"
    ready.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [sys.executable, "-m", "fluxlite.cli.main", "instance", "serve", "--jgf", str(d / "g.json"),
         "--listen", f"unix:{d}/s.sock", "--secret-file", str(d / "secret"), "--ready-file", str(ready),
         "--audit-log", str(d / "root.audit.jsonl"), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "instance did not start"
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_relaunch_marks_the_audit_log() -> None:
    """A fresh log gets no marker; starting again on a log with lines appends one 'Start'/'restart' line."""
    with short_tmpdir() as d:
        write_graph(d / "g.json", 2)
        _run_once(d)
        log = d / "root.audit.jsonl"
        assert log.read_text() == ""
        earlier = orjson.dumps({"time": 1.0, "op": "MatchAllocate", "job": 1, "outcome": "ok"}).decode()
        log.write_text(earlier + "\n")
        _run_once(d)
        lines = log.read_text().splitlines()
        assert lines[0] == earlier and len(lines) == 2
        mark = orjson.loads(lines[1])
        assert (mark["op"], mark["outcome"], mark["job"]) == ("Start", "restart", 0)
        assert "earlier run" in mark["detail"]
