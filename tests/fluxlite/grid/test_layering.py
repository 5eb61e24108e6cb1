"""The grid placements and the engine, the deadline bench and its CLI: data flows one way.

``fluxlite.grid`` uses the engine; the engine finds the grid's placements
through the policy registry (``fluxlite.match.policies.PLACEMENTS``) and
never imports ``fluxlite.grid``.  ``fluxlite.sim.deadline.cli`` builds on
``bench``; ``bench`` never imports the CLI.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import fluxlite
from fluxlite.grid.ops import GRID_POLICIES, LEAK_STRATEGIES
from fluxlite.match.policies import PLACEMENTS, placements

ROOT = Path(fluxlite.__file__).parent


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (functions and TYPE_CHECKING blocks included)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def test_the_engine_does_not_import_the_grid_and_the_bench_does_not_import_its_cli() -> None:
    assert not {m for m in _imports(ROOT / "api.py") if m.startswith("fluxlite.grid")}
    assert not {
        m for m in _imports(ROOT / "sim/deadline/bench.py") if m.startswith("fluxlite.sim.deadline.cli")
    }
    # the other direction is the one that stays
    assert "fluxlite.api" in _imports(ROOT / "grid/ops.py")
    assert "fluxlite.sim.deadline.bench" in _imports(ROOT / "sim/deadline/cli.py")


def test_the_registry_names_exactly_the_grid_placements() -> None:
    assert placements("static") == GRID_POLICIES
    assert placements("grow") == LEAK_STRATEGIES
    assert {m for _k, m in PLACEMENTS.values()} == {"fluxlite.grid.ops"}


def test_a_grid_policy_works_through_the_registry_alone() -> None:
    """In a fresh interpreter, the engine loads fluxlite.grid only when a grid placement is asked for."""
    code = """
import sys
from fluxlite.api import Engine
assert "fluxlite.grid" not in sys.modules
from fluxlite.grid.machine import generate_grid  # noqa: E402 (a graph to run on)
eng = Engine(generate_grid(4, 2, cores=2), policy="hilbert")
got = eng.allocate_deadline(3, 0, 100, duration=10)
assert sorted(eng.job_nodes(got.jobid)) == [0, 4, 5], eng.job_nodes(got.jobid)  # the curve: 0, 4, 5, 1, ...
lj = eng.leak_start(2, strategy="leak-noncontig", now=0, duration=50)
proc = eng.grow(lj.jobid, None, strategy="leak-noncontig", parent=lj.procs[0].node, now=1)
assert proc.core is not None
try:
    eng.grow(lj.jobid, None, strategy="nope")
except Exception as exc:
    assert "known: leak, leak-noncontig" in str(exc), exc
else:
    raise AssertionError("unknown strategy accepted")
print("ok")
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
