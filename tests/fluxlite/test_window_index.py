"""The window index's two answers (typed rows, compiled; arrays, pure) against the planners themselves.

``WindowIndex.alive`` must answer, per child, what ``PlannerMulti.avail_during``
answers for the window and the needed counts; ``alive_rows`` (the compiled
path, read from the planners) and ``alive_arrays`` (the pure path, from padded
copies kept by ``touch``) are both checked here in whichever build runs, on
random timelines with Fluxion's corner cases: windows before a child's first
point, past its plan end, ending on a point, pools too small, children without
an aggregate or with other types.
"""

from __future__ import annotations

import contextlib
import random

import numpy as np

from fluxlite.errors import PlannerError
from fluxlite.match._window import WindowIndex
from fluxlite.planner import PlannerMulti


def _children(rng: random.Random, n: int, types: list[str]) -> list[PlannerMulti | None]:
    col: list[PlannerMulti | None] = []
    for _ in range(n):
        roll = rng.random()
        if roll < 0.1:
            col.append(None)
            continue
        tl = types if roll > 0.2 else ["gpu"]  # another type tuple: always alive
        p = PlannerMulti(rng.choice((0, 5)), rng.choice((100, 200)), [rng.randint(1, 8) for _ in tl], tl)
        for _ in range(rng.randint(0, 6)):
            at, dur = rng.randint(0, 180), rng.randint(1, 40)
            with contextlib.suppress(PlannerError):  # out of the window or too many units: fewer spans
                p.add_span(at, dur, [rng.randint(0, 4) for _ in tl])
        col.append(p)
    return col


def _expected(col: list[PlannerMulti | None], types: list[str], at: int, end: int, need: list[tuple[int, int]]) -> list[bool]:
    out = []
    for p in col:
        if p is None or p._types != types:
            out.append(True)
            continue
        counts = [0] * len(types)
        for k, c in need:
            counts[k] = c
        out.append(bool(p.avail_during(at, end - at, counts)))
    return out


def test_both_paths_answer_as_the_planners() -> None:
    types = ["core", "memory"]
    answers: set[bool] = set()
    for seed in range(30):
        rng = random.Random(seed)
        col = _children(rng, 24, types)
        win = WindowIndex(col, list(range(len(col))), types, version=1)
        for _ in range(40):
            at = rng.randint(-5, 210)
            end = at + rng.randint(1, 60)
            need = [(k, rng.randint(1, 6)) for k in range(len(types)) if rng.random() < 0.7] or [(0, 1)]
            want = _expected(col, types, at, end, need)
            rows = win.alive_rows(at, end, need)
            arrays = win.alive_arrays(at, end, need)
            assert rows.dtype == np.bool_ and rows.tolist() == want, (seed, at, end, need)
            assert arrays.tolist() == want, (seed, at, end, need)
            assert win.alive(at, end, need).tolist() == want
            answers.update(want)
        # a child's timeline changes: touch() keeps the copies right, the rows read it live
        i = next(i for i, p in enumerate(col) if p is not None and p._types == types)
        p = col[i]
        assert p is not None
        with contextlib.suppress(PlannerError):
            p.add_span(10, 30, [1] * len(types))
        win.touch(i)
        need = [(0, 1)]
        want = _expected(col, types, 15, 25, need)
        assert win.alive_rows(15, 25, need).tolist() == want == win.alive_arrays(15, 25, need).tolist()
    assert answers == {True, False}
