"""Hole 5: a few hundred bytes of YAML aliases must not expand into millions of resources, anywhere."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import orjson
import pytest

from fluxlite.errors import JobspecError
from fluxlite.jobspec import MAX_RESOURCES, parse_jobspec
from tests.hierarchy.helpers import short_tmpdir
from tests.security.raw import Server, pb


def bomb(levels: int = 9, fan: int = 10) -> str:
    """A valid-looking jobspec whose anchors expand to ``fan ** (levels - 1)`` cores (~800 bytes)."""
    defs = ["&a0 {type: core, count: 1}"]
    for i in range(1, levels):
        defs.append(
            f"&a{i} {{type: socket, count: 1, with: [{', '.join(f'*a{i - 1}' for _ in range(fan))}]}}"
        )
    body = "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
    body += "".join(f"      - {d}\n" for d in defs)
    return (
        body
        + "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\nattributes: {}\n"
    )


def _parse_in_subprocess(text: str, timeout: float = 10.0) -> str:
    code = "import sys; from fluxlite.jobspec import parse_jobspec\ntry:\n parse_jobspec(sys.stdin.read())\nexcept Exception as e:\n print(type(e).__name__, e)\nelse:\n print('accepted')"  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-c", code], input=text, capture_output=True, text=True, timeout=timeout
    )
    return r.stdout.strip()


def test_the_parser_refuses_an_alias_bomb_at_once() -> None:
    text = bomb()
    assert len(text) < 1000
    out = _parse_in_subprocess(text)  # today: minutes of CPU and gigabytes (the timeout fails it)
    assert out.startswith("JobspecError") and "aliases expand the document" in out, out
    # a handful of aliases is still fine (Fluxion accepts them)
    ok = parse_jobspec(bomb(levels=3, fan=4))
    assert sum(1 for _ in ok.resources[0].with_) == 3
    # the request tree is bounded after expansion whatever the syntax (JSON has no aliases)
    many = {"version": 1, "resources": [{"type": "slot", "count": 1, "label": "d",
            "with": [{"type": "core", "count": 1}] * (MAX_RESOURCES + 1)}],
            "tasks": [{"command": ["a"], "slot": "d", "count": {"per_slot": 1}}], "attributes": {}}  # fmt: skip
    with pytest.raises(JobspecError, match=f"more than {MAX_RESOURCES} resources"):
        parse_jobspec(orjson.dumps(many))


def test_repl_refuses_it_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "bomb.yaml").write_text(bomb())
    r = subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", "query"],
        input=f"match allocate {tmp_path / 'bomb.yaml'}\nquit\n", capture_output=True, text=True, timeout=20,
    )  # fmt: skip
    assert "aliases expand the document" in r.stdout + r.stderr
    assert "Traceback" not in r.stdout + r.stderr


def test_16_bombs_in_flight_leave_stat_answering() -> None:
    """Over gRPC: every bomb is refused as bad input, and Stat keeps answering meanwhile."""
    with short_tmpdir() as d:
        s = Server(d).start()
        raw = s.raw()
        try:
            codes: list[grpc.StatusCode] = []

            def send() -> None:
                codes.append(
                    raw.code(
                        raw.i, "MatchAllocate", pb.MatchAllocateRequest(jobspec=bomb().encode()), "alice"
                    )
                )

            threads = [threading.Thread(target=send) for _ in range(16)]
            t0 = time.monotonic()
            for t in threads:
                t.start()
            lat = []
            for _ in range(5):
                ts = time.monotonic()
                raw.i("Stat", pb.StatRequest(), "alice", timeout=30)
                lat.append(time.monotonic() - ts)
            for t in threads:
                t.join(timeout=60)
            assert codes == [grpc.StatusCode.INVALID_ARGUMENT] * 16
            assert time.monotonic() - t0 < 30  # today: each bomb takes minutes
            assert s.rss_mb() < 300
            info = orjson.loads(raw.i("Info", pb.InfoRequest(recount=True), "admin").json)
            assert info["jobs"] == [] and info["recount_errors"] == []
        finally:
            raw.close()
            s.stop()
