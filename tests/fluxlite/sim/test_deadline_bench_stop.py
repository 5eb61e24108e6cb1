"""``kill PID`` on ``fluxlite sim deadline bench --baseline REF`` stops it and everything it started:
its worker process, the baseline's process and the baseline's unpacked tree."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ENTRY = "import sys; from fluxlite.cli.main import main; sys.exit(main())"


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_sigterm_stops_the_bench_its_processes_and_removes_the_baseline_tree(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    args = ["sim", "deadline", "bench", "--jobs", "4000", "--repeat", "1", "--strategies", "leak"]
    proc = subprocess.Popen(
        [sys.executable, "-c", ENTRY, *args, "--baseline", "HEAD"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        cwd=tmp_path,
        env=env,
    )
    try:
        end = time.monotonic() + 60
        while not list(tmp_path.glob("fluxlite-bench-deadline-*")):  # the baseline tree is unpacked first
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < end, "the bench did not start"
            time.sleep(0.05)
        time.sleep(1.5)  # this code's first run is under way in its worker process
        assert proc.poll() is None
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(20)
        assert rc == 128 + signal.SIGTERM
        deadline = time.monotonic() + 10
        while _group_alive(proc.pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _group_alive(proc.pid), "a process the bench started outlived it"
        assert not list(tmp_path.glob("fluxlite-bench-deadline-*"))
    finally:
        if _group_alive(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
