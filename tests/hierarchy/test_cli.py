"""The hierarchy commands as real processes: help, one-line errors, launch/grow/shrink/stop, Ctrl-C."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.hierarchy.helpers import nodes_jobspec, short_tmpdir, wait_for, write_graph

FLUXLITE = [sys.executable, "-m", "fluxlite.cli.main"]


def run(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*FLUXLITE, *args], capture_output=True, text=True, timeout=timeout)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.parametrize(
    "args",
    [
        ["instance", "--help"],
        ["instance", "serve", "--help"],
        ["hierarchy", "--help"],
        ["hierarchy", "launch", "--help"],
        ["grow", "--help"],
        ["shrink", "--help"],
    ],
)
def test_help(args: list[str]) -> None:
    """Every command has a --help that exits 0."""
    r = run(*args)
    assert r.returncode == 0 and "usage:" in r.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            ["grow", "--instance", "unix:/tmp/none.sock", "--secret-file", "/nonexistent", "job.yaml"],
            "jobspec",
        ),
        (["shrink", "--instance", "unix:/tmp/none.sock", "--jobid", "1"], "required"),
        (["instance", "serve", "--jgf", "/nonexistent.json", "--secret-file", "/nonexistent/s"], "secret"),
        (["hierarchy", "launch", "/nonexistent.yaml"], "cannot read tree spec"),
        (["hierarchy", "stop", "/nonexistent"], "instances.json"),
        (["instance", "info", "--instance", "bad address"], "secret"),
        (["instance", "serve", "--jgf", "/nonexistent.json", "--secret-file", "/nonexistent/s", "--idle-wait", "11"], "--idle-wait"),
        (["instance", "serve", "--jgf", "/nonexistent.json", "--secret-file", "/nonexistent/s", "--idle-wait", "-1"], "--idle-wait"),
    ],
)
def test_bad_input_is_one_line(args: list[str], needle: str) -> None:
    """Bad input gives a one-line error, a non-zero status and no traceback."""
    r = run(*args)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert needle in r.stderr


def test_unreachable_instance_is_one_line() -> None:
    """A grow against an instance that is not running fails with a one-line 'unreachable' error."""
    with short_tmpdir() as d:
        from hierarchy import write_secret_file

        write_secret_file(d / "secret")
        (d / "job.yaml").write_text(nodes_jobspec(1))
        r = run(
            "grow",
            "--instance",
            f"unix:{d}/none.sock",
            "--secret-file",
            str(d / "secret"),
            "--retries",
            "0",
            str(d / "job.yaml"),
        )
        assert r.returncode == 1 and "unreachable" in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_launch_grow_shrink_stop() -> None:
    """launch --detach a loopback-TCP tree, grow and shrink through it by name, check status, stop it."""
    with short_tmpdir() as d:
        write_graph(d / "g.json", 8)
        (d / "n4.yaml").write_text(nodes_jobspec(4))
        (d / "n2.yaml").write_text(nodes_jobspec(2))
        (d / "n1.yaml").write_text(nodes_jobspec(1))
        (d / "tree.yaml").write_text(
            "transport: tcp\nchild_grace: 5\nroot:\n  graph: g.json\ndepth: 3\nfanout: 1\n"
            "jobspecs: [n4.yaml, n2.yaml]\n"
        )
        rd = d / "run"
        r = run("hierarchy", "launch", str(d / "tree.yaml"), "--run-dir", str(rd), "--detach")
        assert r.returncode == 0, r.stderr
        try:
            doc = json.loads((rd / "instances.json").read_text())
            names = [x["name"] for x in doc["instances"]]
            assert names == ["root", "root-0", "root-0.0"]
            assert all(x["address"].startswith("127.0.0.1:") for x in doc["instances"])
            assert all(x["address"] in r.stdout for x in doc["instances"])
            assert os.stat(rd / "secret").st_mode & 0o777 == 0o600
            assert all(
                str(rd / "secret") in " ".join(x["argv"]) and "--secret " not in " ".join(x["argv"])
                for x in doc["instances"]
            )
            rdo = ["--run-dir", str(rd)]
            r = run("grow", "-i", "root-0.0", *rdo, str(d / "n2.yaml"), "--json")
            assert r.returncode == 0, r.stderr
            job = json.loads(r.stdout)["jobid"]
            r = run(
                "grow",
                "-i",
                "root-0.0",
                *rdo,
                "--jobid",
                str(job),
                str(d / "n4.yaml"),
                "--json",
                "-o",
                str(d / "grown.json"),
            )
            assert r.returncode == 0, r.stderr
            out = json.loads(r.stdout)
            assert out["via"] == "parent" and [t["outcome"] for t in out["timings"]] == [
                "parent",
                "parent",
                "local",
            ]
            r = run(
                "shrink",
                "-i",
                "root-0.0",
                *rdo,
                "--jobid",
                str(job),
                "--jgf",
                str(d / "grown.json"),
                "--json",
            )
            assert r.returncode == 0, r.stderr
            assert json.loads(r.stdout)["returned"] == 4 * 11
            r = run("instance", "info", "-i", "root", *rdo, "--recount")
            info = json.loads(r.stdout)
            assert info["free"]["node"] == 4 and info["recount_errors"] == []
            r = run("hierarchy", "status", str(rd))
            assert r.returncode == 0 and r.stdout.count(" up ") == 3
        finally:
            r = run("hierarchy", "stop", str(rd))
        assert r.returncode == 0 and "stopped 3" in r.stdout
        assert not any(_alive(x["pid"]) for x in doc["instances"])


def test_foreground_launch_stops_on_ctrl_c() -> None:
    """A foreground launch tears the whole tree down on SIGINT."""
    with short_tmpdir() as d:
        write_graph(d / "g.json", 4)
        (d / "n1.yaml").write_text(nodes_jobspec(1))
        (d / "tree.yaml").write_text("root:\n  graph: g.json\ndepth: 2\nfanout: 2\njobspecs: n1.yaml\n")
        rd = d / "run"
        p = subprocess.Popen(
            [*FLUXLITE, "hierarchy", "launch", str(d / "tree.yaml"), "--run-dir", str(rd)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            wait_for(lambda: (rd / "root-1.addr").exists(), 60.0, "the tree to start")
            time.sleep(0.2)
            doc = json.loads((rd / "instances.json").read_text())
            assert len(doc["instances"]) == 3 and doc["launcher_pid"] == p.pid
            p.send_signal(signal.SIGINT)
            out, err = p.communicate(timeout=30)
            assert p.returncode == 0, err
            assert "stopping the tree" in out
            assert not any(_alive(x["pid"]) for x in doc["instances"])
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
                subprocess.run([*FLUXLITE, "hierarchy", "stop", str(rd)], capture_output=True, timeout=60)


def test_bad_tree_spec_names_the_field() -> None:
    """A tree spec error names the file and the field."""
    with short_tmpdir() as d:
        write_graph(d / "g.json", 2)
        (d / "t.yaml").write_text("root:\n  graph: g.json\ndepth: 3\nfanout: 1\njobspecs: [a.yaml]\n")
        r = run("hierarchy", "launch", str(d / "t.yaml"))
        assert r.returncode != 0 and "jobspecs" in r.stderr and "Traceback" not in r.stderr
        (d / "t.yaml").write_text("tree:\n  graph: g.json\n  children:\n    - name: a\n")
        r = run("hierarchy", "launch", str(d / "t.yaml"))
        assert r.returncode != 0 and "children[0].jobspec" in r.stderr
