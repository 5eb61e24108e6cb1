"""What `fluxlite query` prints after a match agrees with what the engine holds (issue 6, §1b).

A match whose resources the engine could not record is a failure; a jobspec
that does not load still writes Fluxion's failure block to ``-t``; the
match-only operations (``without_allocating[_future]``) show resources and
change nothing.  Every failure leaves the state exactly as it was.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import InputError, MatchError
from fluxlite.jobspec import load_jobspec
from fluxlite.readers.generate import generate_graph
from tests.conftest import RESOURCE, need
from tests.fluxlite.helpers import snapshot
from tests.fluxlite.repl_helpers import Session, outcome, state, write_jobspec

TINY = RESOURCE / "grugs" / "tiny.graphml"
POLICIES = ["first", "firstnodex", "low", "high", "lonode", "hinode", "lonodex", "hinodex", "locality"]

SKIP_SOCKET = """  - type: node
    count: 1
    with:
      - type: slot
        count: 2
        label: default
        with:
          - type: core
            count: 1"""
CORE = """  - type: slot
    count: 1
    label: default
    with:
      - type: core
        count: 1"""
NODE_X = """  - type: node
    count: 2
    exclusive: true
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 1"""


def tiny(policy: str = "first") -> Engine:
    need(TINY)
    return Engine.from_file(TINY, policy=policy)


@pytest.mark.parametrize("policy", POLICIES)
@pytest.mark.parametrize("op", ["allocate", "allocate_orelse_reserve", "allocate_with_satisfiability"])
def test_unrecordable_match_is_a_failure(tmp_path: Path, policy: str, op: str) -> None:
    """node -> slot -> core (no socket level) on tiny: output claims only what the engine holds."""
    sess = Session(tiny(policy))
    js = write_jobspec(tmp_path / "skip.yaml", SKIP_SOCKET)
    before = state(sess.engine)
    out, _, err = sess.run(f"match {op} {js}")
    got = outcome(out)
    assert got is not None and got[1] == 1
    if got[0] == "FAILED":
        # the walk placed the slots below the socket but nothing could be recorded
        assert "match_allocate: ERROR:" in err
        assert state(sess.engine) == before
        assert recount_errors(sess.engine) == []
        assert sess.engine.jobs == {}
        _, _, err_info = sess.run("info 1")
        assert "nonexistent job 1" in err_info
        _, _, err_cancel = sess.run("cancel 1")
        assert "nonexistent job 1" in err_cancel
    else:
        # node-exclusive policies take the whole node, which records fine
        assert policy.endswith("nodex") and got[0] == "ALLOCATED"
        assert sess.engine.jobs == {1: "allocated"}
        assert sess.engine.find_text("jobid-alloc=1")
    # Fluxion spends the id of a busy failure: the next match is job 2, never 1 again
    core = write_jobspec(tmp_path / "core.yaml", CORE)
    out2, _, _ = sess.run(f"match allocate {core}")
    assert outcome(out2) == ("ALLOCATED", 2, "Now")
    assert sess.engine.jobs[2] == "allocated"


def test_unrecordable_match_api_raises_and_keeps_state(tmp_path: Path) -> None:
    """Engine.allocate of the same request raises and changes nothing (whole-state snapshot)."""
    eng = tiny()
    js = load_jobspec(write_jobspec(tmp_path / "skip.yaml", SKIP_SOCKET))
    snap, before = snapshot(eng), state(eng)
    r = eng.match(js, op="allocate")
    assert not r.ok and r.errno == "EBUSY" and r.error and r.jobid_used and r.text == ""
    assert snapshot(eng) == snap and state(eng) == before
    with pytest.raises(MatchError, match="could not be recorded"):
        eng.allocate(js)
    assert snapshot(eng) == snap and eng.jobs == {}


def test_jobspec_that_fails_to_load_writes_the_failure_block(tmp_path: Path) -> None:
    """Missing attributes: stderr names it, -t gets 'No matching resources found / JOBID=n', id kept."""
    sess = Session(tiny())
    bad = write_jobspec(tmp_path / "noattr.yaml", CORE, duration=None)
    good = write_jobspec(tmp_path / "core.yaml", CORE)
    before = state(sess.engine)
    out, _, err = sess.run(f"match allocate {bad}")
    assert out == (
        "INFO: =============================\n"
        "INFO: No matching resources found\n"
        "INFO: JOBID=1\n"
        "INFO: =============================\n"
    )
    assert err.startswith("match_allocate: ERROR: Jobspec error for 1: ") and "attributes" in err
    assert state(sess.engine) == before
    # the failed load does not spend the id (Fluxion returns before counting it)
    out, _, _ = sess.run(f"match allocate {good}")
    assert outcome(out) == ("ALLOCATED", 1, "Now")


def test_multi_match_stops_at_a_jobspec_that_fails_to_load(tmp_path: Path) -> None:
    """multi-match writes the failure block for the bad jobspec and does not go on."""
    sess = Session(tiny())
    bad = write_jobspec(tmp_path / "noattr.yaml", CORE, duration=None)
    good = write_jobspec(tmp_path / "core.yaml", CORE)
    out, _, _ = sess.run(f"multi-match allocate {good} {bad} {good}")
    assert out.count("RESOURCES=ALLOCATED") == 1
    assert out.count("No matching resources found") == 1
    assert sess.engine.jobs == {1: "allocated"}


def test_without_allocating_shows_a_match_and_changes_nothing(tmp_path: Path) -> None:
    """match without_allocating prints MATCHED with resources; state, job list and id are unchanged."""
    sess = Session(tiny("low"))
    core = write_jobspec(tmp_path / "core.yaml", CORE)
    before = state(sess.engine)
    snap = snapshot(sess.engine)
    out, _, err = sess.run(f"match without_allocating {core}")
    assert err == ""
    assert outcome(out) == ("MATCHED", 1, "Now")
    assert "core0" in out
    assert state(sess.engine) == before and snapshot(sess.engine) == snap
    assert recount_errors(sess.engine) == []
    _, listing, _ = sess.run("list")
    assert listing == ""
    # the same id goes to the next real job, which gets the very resources shown
    out2, _, _ = sess.run(f"match allocate {core}")
    assert outcome(out2) == ("ALLOCATED", 1, "Now")
    assert out2.split("INFO:")[0] == out.split("INFO:")[0]


def test_without_allocating_future_finds_the_earliest_time(tmp_path: Path) -> None:
    """On a full graph, without_allocating fails busy; _future shows the reservation it would make."""
    sess = Session(tiny())
    nodes = write_jobspec(tmp_path / "nodes.yaml", NODE_X, duration=100)
    out, _, _ = sess.run(f"match allocate {nodes}")
    assert outcome(out) == ("ALLOCATED", 1, "Now")
    before = state(sess.engine)
    out, _, _ = sess.run(f"match without_allocating {nodes}")
    assert outcome(out) == ("FAILED", 2, "")
    out, _, _ = sess.run(f"match without_allocating_future {nodes}")
    assert outcome(out) == ("MATCHED", 2, "100")
    assert state(sess.engine) == before
    out, _, _ = sess.run(f"match allocate_orelse_reserve {nodes}")
    assert outcome(out) == ("RESERVED", 2, "100")


def test_unknown_match_operation_is_bad_input() -> None:
    """Engine.match refuses an operation it does not know, naming the known ones."""
    eng = tiny()
    with pytest.raises(InputError, match="without_allocating_future"):
        eng.match(object(), op="allocate_sideways")


def test_a_failed_update_that_recorded_something_is_rolled_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """If the traverser's update records part of a job and then fails, the engine undoes it."""
    sess = Session(tiny("low"))
    core = write_jobspec(tmp_path / "core.yaml", CORE)
    before = state(sess.engine)
    snap = snapshot(sess.engine)
    tr = sess.engine.traverser
    real_update = tr.update

    def half_update(root: int, writer: object, meta: object) -> int:
        assert real_update(root, writer, meta) == 0  # records the job...
        tr.err_msg += "update: simulated failure after recording.\n"
        return -1  # ...and then reports a failure

    monkeypatch.setattr(tr, "update", half_update)
    out, _, err = sess.run(f"match allocate {core}")
    assert outcome(out) == ("FAILED", 1, "") and "simulated failure" in err
    assert tr.job_vertices(1) == [] and sess.engine.jobs == {}
    assert state(sess.engine) == before and snapshot(sess.engine) == snap
    assert recount_errors(sess.engine) == []
    monkeypatch.undo()
    out, _, _ = sess.run(f"match allocate {core}")
    assert outcome(out) == ("ALLOCATED", 2, "Now")


ZONE = """  - type: zone
    count: 1
    with:
      - type: node
        count: 1
        with:
          - type: slot
            count: 1
            label: default
            with:
              - type: core
                count: 1"""


def test_a_type_the_graph_does_not_know_is_a_jobspec_error(tmp_path: Path) -> None:
    """As Fluxion's closed type table: 'zone' on tiny does not parse (EINVAL), it is not 'unsatisfiable'."""
    sess = Session(tiny())
    js = write_jobspec(tmp_path / "zone.yaml", ZONE)
    before = state(sess.engine)
    msg = 'match_allocate: ERROR: Jobspec error for 1: Value of "type" must be a resource type known to fluxion\n'
    for op in ("allocate_with_satisfiability", "allocate_orelse_reserve"):
        out, _, err = sess.run(f"match {op} {js}")
        assert err == msg
        assert out == (
            "INFO: =============================\n"
            "INFO: No matching resources found\n"
            "INFO: JOBID=1\n"
            "INFO: =============================\n"
        )
    # Fluxion's run_match reads "satisfiable" from errno, which EINVAL is not
    out, _, err = sess.run(f"match satisfiability {js}")
    assert err == msg and "INFO: Satisfiable request" in out
    assert state(sess.engine) == before
    # types in the graph, static ones (ssd) and pruning-filter types are known
    rack = ZONE.replace("type: zone", "type: rack").replace(
        "              - type: core\n                count: 1",
        "              - type: socket\n                count: 1\n                with:\n"
        "                  - type: core\n                    count: 1",
    )
    known = write_jobspec(tmp_path / "ok.yaml", rack)
    out, _, err = sess.run(f"match allocate {known}")
    assert err == "" and outcome(out) == ("ALLOCATED", 1, "Now")


def test_elapse_times_the_parse_and_match_not_the_file_read(tmp_path: Path, monkeypatch: Any) -> None:
    """ELAPSE covers what Fluxion's covers: the jobspec's parse, the match and the writer, from the
    bytes already read (resource-query reads the file before its timer starts).  A clock that
    jumps 100 s while the file is read, and 1 s at each later reading, shows it."""
    import fluxlite.cli.query as q
    from fluxlite.jobspec import read_jobspec_file

    clock = [0.0]

    def tick() -> float:
        clock[0] += 1.0
        return clock[0]

    def slow_read(path: Any) -> bytes:
        clock[0] += 100.0
        return read_jobspec_file(path)

    monkeypatch.setattr(q.time, "perf_counter", tick)
    monkeypatch.setattr("fluxlite.jobspec.read_jobspec_file", slow_read)
    s = Session(Engine(generate_graph(nodes=2, sockets=2, cores=4), policy="first"))
    s.ctx.elapse = True
    js = write_jobspec(tmp_path / "j.yaml", CORE)
    out, stdout, err = s.run(f"match allocate {js}")
    assert "INFO: RESOURCES=ALLOCATED" in out and not err
    (elapse,) = [float(x) for x in re.findall(r"ELAPSE=([0-9.]+)", stdout)]
    assert 0 < elapse < 100
