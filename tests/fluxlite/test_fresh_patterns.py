"""The twin test's pattern compare (``fresh._matches``): ``values == [base + r for r in rel]``.

Compiled, ``_matches`` compares by typed index (``_matches_typed``) and falls
back to object compares for a value past the C integer range; both must give
the plain list comparison's answer for runs and for lists, equal or off by one
anywhere, of any length, with and without huge values.
"""

from __future__ import annotations

import random

from fluxlite.match.fresh import _matches, _matches_typed, _pattern


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
