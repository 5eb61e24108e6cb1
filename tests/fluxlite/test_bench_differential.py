"""``fluxlite bench differential``: the classifier and shrinker with stand-in runners, and a short real
run against Fluxion's resource-query when it is installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fluxlite.cli import bench_differential as bd
from tests.conftest import FLUXION_DATA, need

RESOURCE_QUERY = Path(
    os.environ.get("FLUXLITE_RESOURCE_QUERY")
    or Path.home() / ".cache" / "fluxlite" / "flux-0.88.0" / "bin" / "resource-query"
)


def test_normalize_masks_only_info_times() -> None:
    text = "INFO: 1, ALLOCATED, 0, /a b.yaml, 0.000389099\nINFO: JOBID=1\n"
    assert bd.normalize(text) == "INFO: 1, ALLOCATED, 0, /a b.yaml, T\nINFO: JOBID=1\n"
    # the same line with another time normalizes the same; anything else is kept
    assert bd.normalize(text.replace("0.000389099", "1.5e-05")) == bd.normalize(text)
    assert bd.normalize("INFO: ELAPSE=0.1\n") == "INFO: ELAPSE=0.1\n"


def test_classify_json_path_and_lines() -> None:
    a = '{"graph": {"nodes": [{"id": "3", "metadata": {"rank": -1}}]}}\n'
    b = '{"graph": {"nodes": [{"id": "3", "metadata": {"rank": 0}}]}}\n'
    assert bd.classify((b, ""), (a, ""), "match allocate x") == "writer JSON .graph.nodes[].metadata.rank: value"
    c = '{"graph": {"nodes": [{"id": "3", "metadata": {"rank": -1, "unit": "GB"}}]}}\n'
    assert bd.classify((a, ""), (c, ""), "find status=up").endswith(".unit: only Fluxion has it")
    got = bd.classify(("", ""), ("", "match_allocate: ERROR: x 12\n"), "match satisfiability /j.yaml")
    assert got == "match satisfiability: stderr Fluxion 'match_allocate: ERROR: x N' / fluxlite (nothing)"
    assert bd.classify(("x\n", "e\n"), ("x\n", "e\n"), "info 1") == "identical"


def test_shrink_finds_the_minimal_reproducer() -> None:
    """The difference appears once 'b' ran after some 'a': the reproducer is those two commands."""

    def fluxion(args, cmds):  # type: ignore[no-untyped-def]
        seen_a = False
        out = []
        for c in cmds:
            seen_a = seen_a or c == "a"
            out.append("B!" if c == "b" and seen_a else c)
        return "\n".join(out), ""

    def ours(args, cmds):  # type: ignore[no-untyped-def]
        return "\n".join(cmds), ""

    cmds = ["x", "a", "y", "z", "b", "w", "b"]
    klass, repro = bd.shrink(fluxion, ours, [], cmds, budget=50)
    assert repro == ["a", "b"]
    assert klass.startswith("b: stdout Fluxion 'B!'")


def test_sessions_are_seeded_and_use_the_pool() -> None:
    import random

    pools = {"tiny": ["/j1.yaml", "/j2.yaml"]}
    one = bd.make_sessions(random.Random(7), 5, ["tiny"], ["jgf"], ["first"], ["simple"], pools, 10)
    two = bd.make_sessions(random.Random(7), 5, ["tiny"], ["jgf"], ["first"], ["simple"], pools, 10)
    assert [s.commands for s in one] == [s.commands for s in two]
    for s in one:
        assert s.commands[0].startswith("match ")
        for c in s.commands:
            if c.startswith("match"):
                assert c.split()[2] in pools["tiny"]


def test_bad_against_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bd.main(["--against", str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not an executable file" in err


@pytest.mark.skipif(not RESOURCE_QUERY.is_file(), reason=f"Fluxion's resource-query not found: {RESOURCE_QUERY} "
                    "(set FLUXLITE_RESOURCE_QUERY)")  # fmt: skip
def test_real_run_against_resource_query(tmp_path: Path) -> None:
    need(FLUXION_DATA / "resource" / "grugs" / "tiny.graphml")
    out = tmp_path / "d.json"
    proc = subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", "bench", "differential", "--against", str(RESOURCE_QUERY),
         "--data", str(FLUXION_DATA), "--graphs", "tiny", "--sessions", "4", "--commands", "6", "--seed", "3",
         "--writers", "simple,rlite", "--policies", "first,high", "--no-progress", "--json", str(out)],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    res = json.loads(out.read_text())
    assert res["sessions"] == 4
    assert res["identical"] + res["differing"] == 4
    assert sum(len(c["sessions"]) for c in res["classes"]) == res["differing"]
    assert "sessions: 4, identical:" in proc.stdout
