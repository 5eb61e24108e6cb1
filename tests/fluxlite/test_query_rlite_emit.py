"""``-F rlite`` where the writer cannot emit: what becomes of the job and of the next job ids.

Derived from Fluxion's code: ``reapi_cli_t::match_allocate`` calls the
writer's ``emit`` after every walk that succeeded or failed with EBUSY/ENODEV
(satisfiability too); ``rlite_match_writers_t::emit_json`` fails with EINVAL
when no node was gathered (a match of no core/gpu, or nothing matched);
``match_allocate`` then returns -1 with that errno before it records the job
or increments the job counter, and ``run_match`` reports "No matching
resources found" without "Unsatisfiable request" (errno is neither ENODEV
nor ENOENT), or "Satisfiable request" for ``satisfiability``.  One deliberate
difference: Fluxion leaves what the walk allocated held by the unrecorded
job id; here a failed match leaves the state as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.repl_helpers import Session, outcome, state, write_jobspec

EMIT = "match_allocate: ERROR: match writer emit: Invalid argument\n"


@pytest.fixture
def session() -> Session:
    g = generate_graph(nodes=2, sockets=1, cores=2, memory=2)
    return Session(Engine(g), match_format="rlite")


def memory_only(tmp: Path) -> Path:
    """Memory and no core: the match succeeds but R_lite gathers no node."""
    return write_jobspec(
        tmp / "mem.yaml", "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: memory\n        count: 1\n"
    )


def one_core(tmp: Path) -> Path:
    return write_jobspec(
        tmp / "core.yaml", "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: core\n        count: 1\n"
    )


def too_big(tmp: Path) -> Path:
    return write_jobspec(tmp / "big.yaml", "  - type: node\n    count: 9\n    with:\n      - type: core\n        count: 1\n")


def test_match_that_emits_nothing_is_not_recorded_and_keeps_its_id(session: Session, tmp_path: Path) -> None:
    before = state(session.engine)
    out, _so, err = session.run(f"match allocate {memory_only(tmp_path)}")
    assert err == EMIT
    assert outcome(out) == ("FAILED", 1, "") and "Unsatisfiable" not in out
    assert state(session.engine) == before and not session.engine.jobs
    out, _so, err = session.run("info 1")
    assert "nonexistent job 1" in err
    # the id was not spent: the next match that emits gets it
    out, _so, err = session.run(f"match allocate {one_core(tmp_path)}")
    assert err == "" and outcome(out) == ("ALLOCATED", 1, "Now")
    assert out.startswith('[{"rank": "')


def test_failed_match_with_rlite_is_not_unsatisfiable_and_keeps_its_id(session: Session, tmp_path: Path) -> None:
    out, _so, err = session.run(f"match allocate_with_satisfiability {too_big(tmp_path)}")
    # without the writer's failure this would say "Unsatisfiable request" (ENODEV) and spend id 1
    assert err == EMIT
    assert outcome(out) == ("FAILED", 1, "") and "Unsatisfiable" not in out
    out, _so, err = session.run(f"match allocate {one_core(tmp_path)}")
    assert outcome(out) == ("ALLOCATED", 1, "Now")


def test_satisfiability_with_rlite_always_says_satisfiable(session: Session, tmp_path: Path) -> None:
    for spec in (too_big(tmp_path), one_core(tmp_path)):
        out, _so, err = session.run(f"match satisfiability {spec}")
        assert err == EMIT
        assert "INFO: Satisfiable request" in out
    assert not session.engine.jobs


def test_other_writers_unchanged(tmp_path: Path) -> None:
    """jgf emits nothing without error for a failure (its emit fails only with one list empty)."""
    s = Session(Engine(generate_graph(nodes=2, sockets=1, cores=2, memory=2)), match_format="jgf")
    out, _so, err = s.run(f"match allocate_with_satisfiability {too_big(tmp_path)}")
    assert err == "" and "Unsatisfiable request" in out and outcome(out) == ("FAILED", 1, "")
    out, _so, err = s.run(f"match allocate {one_core(tmp_path)}")
    assert outcome(out) == ("ALLOCATED", 2, "Now")


def test_find_with_nothing_for_rlite_fails_as_fluxion(session: Session) -> None:
    """reapi find: ``emit_json`` of R_lite with no node gathered fails (EINVAL): one line on stderr,
    nothing on the output."""
    out, _so, err = session.run("find sched-now=allocated")
    assert out == "" and err == "find: ERROR: find writer emit: Invalid argument\n"
    out, _so, err = session.run("find status=up")
    assert err == "" and out.startswith('[{"rank": "0-1"')
