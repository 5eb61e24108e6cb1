"""The templates' compares: the twin test's patterns (``fresh._matches``) and the update's marks (``_marks_of``).

Compiled, ``_matches`` compares by typed index (``_matches_typed``) and falls
back to object compares for a value past the C integer range; both must give
the plain list comparison's answer for runs and for lists, equal or off by one
anywhere, of any length, with and without huge values.
"""

from __future__ import annotations

import random

import pytest

from fluxlite.match.fresh import _matches, _matches_all_typed, _matches_typed, _pattern


def _cases(rng: random.Random) -> list[tuple[list[int], int, list[int]]]:
    out = []
    for _ in range(400):
        n = rng.randint(0, 40)
        if rng.random() < 0.5:  # a few runs (the pattern keeps runs)
            rel: list[int] = []
            v = rng.randint(-5, 50)
            while len(rel) < n:
                if rng.random() < 0.1:
                    v += rng.randint(2, 9)
                rel.append(v)
                v += 1
        else:
            rel = [rng.randint(-100, 100) for _ in range(n)]
        base = rng.choice((0, rng.randint(1, 10**6), 2**70))
        values = [base + r for r in rel]
        kind = rng.random()
        if values and kind < 0.3:
            values[rng.randrange(len(values))] += rng.choice((-1, 1))
        elif kind < 0.4:
            values = values[:-1] if values else [base]
        elif kind < 0.45 and values:
            values[0] = 2**80
        out.append((values, base, rel))
    return out


def test_the_pattern_compare_is_the_list_compare() -> None:
    seen = set()
    for values, base, rel in _cases(random.Random(7)):
        want = values == [base + r for r in rel]
        pat = _pattern(rel)
        assert _matches(values, base, pat) == want, (values, base, rel)
        seen.add(want)
        if all(abs(x) < 2**62 for x in [*values, base]):
            assert _matches_typed(values, base, pat) == want, (values, base, rel)
    assert seen == {True, False}


def test_the_compares_in_one_call_are_those_of_the_slices() -> None:
    """``_matches_all_typed`` on ``(values, start, span, base, pattern)`` jobs: all of them true exactly
    when ``_matches`` of every slice ``values[start : start + span]`` is (span -1: to the end; starts
    and spans past the list's end clip as slices do), and OverflowError only where a value is past
    the range ``_matches_typed`` takes."""
    rng = random.Random(11)
    cases = _cases(rng)
    seen = set()
    for _ in range(300):
        jobs = []
        for _ in range(rng.randint(1, 4)):
            values, base, rel = rng.choice(cases)
            pad_l = [rng.randint(-9, 9) for _ in range(rng.randint(0, 3))]
            pad_r = [rng.randint(-9, 9) for _ in range(rng.randint(0, 3))]
            whole = pad_l + values + pad_r
            start = len(pad_l)
            span = rng.choice(
                (len(values), -1 if not pad_r else len(values), len(values) + 1, len(values) - 1)
            )
            if rng.random() < 0.1:
                start = len(whole) + rng.randint(0, 2)  # past the end: an empty slice
            jobs.append((whole, start, span, base, _pattern(rel)))
        want = all(_matches(w[s:] if n < 0 else w[s : s + n], b, pat) for w, s, n, b, pat in jobs)
        big = any(abs(x) >= 2**61 for w, _s, _n, b, _p in jobs for x in [*w, b])
        try:
            got = _matches_all_typed(jobs)
        except OverflowError:
            assert big
            continue
        assert got == want, jobs
        seen.add(want)
    assert seen == {True, False}


def test_sums_past_the_c_range_are_not_wrapped() -> None:
    """A base and a pattern value whose sum is 2**63 must not equal the value -2**63 (C arithmetic
    wraps there): the typed compare refuses them and the object compare answers."""
    big = 2**62
    for rel in ([big, 3, 9, 27, 81, 243], [big, big + 1]):  # a list (six runs), then a run
        pat = _pattern(rel)
        wrapped = [x - 2**64 for x in (big + r for r in rel)]  # in the C range: -2**63, ...
        assert _matches(wrapped, big, pat) is False
        assert _matches([big + r for r in rel], big, pat) is True
        with pytest.raises(OverflowError):
            _matches_typed(wrapped, big, pat)


def test_the_marks_of_a_run_of_edges_are_the_marked_ones() -> None:
    """``FreshStage._marks_of``: all marked (True and the columns), or the mask and the marked edges'
    needs and exclusivity, as read from the columns one edge at a time."""
    from fluxlite.api import Engine
    from fluxlite.readers.generate import generate_graph

    tr = Engine(generate_graph(racks=1, nodes=2, sockets=2, cores=4), policy="first").traverser
    rng = random.Random(3)
    ne = len(tr.e_token)
    kinds = set()
    for _ in range(300):
        tr.token = rng.randint(1, 5)
        for e in range(ne):
            tr.e_token[e] = tr.token if rng.random() < 0.7 else rng.randint(0, 5)
            tr.e_needs[e] = rng.randint(0, 9)
            tr.e_excl[e] = rng.random() < 0.5
        e0 = rng.randrange(ne)
        m = rng.randint(0, ne - e0)
        marked = [tr.e_token[e] == tr.token for e in range(e0, e0 + m)]
        if all(marked):
            want = (True, tr.e_needs[e0 : e0 + m], tr.e_excl[e0 : e0 + m])
        else:
            idx = [e for e in range(e0, e0 + m) if tr.e_token[e] == tr.token]
            want = (marked, [tr.e_needs[e] for e in idx], [tr.e_excl[e] for e in idx])
        got = tr._marks_of(e0, m)
        assert got == want and type(got[0]) is type(want[0]), (e0, m)
        kinds.add(got[0] is True)
    assert kinds == {True, False}


def test_marks_same_is_the_compare_of_the_marks() -> None:
    """``FreshStage._marks_same(marks, e0, m)`` answers ``_marks_of(e0, m) == marks``, for the marks of
    another run, of the same run before a change of one edge's token, needs or exclusivity, and for
    the same run (both forms: all marked, and a mask)."""
    from fluxlite.api import Engine
    from fluxlite.readers.generate import generate_graph

    tr = Engine(generate_graph(racks=1, nodes=2, sockets=2, cores=4), policy="first").traverser
    rng = random.Random(5)
    ne = len(tr.e_token)
    seen = {True: 0, False: 0}
    for _ in range(400):
        tr.token = rng.randint(1, 3)
        dense = rng.random() < 0.4
        for e in range(ne):
            tr.e_token[e] = tr.token if dense or rng.random() < 0.6 else rng.randint(0, 3)
            tr.e_needs[e] = rng.randint(0, 3)
            tr.e_excl[e] = rng.random() < 0.5
        e0 = rng.randrange(ne)
        m = rng.randint(1, ne - e0)
        e1 = rng.randrange(ne - m + 1)
        other = tr._marks_of(e1, m)
        assert tr._marks_same(other, e0, m) == (tr._marks_of(e0, m) == other)
        mine = tr._marks_of(e0, m)
        assert tr._marks_same(mine, e0, m) is True
        e = rng.randrange(e0, e0 + m)
        what = rng.randrange(3)
        if what == 0:
            tr.e_token[e] = tr.token if tr.e_token[e] != tr.token else tr.token + 1
        elif what == 1:
            tr.e_needs[e] += 1
        else:
            tr.e_excl[e] = not tr.e_excl[e]
        same = tr._marks_of(e0, m) == mine
        assert tr._marks_same(mine, e0, m) is same
        seen[same] += 1
        assert tr._marks_same(mine, e0, m) == (tr._marks_of(e0, m) == mine)
    assert seen[True] and seen[False]
