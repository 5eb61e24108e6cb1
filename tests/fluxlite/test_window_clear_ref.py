"""The select templates' state checks, each against a reference written from its docstring.

``FreshStage._fresh_state`` (a subtree untouched), ``_window_clear`` (a subtree
that walks as a fresh twin over a match's window) and ``_sel_clean`` (no edge
of the subtree marked by this select pass, and which of the two) are typed
one-pass loops in the compiled build.  Here every templated subtree of a busy
graph (allocations now and reservations later, some vertices down, some
cancelled) is asked for many windows, now and later, as an allocation and as a
reservation, and each answer must be the reference's.  Both answers occur for
each check, so a check that always said one thing would fail.
"""

from __future__ import annotations

import random
from bisect import bisect_left, bisect_right
from typing import Any

from fluxlite.api import Engine
from fluxlite.graph import UP
from fluxlite.match._common import AT_ALLOC, AT_RESERVE, JobMeta
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.test_window_templates import _nodes, _socket


def _ref_fresh_state(tr: Any, n: int, internal: list[int], b: int) -> bool:
    hi = b + n
    for col in (tr.vspans, tr.allocs, tr.resvs, tr.tags, tr.xspans):
        if any(x is not None for x in col[b:hi]):
            return False
    if any(s != UP for s in tr.g.v_status[b:hi]):
        return False
    sub = tr.subplan.get(tr.dom)
    j2s = tr.job2span.get(tr.dom)
    for i in internal:
        p = sub[b + i] if sub is not None else None
        if p is not None and p.span_size:
            return False
        if j2s is not None and j2s[b + i]:
            return False
    return True


def _ref_window_clear(tr: Any, meta: JobMeta, n: int, internal: list[int], b: int, fresh: bool) -> bool:
    at, end = meta.at, meta.at + meta.duration
    sub = tr.subplan.get(tr.dom)
    for i in internal if sub is not None else ():
        p = sub[b + i]
        for pl in p._planners if p is not None else ():
            if end > pl._end:
                return False
            if pl._times is None:
                continue
            k = bisect_right(pl._times, at) - 1
            if k >= 0 and min(pl._rem[k : bisect_left(pl._times, end, k)]) < pl._total:
                return False
    if fresh:
        return True
    hi = b + n
    if any(s != UP for s in tr.g.v_status[b:hi]):
        return False
    if meta.alloc_type == AT_ALLOC and any(tr.allocs[b:hi]):
        return False
    for col in (tr.vspans, tr.xspans):
        for sp in col[b:hi]:
            if sp is not None and any(s < end and e > at for s, e, *_ in sp.values()):
                return False
    return True


def _busy_engine(seed: int) -> Engine:
    rng = random.Random(seed)
    eng = Engine(generate_graph(racks=2, nodes=4, sockets=2, cores=4), policy="first")
    jobs: list[int] = []
    for _ in range(4 + 12 * seed):  # the first seeds leave nodes untouched
        js = (
            _nodes(rng.randint(1, 3), rng.randint(1, 4), rng.choice((60, 600, 3600)))
            if rng.random() < 0.5
            else _socket(rng.randint(1, 4), rng.choice((60, 600, 3600)))
        )
        r = eng.match(js, "allocate_orelse_reserve")
        if r.ok:
            jobs.append(r.jobid)
        if jobs and rng.random() < 0.2:
            eng.cancel(jobs.pop(rng.randrange(len(jobs))))
    g = eng.graph
    nodes = [v for v in g.vertices() if g.v_type[v] == "node"]
    for v in rng.sample(nodes, 2):
        eng.set_status(g.path(v), "down")
    return eng


def test_the_template_checks_are_their_references() -> None:
    seen: dict[str, set[bool]] = {"state": set(), "clear": set(), "clean": set()}
    for seed in range(4):
        rng = random.Random(100 + seed)
        eng = _busy_engine(seed)
        tr = eng.traverser
        g = eng.graph
        shapes = [(v, got) for v in g.vertices() if (got := tr._fresh_shape(v)) is not None]
        assert shapes, "no templated subtree: the graph is too small for the check"
        for b, (shape, e0) in shapes:
            internal = list(shape.internal)
            got = tr._fresh_state(shape, b)
            assert got == _ref_fresh_state(tr, shape.n, internal, b), (seed, b)
            seen["state"].add(got)
            for _ in range(12):
                at = rng.choice((0, 0, rng.randint(1, 4000)))
                dur = rng.choice((1, 30, 600, 3600, 7200))
                kind = rng.choice((AT_ALLOC, AT_RESERVE))
                meta = JobMeta(jobid=999, at=at, now=0, duration=dur, alloc_type=kind)
                for fresh in (True, False):
                    got = tr._window_clear(meta, shape, b, fresh)
                    want = _ref_window_clear(tr, meta, shape.n, internal, b, fresh)
                    assert got == want, (seed, b, at, dur, kind)
                    seen["clear"].add(got)
                # _sel_clean: an edge of the subtree marked by this pass (the current token) makes it 0
                marked = rng.random() < 0.3
                e = e0 + rng.randrange(shape.m)
                old = tr.e_token[e]
                if marked:
                    tr.e_token[e] = tr.token
                try:
                    used = rng.random() < 0.5
                    hit = tr.token in tr.e_token[e0 : e0 + shape.m]  # (the last pass's marks count too)
                    want = (
                        0
                        if hit or dur < 1
                        else (
                            (1 if _ref_window_clear(tr, meta, shape.n, internal, b, True) else 0)
                            if not used and _ref_fresh_state(tr, shape.n, internal, b)
                            else (2 if _ref_window_clear(tr, meta, shape.n, internal, b, False) else 0)
                        )
                    )
                    got_c = tr._sel_clean(meta, shape, b, e0, used)
                    assert got_c == want, (seed, b, at, dur, kind, marked, used)
                    seen["clean"].add(got_c != 0)
                finally:
                    tr.e_token[e] = old
    assert all(v == {True, False} for v in seen.values()), seen


def test_each_column_alone_rules_a_subtree_out() -> None:
    """One state written into one row of an untouched subtree, column by column: each is seen alone
    (in a real session the columns change together, so a check of one could hide behind another)."""
    eng = Engine(generate_graph(racks=1, nodes=2, sockets=2, cores=4), policy="first")
    tr = eng.traverser
    g = eng.graph
    b = next(v for v in g.vertices() if g.v_type[v] == "node")
    got = tr._fresh_shape(b)
    assert got is not None
    shape, _e0 = got
    internal = list(shape.internal)
    row = b + shape.n - 1  # the subtree's last vertex (a core)
    meta = JobMeta(jobid=999, at=100, now=0, duration=50, alloc_type=AT_ALLOC)
    assert tr._fresh_state(shape, b) and tr._window_clear(meta, shape, b, False)
    for name, value, clear in (
        ("vspans", {7: (120, 200, 1)}, False),  # meets [100, 150)
        ("vspans", {7: (150, 200, 1)}, True),  # starts at its end
        ("xspans", {7: (0, 101)}, False),
        ("xspans", {7: (0, 100)}, True),
        ("allocs", {7: 1}, False),  # allocated, and the match is an allocation now
        ("tags", {7: 7}, True),
        ("resvs", {7: 1}, True),
    ):
        col = getattr(tr, name)
        old = col[row]
        col[row] = value
        try:
            assert not tr._fresh_state(shape, b), name
            assert tr._fresh_state(shape, b) == _ref_fresh_state(tr, shape.n, internal, b)
            assert tr._window_clear(meta, shape, b, False) is clear, (name, value)
            assert clear == _ref_window_clear(tr, meta, shape.n, internal, b, False)
        finally:
            col[row] = old
    eng.set_status(g.path(row), "down")
    assert not tr._fresh_state(shape, b) and not tr._window_clear(meta, shape, b, False)
    eng.set_status(g.path(row), "up")
    assert tr._fresh_state(shape, b) and tr._window_clear(meta, shape, b, False)
