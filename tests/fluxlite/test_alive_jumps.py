"""Runs of children the window index rules out, passed over in one step (``ExploreStage._alive_ahead``).

At a reservation's candidate time the first policy walks the children of a
wide vertex in its ranked order; once the window index has said which of them
may hold the request, the dead ones between two alive ones are passed over at
once, each with the visit the walk counts for it.  Busy sessions (allocations
until reservations stand, then cancels and new matches) must give the answers,
outputs, visit counts and state of the walk that passes them one by one
(``Traverser.jumps = False``), and the jumps must have happened.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.api import Engine
from tests.fluxlite.test_fresh import full_state
from tests.fluxlite.test_window_templates import _engine, _requests


def _jumping(eng: Engine) -> list[int]:
    """Count the walks that jumped (``_alive_ahead`` gave positions) on ``eng``."""
    tr = eng.traverser
    seen = [0]
    orig = tr._alive_ahead

    def counted(*a: object) -> object:
        got = orig(*a)
        seen[0] += got is not None
        return got

    tr._alive_ahead = counted  # type: ignore[method-assign]
    return seen


@pytest.mark.parametrize(("socket_only", "seed", "steps"), [(False, 1, 260), (True, 2, 400)])
def test_jumps_agree_with_the_one_by_one_walk(socket_only: bool, seed: int, steps: int) -> None:
    """70 nodes of 2 x 4 cores; whole nodes and sockets (counted skips below a lone slot) or sockets only."""
    fast = _engine("first", 0, 70, 4, True, True)
    slow = _engine("first", 0, 70, 4, True, True)
    slow.traverser.jumps = False
    jumped = _jumping(fast)
    rng = random.Random(seed)
    reqs = _requests(4)
    if socket_only:
        reqs = [r for r in reqs if r.resources[0].type == "slot"]  # type: ignore[attr-defined]
    running: list[int] = []
    reserved = 0
    for k in range(steps):
        if k >= steps // 2 and running:
            j = running.pop(rng.randrange(len(running)))
            fast.cancel(j)
            slow.cancel(j)
        js = rng.choice(reqs)
        a, b = fast.match(js, op="allocate_orelse_reserve"), slow.match(js, op="allocate_orelse_reserve")
        assert (a.ok, a.jobid, a.at, a.errno, a.text) == (b.ok, b.jobid, b.at, b.errno, b.text), k
        assert (fast.preorder_count, fast.postorder_count) == (slow.preorder_count, slow.postorder_count), k
        if a.ok and a.reserved:
            reserved += 1
        elif a.ok:
            running.append(a.jobid)
        if k % 40 == 0:
            assert full_state(fast) == full_state(slow)
    assert full_state(fast) == full_state(slow)
    assert reserved >= 12 and jumped[0] > 0, (reserved, jumped)
