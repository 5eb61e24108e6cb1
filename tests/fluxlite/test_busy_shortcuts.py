"""Shortcuts for busy graphs: the window index and bare-node leaves, exact against the plain walk.

The reservation search asks, at each candidate start time, which children
of a wide vertex have enough free units during the window; the window index
(``fluxlite.match._window``) answers for all children at once.  Its answer
must be :meth:`PlannerMulti.avail_during`'s, child by child, for any window
(before the first point, across points, past the plan end), and must follow
every change of the children's aggregates.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.api import Engine
from fluxlite.match._window import WindowIndex
from fluxlite.planner import PlannerMulti
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec, snapshot

TYPES = ["core", "node"]


def _random_children(rng: random.Random, n: int) -> list[PlannerMulti | None]:
    col: list[PlannerMulti | None] = []
    for i in range(n):
        if i % 9 == 4:
            col.append(None)  # no aggregate: always kept
            continue
        p = PlannerMulti(0, 1000, [8, 1], TYPES)
        for _ in range(rng.randrange(0, 6)):
            start, dur = rng.randrange(0, 900), rng.randrange(1, 100)
            amount = [rng.randrange(0, 9), rng.randrange(0, 2)]
            if p.avail_during(start, dur, amount):
                p.add_span(start, dur, amount)
        col.append(p)
    return col


def _expected(col: list[PlannerMulti | None], at: int, end: int, need: list[tuple[int, int]]) -> list[bool]:
    out = []
    for p in col:
        if p is None:
            out.append(True)
            continue
        counts = [0] * len(TYPES)
        for k, c in need:
            counts[k] = c
        out.append(p.avail_during(at, end - at, counts))
    return out


@pytest.mark.parametrize("seed", range(3))
def test_alive_is_avail_during_for_every_child_and_follows_changes(seed: int) -> None:
    rng = random.Random(seed)
    col = _random_children(rng, 40)
    win = WindowIndex(col, range(len(col)), TYPES, version=0)
    for round_ in range(30):
        if round_ % 3 == 2:  # change some children's aggregates, as an update or cancel does
            for v in rng.sample(range(len(col)), 5):
                p = col[v]
                if p is None:
                    continue
                spans = list(p._spans)
                if spans and rng.random() < 0.5:
                    p.rem_span(rng.choice(spans))
                else:
                    start, dur = rng.randrange(0, 900), rng.randrange(1, 300)
                    if p.avail_during(start, dur, [1, 0]):
                        p.add_span(start, dur, [1, 0])
                win.touch(v)
        for _ in range(20):
            at = rng.randrange(-5, 1000)
            end = at + rng.randrange(1, 400)  # some windows end past the plan end (1000)
            need = [(0, rng.randrange(1, 9))] if rng.random() < 0.7 else [(0, 1), (1, 1)]
            assert win.alive(at, end, need).tolist() == _expected(col, at, end, need)


def _jobspecs() -> list[object]:
    out = []
    for d in (300, 900, 2000, 3600):
        out.append(
            jobspec(
                "  - type: node\n    count: 2\n    with:\n      - type: slot\n        count: 1\n"
                "        label: default\n        with:\n          - type: core\n            count: 2\n",
                duration=d,
            )
        )
        out.append(
            jobspec(
                "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: core\n        count: 3\n",
                duration=d,
            )
        )
    return out


@pytest.mark.parametrize("policy", ["first", "high"])
def test_reservation_queue_session_agrees_with_the_plain_walk(policy: str) -> None:
    """A long queue of reservations on 72 nodes (skip and window indexes on) vs the plain walk."""
    fast = Engine(generate_graph(racks=0, nodes=72, sockets=1, cores=4), policy=policy)
    plain = Engine(generate_graph(racks=0, nodes=72, sockets=1, cores=4), policy=policy)
    plain.traverser.shortcuts = False
    plain.traverser.fresh = False
    rng = random.Random(7)
    specs = _jobspecs()
    reserved = 0
    for step in range(260):
        if step > 150 and step % 4 == 0:
            jobid = rng.choice(sorted(fast.jobs))
            fast.cancel(jobid)
            plain.cancel(jobid)
            continue
        js = rng.choice(specs)
        a = fast.match(js, op="allocate_orelse_reserve")
        b = plain.match(js, op="allocate_orelse_reserve")
        assert (a.ok, a.at, a.errno, a.text) == (b.ok, b.at, b.errno, b.text)
        reserved += a.reserved
    assert snapshot(fast) == snapshot(plain)
    assert reserved > 25  # the queue of reservations stood


@pytest.mark.parametrize("policy", ["first", "high"])
def test_bare_node_racks_session_agrees_with_the_plain_walk(policy: str) -> None:
    """The batch simulator's graph (racks of bare nodes) and requests (slot[n] > node[1]).

    Bare nodes are leaves: the shortcut tests them inline; allocations,
    reservations, down nodes and cancels must give what the plain walk gives.
    """
    from fluxlite.queue._request import request_jobspec

    def build() -> Engine:
        return Engine(generate_graph(racks=4, nodes=20, sockets=0, cores=0), policy=policy)

    fast, plain = build(), build()
    plain.traverser.shortcuts = False
    plain.traverser.fresh = False
    rng = random.Random(3)
    nodes = sorted(p for p in fast.graph.by_path if p.rsplit("/", 1)[-1].startswith("node"))
    now = 0
    reserved = 0
    for step in range(200):
        if step % 25 == 7:
            path, status = rng.choice(nodes), rng.choice(["down", "up"])
            fast.set_status(path, status)
            plain.set_status(path, status)
        if step > 60 and fast.jobs and rng.random() < 0.4:
            jobid = rng.choice(sorted(fast.jobs))
            fast.cancel(jobid)
            plain.cancel(jobid)
            now += rng.randrange(0, 30)
        js = request_jobspec("node", rng.choice([1, 2, 3, 7, 19, 33]), rng.randrange(60, 900))
        op = rng.choice(["allocate", "allocate_orelse_reserve", "allocate_orelse_reserve"])
        a = fast.match(js, op=op, at=now)
        b = plain.match(js, op=op, at=now)
        assert (a.ok, a.at, a.errno, a.text) == (b.ok, b.at, b.errno, b.text)
        reserved += a.reserved
    assert snapshot(fast) == snapshot(plain)
    assert reserved > 20
