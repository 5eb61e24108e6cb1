"""``fluxlite bench match --against``: the side-by-side plumbing, with a stand-in for resource-query.

CI has no Fluxion: the stand-in is a small script that answers every
``match`` as allocated with a fixed ELAPSE, the way resource-query prints it.
Its answers differ from fluxlite's on the busy session (which fills the
graph), so that cell must be reported as diverged, and every cell gets a
figure on both sides.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from fluxlite.cli.bench import main_match
from fluxlite.cli.bench_fluxion import parse_session

# resource-query's print_schedule_info / failure blocks with -e (flux-sched resource/utilities/command.cpp)
FLUXION_OUTPUT = """\
INFO: =============================
INFO: JOBID=1
INFO: RESOURCES=ALLOCATED
INFO: SCHEDULED AT=Now
INFO: ELAPSE=0.000512
INFO: PREORDER VISIT COUNT=40
INFO: POSTORDER VISIT COUNT=38
INFO: =============================
INFO: =============================
INFO: JOBID=2
INFO: RESOURCES=RESERVED
INFO: SCHEDULED AT=3600
INFO: ELAPSE=0.004000
INFO: PREORDER VISIT COUNT=40
INFO: POSTORDER VISIT COUNT=38
INFO: =============================
INFO: =============================
INFO: No matching resources found
INFO: JOBID=3
INFO: ELAPSE=0.001500
INFO: PREORDER VISIT COUNT=40
INFO: POSTORDER VISIT COUNT=0
INFO: =============================
"""


FAKE = """#!{python}
import sys
jobid = 0
for line in sys.stdin:
    if line.startswith("match "):
        jobid += 1
        print("INFO: =============================")
        print(f"INFO: JOBID={{jobid}}")
        print("INFO: RESOURCES=ALLOCATED")
        print("INFO: SCHEDULED AT=Now")
        print("INFO: ELAPSE=0.000250")
        print("INFO: =============================")
"""


def test_parse_session_reads_resource_query_blocks() -> None:
    recs = parse_session(FLUXION_OUTPUT)
    assert [(r["jobid"], r["status"], r.get("at")) for r in recs] == [
        (1, "allocated", 0),
        (2, "reserved", 3600),
        (3, "failed", None),
    ]
    assert [round(r["ms"], 3) for r in recs] == [0.512, 4.0, 1.5]


def _stand_in(tmp_path: Path) -> tuple[Path, Path]:
    """A bench directory with the default graph as L0, and the resource-query stand-in."""
    bench = tmp_path / "bench"
    (bench / "graphs").mkdir(parents=True)
    shutil.copy(
        Path(__file__).parents[2] / "fluxlite" / "data" / "default.graphml", bench / "graphs" / "L0.graphml"
    )
    fake = tmp_path / "resource-query"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(0o755)
    return bench, fake


def test_against_a_stand_in_runs_every_kind_of_cell(tmp_path: Path) -> None:
    bench, fake = _stand_in(tmp_path)
    out = tmp_path / "rows.json"
    txt = tmp_path / "table.txt"
    rc = main_match([
        "--against", str(fake), "--bench-dir", str(bench), "--graphs", "L0", "--requests", "T8",
        "--policies", "first", "--matches", "3", "--queue", "3", "--rounds", "2", "--fails", "2",
        "--json", str(out), "--txt", str(txt),
    ])  # fmt: skip
    assert rc == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    got = {(r["kind"], r["figure"]) for r in rows}
    assert got == {("empty", "match"), ("fail", "fail"), ("busy", "alloc"), ("busy", "reserve")}
    for r in rows:
        assert r["diverged"] is (r["kind"] != "empty")  # the stand-in never fails nor reserves
        assert r["fluxlite_ms"] is not None or r["figure"] in ("fail", "reserve")
        if r["figure"] in ("match", "alloc"):
            assert r["fluxion_ms"] == pytest.approx(0.25) and r["ratio"] > 0
    assert "ratio = fluxlite / Fluxion" in txt.read_text()


def test_against_a_missing_binary_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    rc = main_match(["--against", str(tmp_path / "nope"), "--graphs", "L0"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such file" in err


def test_a_baseline_tree_runs_in_the_same_alternation(tmp_path: Path) -> None:
    """--baseline-tree DIR: that tree's fluxlite is a third program; its median and the ratio to it are kept."""
    bench, fake = _stand_in(tmp_path)
    repo = Path(__file__).parents[2]
    out = tmp_path / "rows.json"
    txt = tmp_path / "table.txt"
    rc = main_match([
        "--against", str(fake), "--bench-dir", str(bench), "--graphs", "L0", "--requests", "T8",
        "--policies", "first", "--matches", "3", "--sessions", "", "--repeat", "3",
        "--baseline-tree", str(repo), "--json", str(out), "--txt", str(txt),
    ])  # fmt: skip
    assert rc == 0
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert row["baseline_ms"] > 0 and row["ratio_baseline"] == pytest.approx(
        row["fluxlite_ms"] / row["baseline_ms"]
    )
    assert "vs base" in txt.read_text()


def test_a_baseline_tree_without_fluxlite_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main_match(["--against", str(tmp_path / "rq"), "--baseline-tree", str(tmp_path)])
