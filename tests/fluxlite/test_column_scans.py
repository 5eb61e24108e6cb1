"""The whole-column scans of a bulk attach (fluxlite.graph._store: int_bounds, ints_distinct, has_none, has_empty,
max_len, path_roots, and the encoder's rows_columns and positions_of; fluxlite.match.update: _fits_all, _where_false) against the builtin expressions
they stand for, on random columns and on every entry kind that leaves the typed loops (bools, floats,
ints past the C range, non-lists, str subclasses).  Compiled, these run the typed loops; run pure
(FLUXLITE_PURE=1) the builtins themselves."""

from __future__ import annotations

import random
from itertools import compress
from operator import not_

import pytest

from fluxlite.graph import _store
from fluxlite.graph._store import (
    has_empty,
    has_none,
    int_bounds,
    ints_distinct,
    max_len,
    path_roots,
    positions_of,
    rows_columns,
)
from fluxlite.match.update import _fits_all, _where_false

#: the typed loops run (else path_roots always answers None)
_COMPILED = not _store.__file__.endswith(".py")


class _Str(str):
    pass


def _int_columns(rng: random.Random) -> list[list]:
    cols: list[list] = []
    for _ in range(300):
        n = rng.choice([1, 2, 3, 10, 100, 1000])
        kind = rng.randrange(6)
        if kind == 0:  # a subtree's uniq ids: a range, shuffled, maybe a repeat
            lo = rng.randrange(-50, 5000)
            xs = list(range(lo, lo + n))
            rng.shuffle(xs)
            if rng.random() < 0.5 and n > 1:
                xs[rng.randrange(n)] = xs[rng.randrange(n)]
        elif kind == 1:  # small values with repeats
            xs = [rng.randrange(-3, 4) for _ in range(n)]
        elif kind == 2:  # spread out (the set's way)
            xs = [rng.randrange(-(10**12), 10**12) for _ in range(n)]
        elif kind == 3:  # near and past the C range
            xs = [
                rng.choice([2**62 - 1, -(2**62), 2**62, -(2**62) - 1, 2**63 - 1, -(2**63), 2**63, 2**70, 0])
                for _ in range(n)
            ]
        elif kind == 4:  # a bool or a float among ints
            xs = [rng.randrange(0, 3) for _ in range(n)]
            xs[rng.randrange(n)] = rng.choice([True, False, 1.0, 0.5, 2.0])
        else:  # int subclass-free ints, then one huge
            xs = [rng.randrange(0, 2 * n) for _ in range(n)]
            xs[rng.randrange(n)] = rng.choice([10**30, -(10**30), 2**63 - 1])
        cols.append(xs)
    return cols


def test_int_bounds_and_ints_distinct_are_the_builtins() -> None:
    rng = random.Random(11)
    for xs in _int_columns(rng):
        lo, hi = int_bounds(xs)
        assert (lo, hi) == (min(xs), max(xs)) and type(lo) in (int, bool, float)
        assert ints_distinct(xs) == (len(set(xs)) == len(xs)), xs[:20]
        t = tuple(xs)  # not a list: the builtins
        assert int_bounds(t) == (min(t), max(t))
        assert ints_distinct(t) == (len(set(t)) == len(t))
    # the edges of the marking: a repeat at either end of the range, a range just inside the bound
    for xs in (
        [0, 4, 0],
        [4, 0, 4],
        [-(2**62), -(2**62) + 1],
        [2**62 - 2, 2**62 - 1, 2**62 - 2],
        [*range(400), 399],
    ):
        assert ints_distinct(xs) == (len(set(xs)) == len(xs))
        assert int_bounds(xs) == (min(xs), max(xs))
    with pytest.raises(ValueError):
        int_bounds([])
    assert ints_distinct([]) is True


def test_has_none_max_len_and_path_roots_are_the_builtins() -> None:
    rng = random.Random(12)
    comps = ["a", "bb", "node0", "socket1", "\u00e9t\u00e9", "\udcff", ""]
    for _ in range(300):
        n = rng.choice([1, 2, 5, 50])
        paths = []
        for _ in range(n):
            depth = rng.randrange(0, 4)
            p = "/" + "/".join(rng.choice(comps) for _ in range(depth + 1))
            if rng.random() < 0.05:
                p = p[1:]  # a path that does not start with "/"
            if rng.random() < 0.02:
                p = _Str(p)
            paths.append(p)
        assert max_len(paths) == max(map(len, paths))
        ok = all(p.startswith("/") for p in paths)
        want = [k for k, p in enumerate(paths) if "/" not in p[1:]]
        got = path_roots(paths)
        if got is not None:  # (None: the caller takes its own way, which checks the same)
            assert ok and got == want
        elif _COMPILED and all(type(p) is str for p in paths):
            assert not ok
        with_none = list(paths)
        if rng.random() < 0.5:
            with_none[rng.randrange(n)] = None
        assert has_none(with_none) == (None in with_none)
        assert has_empty(paths) == ("" in paths)
        assert has_empty(tuple(paths)) == ("" in paths)
        comps_col = [rng.choice(comps) for _ in range(n)]
        if rng.random() < 0.1:
            comps_col[rng.randrange(n)] = _Str(rng.choice(comps))
        assert has_empty(comps_col) == ("" in comps_col)
        assert has_none(tuple(with_none)) == (None in with_none)
    assert path_roots(("/a",)) is None  # not a list
    assert max_len(("ab", "c")) == 2
    with pytest.raises(ValueError):
        max_len([])


def test_fits_all_and_where_false_are_the_builtins() -> None:
    rng = random.Random(13)
    for _ in range(300):
        size = [
            rng.choice([0, 1, 2, 4, 2**62, 2**64, True, 1.5]) if rng.random() < 0.1 else rng.randrange(0, 5)
            for _ in range(60)
        ]
        vs = [rng.randrange(60) for _ in range(rng.choice([1, 3, 30]))]
        for u0 in (0, 1, 2, 3, 2**63, -1, True, 1.5):
            want = not u0 > min(map(size.__getitem__, vs))
            assert _fits_all(u0, size, vs) == want
            assert _fits_all(u0, tuple(size), vs) == want
        flags = [rng.choice([True, False, 0, 1, None, "", "x"]) for _ in vs]
        assert _where_false(vs, flags) == set(compress(vs, map(not_, flags)))
        assert _where_false(tuple(vs), flags) == set(compress(vs, map(not_, flags)))


def test_scans_at_the_edges_of_their_unchecked_reads() -> None:
    """The lengths where the typed loops' unchecked reads start and stop (compiled: ``boundscheck``
    and ``wraparound`` off): empty columns, one entry, the entry that leaves the typed loop first or
    last.  Each answer is the builtin expression's."""
    for xs in ([], [7], [-3], [0, 0], [5, 4], [2**62 - 1], [-(2**62)], [1, True], [True], [1.0], [3, 2**63]):
        if xs:
            assert int_bounds(xs) == (min(xs), max(xs))
        assert ints_distinct(xs) == (len(set(xs)) == len(xs))
    # the marking pass's range: the smallest and the largest value, each repeated at the far end
    for xs in ([9, 3, 9], [3, 9, 3], [3, 9], [9, 3], list(range(64)), [*range(64), 0], [*range(64), 63]):
        assert ints_distinct(xs) == (len(set(xs)) == len(xs))
    for col in ([], [None], ["a"], ["a", None], [None, "a"], ["", None]):
        assert has_none(col) == (None in col)
    for col in ([], [""], ["a"], ["a", ""], ["", "a"], [_Str("")], ["a", _Str("")], [_Str("a"), ""]):
        assert has_empty(col) == ("" in col)
    for col in (["abc"], [""], ["", "ab"], ["ab", ""], [_Str("abcd"), "a"], ["a", _Str("abcd")]):
        assert max_len(col) == max(map(len, col))
    for paths, want in (([], []), (["/a"], [0]), (["/a/b"], []), (["/a/b", "/c"], [1]), (["/"], [0])):
        got = path_roots(paths)
        assert got == (want if _COMPILED else None)
    for paths in ([""], ["a"], ["/a", ""], ["/a", "b/c"], ["/a", _Str("/b")]):
        assert path_roots(paths) is None


class _Tuple(tuple):
    pass


def test_rows_columns_and_positions_of_are_the_builtins() -> None:
    rng = random.Random(5)
    for _ in range(200):
        n = rng.choice([0, 1, 2, 10, 300])
        width = rng.choice([1, 3, 9])
        rows = [tuple(rng.choice([None, k, f"s{k}", (k, "x")]) for k in range(width)) for _ in range(n)]
        kind = rng.randrange(4)
        if kind == 1 and n:  # a tuple subclass among the rows: the zip's way
            rows[rng.randrange(n)] = _Tuple(rows[0])
        elif kind == 2 and n:  # a row of another length: the zip stops at the shortest (as zip(*rows) does)
            rows[rng.randrange(n)] = rows[0][:-1] if width > 1 else ()
        got_rows = rows if kind != 3 else tuple(rows)  # (not a list: the zip)
        want = [list(c) for c in zip(*got_rows)] if n else [[] for _ in range(width)]
        assert rows_columns(got_rows, width) == want
        # positions: edge ends among the nodes sent (ids into a column; some ends not sent)
        col = [rng.randrange(50) for _ in range(60)]
        ids = [rng.randrange(60) for _ in range(rng.choice([0, 1, 40]))]
        pos = {v: k for k, v in enumerate(rng.sample(range(50), 30))}
        expect = [pos.get(col[i]) for i in ids]
        assert positions_of(ids, col, pos) == expect
        assert positions_of(tuple(ids), col, pos) == expect  # (not lists: the maps)
        assert positions_of(ids, col, dict(pos)) == expect


def test_same_ints_and_distinct_handles_are_the_builtins() -> None:
    """``_same_ints`` is ``==`` on two lists of ints, and ``ints_distinct`` of two lists of handles
    below a bound joined (what ``_prime_new`` checks) the count of a set of both, on random lists
    with and without a difference or a repeat."""
    from fluxlite.graph._store import _same_ints, ints_distinct

    rng = random.Random(11)
    for _ in range(400):
        n = rng.choice([0, 1, 2, 5, 100, 2000])
        a = [rng.randrange(1 << 40) for _ in range(n)]
        b = list(a)
        if n and rng.random() < 0.5:
            b[rng.randrange(n)] += rng.choice([1, -1, 1 << 33])
        if rng.random() < 0.2:
            b = b[: rng.randrange(n + 1)] if n else [1]
        assert _same_ints(a, b) is (a == b)
        bound = max(n, 1) * 2
        xs = rng.sample(range(bound), min(n, bound))
        cut = rng.randrange(len(xs) + 1)
        left, right = xs[:cut], xs[cut:]
        if xs and rng.random() < 0.5:
            (left if rng.random() < 0.5 else right).append(rng.choice(xs))
        assert ints_distinct(left + right) is (len(set(left) | set(right)) == len(left) + len(right))
    assert ints_distinct([])
    assert not ints_distinct([3, 3]) and not ints_distinct([0, 0])


def test_pack_ints_is_the_array_bytes() -> None:
    """``pack_ints`` writes what ``array(typecode, xs).tobytes()`` writes little-endian, for every
    width and entries within it (negative ones in two's complement, bools as 0 / 1); None (the
    caller's array then) for entries it does not take, a tuple, or run pure."""
    import sys
    from array import array

    from fluxlite.graph._store import pack_ints

    codes = {1: "b", 2: "h", 4: "i", 8: "q"}
    rng = random.Random(5)
    for _ in range(300):
        w = rng.choice([1, 2, 4, 8])
        lo, hi = -(1 << (8 * w - 1)), (1 << (8 * w - 1)) - 1
        xs = [rng.choice([lo, hi, 0, -1, 1, rng.randint(lo, hi)]) for _ in range(rng.choice([0, 1, 7, 300]))]
        if xs and rng.random() < 0.2:
            xs[rng.randrange(len(xs))] = rng.random() < 0.5  # a bool
        want = array(codes[w], xs)
        if sys.byteorder == "big":
            want.byteswap()
        got = pack_ints(xs, w)
        assert got == want.tobytes() if _COMPILED else got is None
    assert pack_ints((1, 2), 1) is None and pack_ints([1.0], 8) is None and pack_ints([1 << 70], 8) is None
    assert pack_ints([1, 2], 3) is None
