"""The window precheck at t0: children the skip index lets through but whose aggregate fails over the
window are passed over, with the plain walk's visit counted (fluxlite.match.shortcuts._dynamic_window).

On a busy graph a node can be free now and reserved later in the window of
an allocation; the skip index compares free units at t0 only, so the walk
used to visit such a node just to see its prune fail.  Results, visit
counts and state must be what they were without the precheck, and what the
plain walk gives.
"""

from __future__ import annotations

import random
from typing import Any

from fluxlite.api import Engine
from fluxlite.match._traverser import Traverser
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec, snapshot


def _specs() -> list[Any]:
    node = (
        "  - type: node\n    count: {n}\n    with:\n      - type: slot\n        count: 1\n"
        "        label: default\n        with:\n          - type: socket\n            count: 2\n"
        "            with:\n              - type: core\n                count: 4\n"
    )
    socket = (
        "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: socket\n"
        "        count: 1\n        with:\n          - type: core\n            count: 4\n"
    )
    loose = (  # exclusive: false below a node: _by_excl's message is left to the plain visit
        "  - type: node\n    count: 1\n    exclusive: false\n    with:\n      - type: slot\n"
        "        count: 1\n        label: default\n        with:\n          - type: core\n"
        "            count: 2\n"
    )
    # two top-level requests: once a node is found, the node type is satisfied and the walk
    # passes over the other nodes without visits (and without counting them)
    pair = (
        "  - type: node\n    count: 1\n    with:\n      - type: slot\n        count: 1\n"
        "        label: default\n        with:\n          - type: core\n            count: 2\n"
        "  - type: socket\n    count: 1\n    with:\n      - type: core\n        count: 1\n"
    )
    out = [jobspec(pair, 600)]
    for d in (300, 1200, 3600):
        out += [jobspec(node.format(n=1), d), jobspec(node.format(n=3), d), jobspec(socket, d)]
    out.append(jobspec(loose, 900))
    return out


def _engines() -> tuple[Engine, Engine, Engine]:
    def build() -> Engine:
        return Engine(generate_graph(racks=0, nodes=72, sockets=2, cores=4), policy="first")

    fast, old, plain = build(), build(), build()
    old.traverser._dynamic_window = lambda *a: None  # type: ignore[method-assign]
    plain.traverser.shortcuts = False
    plain.traverser.fresh = False
    return fast, old, plain


def test_busy_session_same_answers_counts_and_state_with_fewer_visits() -> None:
    fast, old, plain = _engines()
    visits = {id(fast.traverser): 0, id(old.traverser): 0}
    real = Traverser._dom_dfv_plain

    def counting(self: Traverser, *a: Any) -> Any:
        if id(self) in visits:
            visits[id(self)] += 1
        return real(self, *a)

    Traverser._dom_dfv_plain = counting  # type: ignore[method-assign]
    try:
        rng = random.Random(11)
        specs = _specs()
        reserved = 0
        for step in range(220):
            if step > 90 and step % 3 == 0 and fast.jobs:
                jobid = rng.choice(sorted(fast.jobs))
                for e in (fast, old, plain):
                    e.cancel(jobid)
                continue
            js = rng.choice(specs)
            op = "allocate" if step > 90 and step % 2 else "allocate_orelse_reserve"
            a, b, c = (e.match(js, op=op) for e in (fast, old, plain))
            key = [(r.ok, r.jobid, r.at, r.errno, r.error, r.text) for r in (a, b)]
            assert key[0] == key[1], step
            counts = [(e.preorder_count, e.postorder_count) for e in (fast, old)]
            assert counts[0] == counts[1], step
            assert (a.ok, a.at, a.errno, a.text) == (c.ok, c.at, c.errno, c.text), step
            reserved += a.ok and a.reserved
    finally:
        Traverser._dom_dfv_plain = real  # type: ignore[method-assign]
    assert snapshot(fast) == snapshot(old) == snapshot(plain)
    assert reserved > 10  # reservations stood in the windows of later allocations
    # the precheck passed over children the old walk visited only to prune them
    assert visits[id(fast.traverser)] + 30 < visits[id(old.traverser)], visits
