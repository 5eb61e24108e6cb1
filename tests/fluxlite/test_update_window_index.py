"""The window index of ``update_allocate``'s check answers exactly what a scan of the windows answers.

``UpdateStage._xs_meets`` answers "does a window of this vertex meet ``[at, end)``?" from sorted
starts and ends kept per vertex; successful updates and cancels keep them exact, and an entry is
trusted only while the vertex's ``xspans`` dict, its length and its change counter are as recorded.
Random sessions (reservations, allocations, grows, cancels, partial releases, failed updates, a
window changed in place the way a walk changes it) compare every answer with a scan, and every
trusted entry with the windows it stands for.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.api import Engine
from fluxlite.errors import FluxliteError
from fluxlite.grid import generate_grid
from fluxlite.match import update as update_mod
from fluxlite.match._vplan import overlaps


def _trusted_entries_exact(tr) -> int:  # type: ignore[no-untyped-def]
    n = 0
    for v, ent in (tr._xidx or {}).items():
        xs = tr.xspans[v]
        if ent[0] is xs and ent[1] == len(xs) and ent[2] == tr._epoch.get(v):
            assert ent[3] == sorted(w[0] for w in xs.values()), v
            assert ent[4] == sorted(w[1] for w in xs.values()), v
            n += 1
    return n


@pytest.mark.parametrize("seed", range(3))
def test_the_window_index_answers_as_a_scan_through_a_random_session(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(update_mod, "_XIDX_MIN", 1)  # every vertex checked answers from its index
    rng = random.Random(seed)
    eng = Engine(generate_grid(4, 2, cores=2))
    ops, tr = eng.grid, eng.traverser
    n = ops.gi.n
    jobid = 0
    trusted = 0
    kinds = {"ok": 0, "refused": 0, "grow": 0, "cancel": 0, "release": 0, "moved": 0}
    for _step in range(400):
        r = rng.random()
        live = sorted(eng.jobs)
        if live and r < 0.2:
            eng.cancel(rng.choice(live))
            kinds["cancel"] += 1
        elif live and r < 0.3:
            # a partial release of one core (as GridOps.join does)
            j = rng.choice(live)
            held = [c for cs in ops._cores for c in cs if j in (tr.tags[c] or {})]
            if held and tr.release_groups(j, [(c, [c]) for c in rng.sample(held, 1)]):
                eng.jobs.pop(j, None)
                eng.job_at.pop(j, None)
            kinds["release"] += 1
        elif live and r < 0.35:
            # a job's window on a node widened in place, the way a grow's walk does it
            j = rng.choice(live)
            nodes = [v for v in ops._node_vid if j in (tr.xspans[v] or {})]
            if nodes:
                v = rng.choice(nodes)
                s, e = tr.xspans[v][j]
                tr.xspans[v][j] = (s, e + rng.randint(1, 30))
                tr._epoch[v] = tr._epoch.get(v, 0) + 1
                kinds["moved"] += 1
        else:
            grow = bool(live) and r < 0.45
            j = rng.choice(live) if grow else (jobid := jobid + 1)
            k = rng.randint(1, 3)
            nodes = rng.sample(range(n), k)
            items = [it for i in nodes for it in ops._node_items[i]]
            if grow and eng.jobs[j] == "allocated":
                at, d = eng.job_at[j], rng.randint(5, 60)
            else:
                at, d = rng.randint(0, 300), rng.randint(5, 60)
            if grow and eng.jobs[j] == "reserved":
                grow = False
                j = jobid = jobid + 1
            # the check's answer for every node item, by scan, before the engine is asked
            scan = {v: overlaps(tr.xspans[v], at, d) for v, _u, _x in items if tr.g.v_type[v] == "node"}
            tr._xread = []
            got = {v: tr._xs_meets(v, tr.xspans[v], at, at + d, j) for v in scan if tr.xspans[v]}
            tr._xread = None
            assert got == {v: scan[v] for v in got}
            try:
                eng._allocate_items(j, items, at, d, None, at > 0 and not grow and rng.random() < 0.5)
            except FluxliteError:
                kinds["refused"] += 1
            else:
                kinds["grow" if grow else "ok"] += 1
        trusted += _trusted_entries_exact(tr)
    assert kinds["ok"] > 30 and kinds["refused"] > 30 and kinds["cancel"] > 20, kinds
    assert kinds["grow"] >= 2 and kinds["release"] > 10 and kinds["moved"] > 5, kinds
    assert trusted > 200  # the entries were kept, not only rebuilt


def test_an_entry_is_not_trusted_after_a_change_it_did_not_follow(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(update_mod, "_XIDX_MIN", 1)
    eng = Engine(generate_grid(2, 1, cores=2))
    ops, tr = eng.grid, eng.traverser
    v = ops._node_vid[0]
    eng._allocate_items(1, list(ops._node_items[0]), 100, 50, None, True)
    tr._xread = []
    assert tr._xs_meets(v, tr.xspans[v], 120, 130, 9)  # builds the entry: [100, 150) meets it
    assert not tr._xs_meets(v, tr.xspans[v], 200, 210, 9)
    # the window moves in place (the dict, its length the same) with the vertex's change counter
    tr.xspans[v][1] = (200, 250)
    tr._epoch[v] = tr._epoch.get(v, 0) + 1
    assert tr._xs_meets(v, tr.xspans[v], 200, 210, 9)
    assert not tr._xs_meets(v, tr.xspans[v], 120, 130, 9)
    tr._xread = None
    # and the update's check refuses the node where the moved window now is
    bad = tr._update_check(2, list(ops._node_items[0]), 210, 10)
    assert bad is not None and bad[0] == v
    assert tr._update_check(2, list(ops._node_items[1]), 210, 10) is None
    tr._xread = None
    assert _trusted_entries_exact(tr) == 1
