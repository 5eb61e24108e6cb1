"""The update walk's list of a new job's children of a wide vertex is exactly the scan's.

After a select, the update walk remembers which children of a wide vertex (more than 64 children,
e.g. L0's root) a job reached, so that its cancel need not scan them all.  A job that holds nothing
else yet lists the children it is recorded on as the walk records them (``UpdateStage.reach``);
``traverser.reach = False`` scans every marked child again, as before.  Busy sessions in small
(``allocate_orelse_reserve`` until the graph is full and reservations stand, cancels, grows of
running jobs, matches at other times) run through both; every answer and output and the whole state
(wide-vertex lists in order, shared dicts, span ids, the job's vertex order, every planner) must
agree after every step.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from fluxlite.api import Engine
from fluxlite.check import recount_errors
from fluxlite.errors import FluxliteError
from fluxlite.jobspec import parse_jobspec
from fluxlite.match.update import UpdateStage
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.test_fresh_bulk import _same


def _request(rng: random.Random, cores: int) -> Any:
    return _spec_d(_resources(rng, cores), rng.choice([600, 3600, 7200]))


def _spec_d(res: str, duration: int) -> Any:
    return parse_jobspec(
        f"version: 1\nresources: {res}\nattributes: {{system: {{duration: {duration}}}}}\n"
        "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
    )


def _resources(rng: random.Random, cores: int) -> str:
    """Whole sockets (the bench's busy requests), part of a socket's cores, or a node."""
    k = rng.choice([cores, cores, cores, cores, max(1, cores // 2), 1])
    inner = f"{{type: socket, count: {rng.randint(1, 2)}, with: [{{type: core, count: {k}}}]}}"
    slot = f"{{type: slot, count: {rng.randint(1, 2)}, label: s, with: [{inner}]}}"
    if rng.random() < 0.4:
        excl = "exclusive: true, " if rng.random() < 0.3 else ""
        res = f"[{{type: node, count: {rng.randint(1, 3)}, {excl}with: [{slot}]}}]"
    else:
        res = f"[{slot}]"
    return res


@pytest.fixture
def reach_hits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many wide vertices the walk reached with a job that held nothing yet (the listed case)."""
    hits = [0]
    orig = UpdateStage._upd_dfv_plain

    def counted(self: Any, u: int, *a: Any) -> int:
        hits[0] += self.reach and len(self.g.out[self.dom][u]) > 64 and not self._jv
        return orig(self, u, *a)

    monkeypatch.setattr(UpdateStage, "_upd_dfv_plain", counted)
    return hits


#: (policy, nodes, cores per socket, steps): 70 nodes make the root a wide vertex (more than 64 children)
CASES = [
    ("first", 70, 4, 30),
    ("high", 70, 2, 30),
    ("low", 70, 2, 25),
    ("locality", 70, 2, 25),
    ("lonodex", 70, 2, 20),
]


@pytest.mark.parametrize(("policy", "nodes", "cores", "steps"), CASES)
def test_busy_sessions_reach_equals_scan(
    policy: str, nodes: int, cores: int, steps: int, reach_hits: list[int]
) -> None:
    rng = random.Random(4 + nodes)
    shape = {"nodes": nodes, "sockets": 2, "cores": cores, "gpus": rng.choice([0, 1])}
    engines = [Engine(generate_graph(**shape), policy=policy) for _ in range(2)]
    engines[1].traverser.reach = False
    fast = engines[0]
    jobs: list[int] = []

    def both(fn: Any) -> Any:
        outs = []
        for eng in engines:
            try:
                r = fn(eng)
                outs.append((r.ok, r.jobid, r.at, r.text) if hasattr(r, "ok") else r)
            except FluxliteError as exc:
                outs.append((type(exc), str(exc)))
        assert outs[0] == outs[1]
        return outs[0]

    for _step in range(steps):
        op = rng.random()
        if op < 0.6 or not jobs:
            js = _request(rng, cores)
            got = both(lambda e, js=js: e.match(js, op="allocate_orelse_reserve"))
            if isinstance(got, tuple) and got[0] is True:
                jobs.append(got[1])
        elif op < 0.7:
            js = _request(rng, cores)
            at = rng.choice([100, 5000])
            got = both(lambda e, js=js, at=at: e.match(js, op="allocate", at=at))
            if isinstance(got, tuple) and got[0] is True:
                jobs.append(got[1])
        elif op < 0.8:
            # a running job grows (the walk with a job that already holds vertices)
            running = [j for j in jobs if fast.jobs.get(j) == "allocated"]
            if running:
                j = rng.choice(running)
                js = _request(rng, cores)
                both(lambda e, j=j, js=js: e.grow(j, js, fmt="simple"))
        else:
            victim = jobs.pop(rng.randrange(len(jobs)))
            both(lambda e, v=victim: e.cancel(v))
        _same(*engines)
    assert recount_errors(fast) == []
    if not policy.endswith("nodex"):  # (a node-exclusive policy takes nodes whole: another path)
        assert reach_hits[0] >= 3
