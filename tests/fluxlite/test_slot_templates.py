"""Select templates of subtrees that pass slot options up, exact against the plain walk.

A slot request with no node level (the bench's T8: ``slot{socket{core:16}}``
under the cluster) is matched by each node, which hands its slots up to the
root instead of choosing among them; the select template of such a node
records those options (edges relative to the subtree, scores relative to
the node-centric score factor) and replays them for the node's fresh or
clear twins (``FreshStage._sel_evals``).  Random sessions of slot requests
of several shapes (one edge or several per slot, slots in sockets or nodes),
allocations, reservations and cancels, under node-centric policies (score
factors) and others, on graphs with and without racks: every answer, the
visit counts and the whole state must be the plain walk's; a deliberately
wrong replay must be caught.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.api import Engine
from fluxlite.match import fresh as fresh_module
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec
from tests.fluxlite.test_fresh import full_state


def _slot(count: int, inner: str, duration: int) -> object:
    return jobspec(
        f"  - type: slot\n    count: {count}\n    label: default\n    with:\n{inner}", duration=duration
    )


def _socket(sockets: int, cores: int) -> str:
    return (
        f"      - type: socket\n        count: {sockets}\n        with:\n"
        f"          - type: core\n            count: {cores}\n"
    )


def _cores(cores: int) -> str:
    return f"      - type: core\n        count: {cores}\n"


def _requests() -> list[object]:
    out = []
    for d in (600, 3600):
        out += [
            _slot(1, _socket(1, 8), d),  # T8 in small: one edge per slot
            _slot(3, _socket(1, 4), d),
            _slot(2, _socket(2, 2), d),  # two sockets per slot: several edges per slot option
            _slot(2, _cores(5), d),  # slots in sockets: a node passes up its sockets' slots
        ]
    return out


REQUESTS = _requests()


def _engine(policy: str, racks: int, fresh: bool) -> Engine:
    eng = Engine(generate_graph(racks=racks, nodes=12, sockets=2, cores=8), policy=policy)
    eng.traverser.fresh = fresh
    return eng


def _session(policy: str, racks: int, seed: int, steps: int = 70) -> int:
    """Run one random session on templates and on the plain walk; return the slot-option replays."""
    fast, plain = _engine(policy, racks, True), _engine(policy, racks, False)
    rng = random.Random(seed)
    running: list[int] = []
    for step in range(steps):
        if running and rng.random() < 0.3:
            j = running.pop(rng.randrange(len(running)))
            assert fast.cancel(j) == plain.cancel(j)
            continue
        req = rng.choice(REQUESTS)
        op = rng.choice(("allocate", "allocate_orelse_reserve", "allocate_orelse_reserve"))
        a, b = fast.match(req, op=op), plain.match(req, op=op)
        assert (a.ok, a.at, a.errno, a.text, a.error) == (b.ok, b.at, b.errno, b.text, b.error), step
        ta, tb = fast.traverser, plain.traverser
        assert (ta.preorder, ta.postorder) == (tb.preorder, tb.postorder), step
        if a.ok and not a.reserved:
            running.append(a.jobid)
        if step % 10 == 9:
            assert full_state(fast) == full_state(plain), step
    assert full_state(fast) == full_state(plain)
    assert fast.jobs == plain.jobs
    return fast.traverser.slot_replays


@pytest.fixture(autouse=True)
def _count_slot_replays(monkeypatch: pytest.MonkeyPatch) -> None:
    """Count the replays that hand slot options up (``slot_replays`` on the traverser)."""
    orig = fresh_module.FreshStage._sel_replay

    def counting(self, tm, u, e0, to_parent, fresh=True):  # type: ignore[no-untyped-def]
        got = orig(self, tm, u, e0, to_parent, fresh)
        if got is not None and getattr(tm, "evals", None):
            self.slot_replays = getattr(self, "slot_replays", 0) + 1
        return got

    monkeypatch.setattr(fresh_module.FreshStage, "_sel_replay", counting)
    monkeypatch.setattr(fresh_module.FreshStage, "slot_replays", 0, raising=False)


@pytest.mark.parametrize(
    ("policy", "racks", "seed"),
    [("first", 0, 1), ("first", 2, 2), ("low", 0, 3), ("lonode", 2, 4), ("hinode", 0, 5), ("high", 2, 6)],
)
def test_slot_sessions_agree_with_the_plain_walk(policy: str, racks: int, seed: int) -> None:
    assert _session(policy, racks, seed) > 0


def test_t8_on_an_empty_graph_replays_every_node_after_the_first() -> None:
    """``first`` puts each T8 on a free node: all but the first match replay that node."""
    fast, plain = _engine("first", 0, True), _engine("first", 0, False)
    req = _slot(1, _socket(1, 8), 3600)
    for _ in range(12):
        a, b = fast.match(req), plain.match(req)
        assert a.text == b.text
        assert fast.traverser.preorder == plain.traverser.preorder
    assert fast.traverser.slot_replays == 11
    assert full_state(fast) == full_state(plain)


@pytest.mark.parametrize(
    ("bug", "policy"),
    [("edge", "first"), ("score", "lonode"), ("drop", "low")],
)
def test_a_wrong_replay_is_caught(monkeypatch: pytest.MonkeyPatch, bug: str, policy: str) -> None:
    """The sessions above detect a replay that marks a neighbouring edge, forgets the score factor
    of the twin, or loses an option."""
    orig = fresh_module.FreshStage._sel_evals

    def wrong(self, cd, u, e0, hi, ml):  # type: ignore[no-untyped-def]
        got = orig(self, cd, u, e0, hi, ml)
        if not got:
            return got
        out = []
        for t, qc, tc, egs in got:
            if bug == "edge":
                egs = [(s, c, x, r, tuple((a, n, y, d + 1) for a, n, y, d in e)) for s, c, x, r, e in egs]
            elif bug == "drop" and len(egs) > 1:
                lost = egs[-1][1]
                egs, qc, tc = egs[:-1], qc - lost, tc - lost
            out.append((t, qc, tc, egs))
        return tuple(out)

    monkeypatch.setattr(fresh_module.FreshStage, "_sel_evals", wrong)
    if bug == "score":
        # the twin's score factor is not applied: the recorded scores are replayed as they are
        orig_replay = fresh_module.FreshStage._sel_replay

        def no_factor(self, tm, u, e0, to_parent, fresh=True):  # type: ignore[no-untyped-def]
            if getattr(tm, "evals", None):
                tm.ml = self.multilevel + (
                    self.factors["node"].calc(self.g.v_id[u] + 1, self.g.v_uniq[u]) if tm.factor else 0
                )
            return orig_replay(self, tm, u, e0, to_parent, fresh)

        monkeypatch.setattr(fresh_module.FreshStage, "_sel_replay", no_factor)
    with pytest.raises(AssertionError, match="=="):
        for seed in range(3):
            _session(policy, 0, seed, steps=40)
