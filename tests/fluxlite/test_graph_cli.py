"""``fluxlite graph``: generate, convert, info."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fluxlite.cli.graph import main
from fluxlite.readers import load_graph
from fluxlite.readers.jgf import graph_to_jgf
from tests.conftest import BENCH, need


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


def test_generate_jgf_has_the_requested_shape(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "g.json"
    rc, _, err = _run(
        capsys,
        "generate",
        "--racks",
        "2",
        "--nodes",
        "3",
        "--cores",
        "4",
        "--gpus",
        "1",
        "--memory",
        "2",
        "-o",
        str(out),
    )
    assert rc == 0, err
    g = load_graph(out, format="jgf")
    types = [g.v_type[v] for v in g.vertices()]
    assert types.count("rack") == 2
    assert types.count("node") == 6
    assert types.count("socket") == 12
    assert types.count("core") == 48
    assert types.count("gpu") == 12
    assert types.count("memory") == 24
    rc, text, _ = _run(capsys, "info", str(out), "--json")
    info = json.loads(text)
    assert info["vertices"] == len(types) and info["edges"] == len(types) - 1
    assert info["depth"] == 5 and info["ranks"] == 6


def test_generated_grug_recipe_builds_the_benchmark_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    need(BENCH)
    out = tmp_path / "L0.graphml"
    assert _run(capsys, "generate", "--nodes", "128", "--format", "grug", "-o", str(out))[0] == 0
    mine = graph_to_jgf(load_graph(out, format="grug"))
    theirs = graph_to_jgf(load_graph(BENCH / "graphs" / "L0.graphml", format="grug"))
    assert mine == theirs


def test_convert_round_trips_through_jgf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = tmp_path / "a.json"
    b = tmp_path / "b.json"
    assert _run(capsys, "generate", "--nodes", "2", "--cores", "2", "-o", str(a))[0] == 0
    assert _run(capsys, "convert", str(a), "--to", "jgf", "-o", str(b))[0] == 0
    assert a.read_bytes() == b.read_bytes()
    rc, dot, _ = _run(capsys, "convert", str(a), "--to", "dot")
    assert rc == 0 and dot.startswith("digraph G {") and dot.count("->") == 2 + 4 + 8


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["info", "/nonexistent/graph.json"], "/nonexistent/graph.json"),
        (["generate", "--nodes", "-1"], "nodes must be a non-negative integer"),
        (["convert", "{bad}", "--from", "jgf", "--to", "dot"], "bad.json"),
    ],
)
def test_errors_are_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], needle: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"graph": {"nodes": [{"id": "0"}], "edges": []}}')
    args = [str(bad) if a == "{bad}" else a for a in args]
    rc, _, err = _run(capsys, *args)
    assert rc == 1
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_failed_write_leaves_no_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    rc, _, _ = _run(capsys, "convert", str(tmp_path / "missing.json"), "--to", "jgf", "-o", str(target))
    assert rc == 1
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_console_command_help() -> None:
    r = subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", "graph", "--help"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0 and "generate" in r.stdout and "convert" in r.stdout
