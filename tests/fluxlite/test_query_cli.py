"""`fluxlite query` as a real process: default cluster, formats, bad input, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import BENCH, need

JOB = """version: 1
resources:
  - type: node
    count: 1
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 2
attributes:
  system:
    duration: 60
tasks:
  - command: [app]
    slot: default
    count:
      per_slot: 1
"""


def run(args: list[str], stdin: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", "query", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
    )


@pytest.fixture
def job(tmp_path: Path) -> Path:
    p = tmp_path / "job.yaml"
    p.write_text(JOB)
    return p


def test_default_cluster_allocates(job: Path) -> None:
    """With no -L the bundled default cluster is loaded and a match prints resources and INFO."""
    p = run([], f"match allocate {job}\nquit\n")
    assert p.returncode == 0, p.stderr
    assert "core" in p.stdout and "INFO: RESOURCES=ALLOCATED" in p.stdout
    assert p.stderr == ""


def test_test_output_file_and_jgf_format(job: Path, tmp_path: Path) -> None:
    """-t writes the results to a file; -F jgf prints JSON Graph Format."""
    out = tmp_path / "out.txt"
    p = run(["-F", "jgf", "-t", str(out)], f"match allocate {job}\nquit\n")
    assert p.returncode == 0, p.stderr
    text = out.read_text()
    assert text.startswith('{"graph": {"nodes": [')
    assert "INFO: JOBID=1" in text


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        ("frobnicate", "unknown command: frobnicate"),
        ("match", "malformed command"),
        ("match allocate /no/such/job.yaml", "can't open /no/such/job.yaml"),
        ("match shuffle x.yaml", "unknown subcmd shuffle"),
        ("cancel 99", "nonexistent job 99"),
        ("cancel banana", "invalid job id"),
        ("find colour=red", "invalid criteria"),
        ("find names=socket[af[]", "invalid criteria"),
        ("set-status /default0 sideways", "unrecognized status"),
        ("partial-cancel 1 xml /dev/null", "unsupported reader xml"),
        ("attach /no/such.json", "can't open /no/such.json"),
        ("remove /nope true", "could not find path /nope"),
    ],
)
def test_bad_commands_give_one_line_errors(line: str, expect: str, job: Path) -> None:
    """Each bad command prints one error line on stderr, no traceback, and the loop goes on."""
    p = run([], f"{line}\nmatch allocate {job}\nquit\n")
    assert p.returncode == 0
    assert expect in p.stderr
    assert "Traceback" not in p.stderr and "Traceback" not in p.stdout
    assert len([ln for ln in p.stderr.splitlines() if ln.strip()]) == 1, p.stderr
    assert "INFO: RESOURCES=ALLOCATED" in p.stdout


def test_bad_jobspec_names_field(tmp_path: Path) -> None:
    """A malformed jobspec is reported with the offending field and the loop continues."""
    bad = tmp_path / "bad.yaml"
    bad.write_text(JOB.replace("count: 2", "count: 0\n                min: 1"))
    p = run([], f"match allocate {bad}\nquit\n")
    assert "Traceback" not in p.stderr
    assert "count" in p.stderr and "bad.yaml" in p.stderr


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["-L", "/no/such/graph.graphml"], "file does not exist"),
        (["-P", "sideways"], "unknown match policy"),
        (["-F", "yaml"], "unknown format for --match-format"),
        (["-p", "ALL"], "invalid prune filter"),
        (["-S", "XYZ"], "unknown --match-subsystems"),
    ],
)
def test_bad_options_exit_nonzero_with_one_line(args: list[str], expect: str) -> None:
    """Bad command-line options give a one-line error and a non-zero exit, no traceback."""
    p = run(args, "quit\n")
    assert p.returncode != 0
    assert expect in p.stderr
    assert "Traceback" not in p.stderr


def test_malformed_graph_file(tmp_path: Path) -> None:
    """A broken GRUG file is reported in one line naming the file."""
    g = tmp_path / "broken.graphml"
    g.write_text("<graphml><graph><node id='x'>")
    p = run(["-L", str(g)], "quit\n")
    assert p.returncode != 0
    assert "broken.graphml" in p.stderr and "Traceback" not in p.stderr


def test_help_lists_options_and_commands() -> None:
    """--help answers which options and commands exist."""
    p = subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", "query", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0
    for word in ("--load-file", "--match-policy", "--prune-filters", "match allocate", "find CRITERIA"):
        assert word in p.stdout


def test_bench_graph_loads_and_fills(tmp_path: Path) -> None:
    """The bench L4 graph (one node) takes exactly one whole-node request."""
    need(BENCH)
    cmds = f"match allocate {BENCH}/jobspecs/T7.yaml\nmatch allocate {BENCH}/jobspecs/T7.yaml\nquit\n"
    p = run(["-L", str(BENCH / "graphs" / "L4.graphml"), "-P", "low"], cmds)
    assert p.stdout.count("RESOURCES=ALLOCATED") == 1
    assert p.stdout.count("No matching resources found") == 1


def test_test_instance_r_with_four_ranks_on_one_host(tmp_path: Path) -> None:
    """R of `flux start --test-size=4` (ranks 0-3, one host) loads with -f rv1exec; each match takes
    distinct ranks, written as R with their ranks and the host once per rank; the fifth is refused."""
    import orjson

    r = tmp_path / "R.json"
    r.write_bytes(
        orjson.dumps(
            {
                "version": 1,
                "execution": {
                    "R_lite": [{"rank": "0-3", "children": {"core": "0-3"}}],
                    "nodelist": ["docker-desktop,docker-desktop,docker-desktop,docker-desktop"],
                    "starttime": 0,
                    "expiration": 0,
                },
            }
        )
    )
    job = tmp_path / "job.yaml"
    job.write_text(
        JOB.replace("          - type: socket\n            count: 1\n            with:\n", "").replace(
            "              - type: core\n                count: 2",
            "          - type: core\n            count: 4",
        )
    )
    cmds = f"match allocate {job}\n" * 5 + "get-status /cluster0/docker-desktop\nquit\n"
    p = run(["-L", str(r), "-f", "rv1exec", "-F", "rv1_nosched"], cmds)
    assert p.returncode == 0, p.stderr
    docs = [orjson.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    assert sorted(d["execution"]["R_lite"][0]["rank"] for d in docs) == ["0", "1", "2", "3"]
    assert all(d["execution"]["nodelist"] == ["docker-desktop"] for d in docs)
    assert p.stdout.count("RESOURCES=ALLOCATED") == 4 and p.stdout.count("No matching resources found") == 1
    assert p.stdout.count("/cluster0/docker-desktop is up\n") == 4


def test_unknown_option_exits_1_like_resource_query() -> None:
    """`fluxlite query --bogus` through the real entry point: exit 1 (resource-query's usage (1)), no traceback."""
    p = run(["--bogus"], "quit\n")
    assert p.returncode == 1 and "unrecognized arguments: --bogus" in p.stderr and "Traceback" not in p.stderr
