"""A jobspec without a time limit (duration 0) after time 0 runs to the end of the graph's window.

Fluxion gives such a job the whole window's length, which from any time
after the window's start runs past its end, so the match failed as busy
on an idle graph.  As flux-sched's PR #1104 ("remaining graph duration"),
it now gets the rest of the window from the match time; at the window's
start nothing changes (what resource-query does).
"""

from __future__ import annotations

import dataclasses

import pytest

from tests.fluxlite.helpers import NODE, small_engine, snapshot

UNLIMITED = dataclasses.replace(NODE, duration=0.0)
ONE_SECOND = dataclasses.replace(NODE, duration=1.0)


@pytest.mark.parametrize("op", ["allocate", "allocate_orelse_reserve", "allocate_with_satisfiability"])
def test_an_unlimited_job_after_time_0_runs_to_the_end_of_the_window(op: str) -> None:
    eng = small_engine(nodes=1)
    end = eng.traverser.graph_end
    r = eng.match(UNLIMITED, op=op, at=100)
    assert (r.ok, r.at, r.errno) == (True, 100, 0)
    # the node is taken until the window's last second
    assert not eng.match(ONE_SECOND, op="allocate", at=end - 1).ok


def test_an_unlimited_job_at_time_0_still_gets_the_whole_window() -> None:
    eng = small_engine(nodes=1)
    end = eng.traverser.graph_end
    assert eng.match(UNLIMITED, op="allocate", at=0).ok
    assert not eng.match(ONE_SECOND, op="allocate", at=end - 1).ok


def test_an_unlimited_grow_after_time_0() -> None:
    eng = small_engine(nodes=2)
    r = eng.allocate(ONE_SECOND)
    g = eng.grow(r.jobid, UNLIMITED, fmt="simple", now=500)
    assert "node" in g.text


def test_no_window_left_is_bad_input_and_changes_nothing() -> None:
    eng = small_engine(nodes=1)
    before = snapshot(eng)
    r = eng.match(UNLIMITED, op="allocate", at=eng.traverser.graph_end)
    assert not r.ok and r.errno == "EINVAL"
    assert snapshot(eng) == before
