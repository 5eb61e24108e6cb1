"""``fluxlite instance serve --queue easy``: the batch queue over gRPC, on a real instance process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from fluxlite.errors import InputError, StateError, UnknownJobError, UnsatisfiableError
from hierarchy import InstanceClient, NotAuthorizedError, read_secret_file
from hierarchy._queue_client import QueueClient
from tests.hierarchy.helpers import short_tmpdir, write_graph


def _serve(d: Path, policy: str) -> tuple[subprocess.Popen, str, bytes]:
    graph = write_graph(d / "g.json", 4)
    ready = d / "ready"
    proc = subprocess.Popen(
        [sys.executable, "-m", "fluxlite.cli.main", "instance", "serve", "--jgf", str(graph),
         "--listen", f"unix:{d}/q.sock", "--secret-file", str(d / "secret"), "--queue", policy,
         "--ready-file", str(ready), "--log-level", "WARNING"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not ready.exists():
        if proc.poll() is not None:
            raise AssertionError(proc.stderr.read().decode())
        assert time.monotonic() < deadline, "instance did not start"
        time.sleep(0.05)
    return proc, ready.read_text().strip(), read_secret_file(d / "secret")


def _wait(fn, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not fn():
        assert time.monotonic() < deadline
        time.sleep(0.1)


def test_easy_queue_over_grpc_with_evolving_jobs():
    """Submit/complete/cancel follow EASY; dynget/dynfree resize through the engine; errors keep their types."""
    with short_tmpdir() as d:
        proc, addr, secret = _serve(d, "easy")
        try:
            with QueueClient(addr, secret) as q:
                a = q.submit(4, 600)
                assert a["state"] == "running" and len(a["paths"]) == 4
                b = q.submit(4, 600, user="bob")
                assert b["state"] == "pending" and b["reserved_at"] is not None  # the head reserves
                c = q.submit(1, 60)
                assert c["state"] == "pending"  # no hole to backfill into
                with pytest.raises(UnsatisfiableError):
                    q.submit(5, 60)
                q.complete(a["jobid"])
                jobs = q.jobs()
                assert jobs[b["jobid"]]["state"] == "running" and jobs[c["jobid"]]["state"] == "pending"
                q.cancel(b["jobid"])
                assert q.jobs([c["jobid"]])[c["jobid"]]["state"] == "running"
                e = q.submit(2, 600, user="evo")
                assert e["state"] == "running"
                with pytest.raises(StateError):
                    q.dynfree(e["jobid"], e["paths"])  # all of it: that is cancel, not dynfree
                waiting = q.submit(4, 60)
                with pytest.raises(StateError):
                    q.dynget(waiting["jobid"], 1)  # only a running job can ask
                q.cancel(waiting["jobid"])
                granted, e2 = q.dynget(e["jobid"], 1)
                assert granted and e2["size"] == 3 and len(e2["paths"]) == 3
                granted, _ = q.dynget(e["jobid"], 1)
                assert not granted  # no idle node left: refused, not queued
                e3 = q.dynfree(e["jobid"], e2["paths"][:2])
                assert e3["size"] == 1 and set(e3["paths"]) == set(e2["paths"][2:])
                with pytest.raises(UnknownJobError):
                    q.cancel(424242)
                short = q.submit(1, 1)
                _wait(
                    lambda: q.jobs([short["jobid"]])[short["jobid"]]["state"] == "done"
                )  # walltime, wall clock
            with InstanceClient(addr, secret) as inst:  # the instance service shares the server
                assert inst.health()["status"]
            with QueueClient(addr, b"wrong-secret") as bad, pytest.raises(NotAuthorizedError):
                bad.jobs()
            # the secret file's path, as the CLI's --secret-file (a Path or a string), or its text
            for form in (d / "secret", str(d / "secret"), secret.decode()):
                with QueueClient(addr, form) as q:
                    assert q.jobs()
            loose = d / "loose.secret"
            loose.write_bytes(secret)
            loose.chmod(0o644)
            with pytest.raises(InputError, match="chmod 600"):
                QueueClient(addr, str(loose))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
