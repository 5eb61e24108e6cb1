"""Select templates on busy graphs: subtrees clear over the match's window, exact against the plain walk.

A subtree that jobs used (or will use) but not during a match's window is
walked by the select stage as a fresh twin would be, so the fresh templates
(kept by request signature, whatever the window) are replayed there too
(``FreshStage._window_clear``); a lone slot above a wide vertex asks the
skip index which children its aggregate counts rule out.  These sessions
are the bench's busy sessions in small (``allocate_orelse_reserve`` until
the graph is full and reservations stand, then cancels and new matches):
every answer, every output, the whole state and the visit counts must be
the plain walk's.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.api import Engine
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec
from tests.fluxlite.test_fresh import full_state


def _nodes(n: int, cores: int, duration: int) -> object:
    return jobspec(
        f"  - type: node\n    count: {n}\n    with:\n      - type: slot\n        count: 1\n"
        "        label: default\n        with:\n          - type: socket\n            count: 2\n"
        f"            with:\n              - type: core\n                count: {cores}\n",
        duration=duration,
    )


def _socket(cores: int, duration: int) -> object:
    return jobspec(
        "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: socket\n        count: 1\n"
        f"        with:\n          - type: core\n            count: {cores}\n",
        duration=duration,
    )


def _gpu_requests(duration: int) -> list[object]:
    """GPUs are outside the aggregates (``ALL:core``): only the vertices' own spans show them taken."""
    return [
        jobspec(
            "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: socket\n"
            "        count: 1\n        with:\n          - type: gpu\n            count: 1\n",
            duration=duration,
        ),
        jobspec(
            "  - type: node\n    count: 2\n    with:\n      - type: slot\n        count: 1\n"
            "        label: default\n        with:\n          - type: socket\n            count: 2\n"
            "            with:\n              - type: core\n                count: 2\n"
            "              - type: gpu\n                count: 1\n",
            duration=duration,
        ),
    ]


def _requests(cores: int, gpus: bool = False) -> list[object]:
    """The bench's busy mix in small: whole nodes (1..8) and one socket, each with several durations."""
    out = []
    for d in (600, 1800, 3600, 10800):
        out.extend(_nodes(n, cores, d) for n in (1, 2, 4, 8))
        out.append(_socket(cores, d))
        if gpus:
            out.extend(_gpu_requests(d))
    return out


def _engine(
    policy: str, racks: int, nodes: int, cores: int, fresh: bool, shortcuts: bool, gpus: int = 0
) -> Engine:
    eng = Engine(generate_graph(racks=racks, nodes=nodes, sockets=2, cores=cores, gpus=gpus), policy=policy)
    eng.traverser.fresh = fresh
    eng.traverser.shortcuts = shortcuts
    return eng


def _lone_slot(resources: object) -> bool:
    return len(resources) == 1 and resources[0].type == "slot"  # type: ignore[arg-type,index]


def _session(
    policy: str, racks: int, nodes: int, cores: int, seed: int, socket_only: bool = False, gpus: int = 0
) -> tuple[Engine, int]:
    """Run one busy session on three engines; fail at the first answer, output, state or count that differs.

    ``plain``: no shortcut, no template (the reference walk); ``mid``:
    shortcuts but no template and no skip index below a lone slot (the
    walk before these shortcuts), whose visit counts the templates and the
    skip must keep.  Returns the fast engine and how often the skip index
    answered below a lone slot.
    """
    fast = _engine(policy, racks, nodes, cores, True, True, gpus)
    mid = _engine(policy, racks, nodes, cores, False, True, gpus)
    plain = _engine(policy, racks, nodes, cores, False, False, gpus)
    lone_skips = 0
    fast_alive, mid_alive = fast.traverser._dynamic_alive, mid.traverser._dynamic_alive

    def counted(meta: object, u: int, ss: str, resources: object) -> object:
        nonlocal lone_skips
        got = fast_alive(meta, u, ss, resources)
        lone_skips += got is not None and _lone_slot(resources)
        return got

    fast.traverser._dynamic_alive = counted  # type: ignore[method-assign]
    mid.traverser._dynamic_alive = (  # type: ignore[method-assign]
        lambda meta, u, ss, resources: None if _lone_slot(resources) else mid_alive(meta, u, ss, resources)
    )
    engines = (fast, mid, plain)
    rng = random.Random(seed)
    reqs = _requests(cores, gpus > 0)
    node_paths = sorted(p for p in fast.graph.by_path if p.rsplit("/", 1)[-1].startswith("node"))
    down: list[str] = []
    if socket_only:
        reqs = [r for r in reqs if r.resources[0].type == "slot"]
    running: list[int] = []
    reserved = 0

    def step(k: int) -> None:
        nonlocal reserved
        js = rng.choice(reqs)
        a, b, c = (e.match(js, op="allocate_orelse_reserve") for e in engines)
        assert (a.ok, a.jobid, a.at, a.errno, a.text) == (b.ok, b.jobid, b.at, b.errno, b.text), (k, a, b)
        assert (a.ok, a.jobid, a.at, a.errno, a.text) == (c.ok, c.jobid, c.at, c.errno, c.text), (k, a, c)
        assert (fast.preorder_count, fast.postorder_count) == (mid.preorder_count, mid.postorder_count), k
        if a.ok and a.reserved:
            reserved += 1
        elif a.ok:
            running.append(a.jobid)

    k = 0
    while reserved < 12 and k < 400:
        step(k)
        k += 1
    assert reserved >= 12  # the graph filled and a queue of reservations stood
    assert full_state(fast) == full_state(plain)
    for _ in range(40):
        if not running:
            break
        j = running.pop(rng.randrange(len(running)))
        for e in engines:
            e.cancel(j)
        if k % 7 == 0:  # a node goes down, or comes back: the aggregates do not show it
            if down and rng.random() < 0.5:
                path, status = down.pop(), "up"
            else:
                path, status = rng.choice(node_paths), "down"
                down.append(path)
            for e in engines:
                e.set_status(path, status)
        step(k)
        k += 1
        if k % 10 == 0:
            assert full_state(fast) == full_state(plain)
    assert full_state(fast) == full_state(plain)
    assert full_state(mid) == full_state(plain)
    return fast, lone_skips


@pytest.mark.parametrize(
    ("policy", "racks", "gpus", "seed"),
    [("first", 0, 0, 1), ("first", 2, 2, 2), ("low", 0, 0, 3), ("high", 2, 0, 4), ("lonode", 0, 2, 5)],
)
def test_busy_session_agrees_with_the_plain_walk(policy: str, racks: int, gpus: int, seed: int) -> None:
    """70 nodes of 2 x 8 cores (wide enough for the skip index), with and without racks and GPUs."""
    fast, _skips = _session(policy, racks, 70 if racks == 0 else 35, 8, seed, gpus=gpus)
    assert fast.traverser.fresh_clear > 0  # used nodes were replayed from templates


def test_lone_slot_session_counts_the_visits_of_the_plain_walk() -> None:
    """Only one-socket requests (a slot above the 70 nodes): the skip index passes over nodes, and the
    visit counts (``resource-query -e``'s PREORDER/POSTORDER) stay those of the walk without it."""
    fast, skips = _session("first", 0, 70, 8, 6, socket_only=True)
    assert skips > 0 and fast.traverser.fresh_clear > 0


def test_a_window_that_meets_a_span_is_walked() -> None:
    """A node whose jobs end before the window is replayed, one whose reservation meets it is not;
    the template recorded for one duration serves another."""
    long, short = _nodes(1, 8, 3600), _nodes(1, 8, 1800)
    fast = _engine("first", 0, 4, 8, True, True)
    plain = _engine("first", 0, 4, 8, False, False)

    def both(js: object) -> object:
        a, b = fast.match(js, op="allocate_orelse_reserve"), plain.match(js, op="allocate_orelse_reserve")
        assert (a.ok, a.at, a.text) == (b.ok, b.at, b.text)
        assert full_state(fast) == full_state(plain)
        return a

    for _ in range(4):
        assert both(long).at == 0  # the graph is full until 3600
    # node0, used until 3600, is clear over [3600, 7200): walked once, recorded
    assert both(long).at == 3600 and fast.traverser.fresh_clear == 0
    # another duration, the same request: node0 meets the reservation (walked, pruned),
    # another node is clear over [3600, 5400) and replayed
    r = both(short)
    assert r.at == 3600 and fast.traverser.fresh_clear == 1, fast.traverser.fresh_clear


def test_signature_numbers_are_never_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    """The template library is keyed by a number per request signature (``FreshStage._fresh_sig``).
    With a table of one signature it starts over at every new request; a number given again to
    another request would replay the other request's templates.  The busy session must still be
    the plain walk's, and requests that differ only in their duration share one number."""
    import fluxlite.match.fresh as fresh_mod

    monkeypatch.setattr(fresh_mod, "_SIGS_MAX", 1)
    fast, _skips = _session("first", 0, 70, 8, 7)
    assert fast.traverser.fresh_clear > 0
    tr = _engine("first", 0, 4, 8, True, True).traverser
    monkeypatch.setattr(fresh_mod, "_SIGS_MAX", 1024)
    a, b, c = _nodes(1, 8, 600), _nodes(1, 8, 3600), _nodes(2, 8, 600)
    nums = []
    for js in (a, b, c, a):
        tr._fsigs = {}
        tr._ud = tr._primed(js.resources)[1]  # type: ignore[attr-defined]
        nums.append(tr._fresh_sig(js.resources)[1])  # type: ignore[attr-defined]
    assert nums[0] == nums[1] == nums[3] and nums[2] != nums[0]
