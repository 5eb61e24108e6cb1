"""Stateful property test: subtree aggregates always equal a fresh recount; failures change nothing."""

from __future__ import annotations

import contextlib

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fluxlite import UnknownJobError
from fluxlite.errors import FluxliteError
from tests.fluxlite.helpers import (
    CORE,
    NODE,
    SOCKET,
    TWO_NODES,
    jobspec,
    recount_errors,
    small_engine,
    snapshot,
)

REQUESTS = [CORE, SOCKET, NODE, TWO_NODES]
#: a core for longer than the others: a grow with it adds resources over another window
CORE_LONG = jobspec(
    "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: core\n        count: 1\n",
    duration=7200,
)
TIMES = [0, 1, 1799, 3599, 3600, 7199, 7200, 10800, 14400]


class EngineMachine(RuleBasedStateMachine):
    """Random allocate / reserve / cancel / partial release / set-status sequences."""

    def __init__(self) -> None:
        super().__init__()
        self.eng = small_engine("low", nodes=3, racks=0)
        self.nodes = [p for p in self.eng.graph.by_path if p.count("/") == 2]

    @rule(req=st.sampled_from(REQUESTS), op=st.sampled_from(["allocate", "allocate_orelse_reserve"]))
    def match(self, req: object, op: str) -> None:
        before = snapshot(self.eng)
        r = self.eng.match(req, op=op)
        if not r.ok:
            assert snapshot(self.eng) == before, "a failed match changed the state"

    @precondition(lambda self: bool(self.eng.jobs))
    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        jobid = data.draw(st.sampled_from(sorted(self.eng.jobs)))
        self.eng.cancel(jobid)
        assert jobid not in self.eng.jobs

    @rule(jobid=st.integers(min_value=1000, max_value=1010))
    def cancel_unknown(self, jobid: int) -> None:
        before = snapshot(self.eng)
        with contextlib.suppress(UnknownJobError):
            self.eng.cancel(jobid)
        assert snapshot(self.eng) == before

    @precondition(lambda self: any(s == "allocated" for s in self.eng.jobs.values()))
    @rule(data=st.data(), rank=st.integers(min_value=0, max_value=2))
    def release_rank(self, data: st.DataObject, rank: int) -> None:
        jobid = data.draw(st.sampled_from(sorted(j for j, s in self.eng.jobs.items() if s == "allocated")))
        r = f'{{"version": 1, "execution": {{"R_lite": [{{"rank": "{rank}", "children": {{"core": "0"}}}}]}}}}'
        before = snapshot(self.eng)
        try:
            self.eng.partial_cancel(jobid, r, "rv1exec")
        except Exception:
            assert snapshot(self.eng) == before, "a failed partial cancel changed the state"

    @precondition(lambda self: any(s == "allocated" for s in self.eng.jobs.values()))
    @rule(data=st.data(), req=st.sampled_from([CORE, SOCKET, NODE, CORE_LONG]))
    def grow(self, data: st.DataObject, req: object) -> None:
        jobid = data.draw(st.sampled_from(sorted(j for j, s in self.eng.jobs.items() if s == "allocated")))
        before = snapshot(self.eng)
        try:
            self.eng.grow(jobid, req)
        except FluxliteError:
            assert snapshot(self.eng) == before, "a failed grow changed the state"

    @precondition(lambda self: any(s == "allocated" for s in self.eng.jobs.values()))
    @rule(data=st.data())
    def shrink(self, data: st.DataObject) -> None:
        jobid = data.draw(st.sampled_from(sorted(j for j, s in self.eng.jobs.items() if s == "allocated")))
        paths = sorted(p for p, _units, excl in self.eng.job_items(jobid) if excl)
        path = data.draw(st.sampled_from(paths))
        before = snapshot(self.eng)
        try:
            gone = self.eng.shrink(jobid, paths=[path])
        except FluxliteError:
            assert snapshot(self.eng) == before, "a failed shrink changed the state"
        else:
            assert gone == (jobid not in self.eng.jobs)

    @rule(data=st.data(), up=st.booleans())
    def set_status(self, data: st.DataObject, up: bool) -> None:
        path = data.draw(st.sampled_from(self.nodes))
        self.eng.set_status(path, "up" if up else "down")

    @invariant()
    def aggregates_match_recount(self) -> None:
        assert recount_errors(self.eng, TIMES) == []

    @invariant()
    def tags_cover_spans(self) -> None:
        tr = self.eng.traverser
        for v, table in enumerate(tr.allocs):
            for jobid in table or ():
                assert tr.tags[v] is not None and jobid in tr.tags[v]
                assert jobid in self.eng.jobs


EngineMachine.TestCase.settings = settings(
    max_examples=60, stateful_step_count=25, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestEngineMachine = EngineMachine.TestCase
