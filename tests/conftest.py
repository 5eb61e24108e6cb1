"""Shared fixtures: where the test data that is not part of the project lives, and why tests skip.

Two kinds of data come from outside the repository:

* Fluxion's test data: the ``t/data/resource`` files of flux-sched v0.54 (GRUG recipes, JGF,
  R/rv1exec, jobspecs, expected outputs), and the 342 resource-query cases built on them
  (``fluxion-conformance/manifest.json`` of the shared folder).  Found at ``$FLUXLITE_FLUXION_DATA``
  (a flux-sched v0.54 checkout's ``t/data``), else ``$FLUXLITE_SHARED/fluxion-conformance/data``.
* The benchmark inputs of the published MatchGrow experiments (``bench/``: the L0..L4 and N*
  graphs, jobspecs T1..T8), at ``$FLUXLITE_SHARED/bench``.

``$FLUXLITE_SHARED`` defaults to ``../shared`` beside the checkout.  A test that needs missing data
is skipped with one line naming what is missing and how to get it, and the end of the run counts
those skips (:func:`pytest_terminal_summary`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

# Hypothesis's timing checks (a per-example deadline, "input generation is slow") depend on the
# machine's load, not on the code: on a loaded 2-core CI machine they failed tests that pass on
# rerun.  The properties and the number of examples are unchanged; a test's own settings still win.
settings.register_profile("fluxlite", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("fluxlite")

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("FLUXLITE_SHARED") or REPO / ".." / "shared").resolve()
CONFORMANCE = SHARED / "fluxion-conformance"
FLUXION_DATA = Path(os.environ.get("FLUXLITE_FLUXION_DATA") or CONFORMANCE / "data").resolve()
#: Fluxion's resource-query data: grugs/, jgfs/, rv1exec/, jobspecs/, expected/, commands/
RESOURCE = FLUXION_DATA / "resource"
BENCH = SHARED / "bench"

#: the first words of every skip for missing outside data (the summary counts them by these)
FLUXION_MISSING = "Fluxion's test data not found"
BENCH_MISSING = "benchmark inputs not found"
HOW_FLUXION = (
    "set FLUXLITE_FLUXION_DATA to a flux-sched v0.54 checkout's t/data, or FLUXLITE_SHARED to the "
    "shared folder (default ../shared beside the checkout)"
)
HOW_BENCH = "set FLUXLITE_SHARED to the shared folder holding bench/ (default ../shared beside the checkout)"


def missing_reason(path: Path) -> str:
    """The one-line skip reason for a missing outside file or folder ``path``."""
    path = Path(path)
    if path == BENCH or BENCH in path.parents:
        return f"{BENCH_MISSING}: {path} ({HOW_BENCH})"
    return f"{FLUXION_MISSING}: {path} ({HOW_FLUXION})"


def need(path: Path) -> Path:
    """``path`` if it exists; otherwise skip the calling test, saying what is missing and how to get it."""
    if not Path(path).exists():
        pytest.skip(missing_reason(path))
    return path


def needs(path: Path) -> pytest.MarkDecorator:
    """A skip mark for a test (or parameter) that needs ``path``."""
    return pytest.mark.skipif(not Path(path).exists(), reason=missing_reason(path))


def need_shared() -> None:
    """Skip the calling test unless Fluxion's 342 resource-query cases (the shared manifest) are there."""
    need(CONFORMANCE / "manifest.json")


def files_or_skip(folder: Path, files: Iterable[Any]) -> list[Any]:
    """Parameters over the files of ``folder``; when the folder is missing, one skipped parameter
    that says so (so the test is still collected, and counted as skipped for that reason)."""
    items = list(files)
    if Path(folder).is_dir():
        return items
    return [pytest.param(None, marks=pytest.mark.skip(reason=missing_reason(folder)), id="missing-data")]


@pytest.fixture(autouse=True)
def _run_in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs in its own empty directory: nothing it reads or writes depends on where
    pytest was started (a ``job.yaml`` left in the repository root cannot change a result).
    Benchmarks' ``--baseline`` revisions stay pure Python here: compiling one costs a minute
    (``fluxlite.revision.build_like_this``; its own tests turn this off)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("FLUXLITE_BASELINE_PURE", "1")


@pytest.fixture
def shared_dir() -> Path:
    need_shared()
    return SHARED


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Count the tests skipped because outside data is missing, and say how to get it."""
    counts = {FLUXION_MISSING: 0, BENCH_MISSING: 0}
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(rep, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else ""
        reason = reason.removeprefix("Skipped: ")
        for key in counts:
            if reason.startswith(key):
                counts[key] += 1
    if not any(counts.values()):
        return
    tr = terminalreporter
    tr.section("test data not found", sep="-")
    if counts[FLUXION_MISSING]:
        tr.write_line(
            f"{counts[FLUXION_MISSING]} tests skipped: Fluxion's test data not found at {FLUXION_DATA} "
            f"(or the 342 resource-query cases at {CONFORMANCE}); {HOW_FLUXION}"
        )
    if counts[BENCH_MISSING]:
        tr.write_line(f"{counts[BENCH_MISSING]} tests skipped: benchmark inputs not found at {BENCH}; {HOW_BENCH}")
