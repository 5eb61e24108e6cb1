"""Id-set text: Fluxion's compress_ids and flux-core's idset encode/decode."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluxlite.errors import InputError
from fluxlite.idset import UINT_MAX, compress_ids, decode, decode_ranges, encode, iter_ranges

IDS = st.sets(st.integers(0, 300), max_size=60)


def test_compress_ids_examples() -> None:
    """Runs fold into lo-hi, singletons stay, as in R_lite ("0-35", "0,2,4-5")."""
    assert compress_ids(range(36)) == "0-35"
    assert compress_ids([0, 2, 4, 5]) == "0,2,4-5"
    assert compress_ids([7]) == "7"
    assert compress_ids([]) == ""
    assert compress_ids([0, 1, 3, 4, 5, 9]) == "0-1,3-5,9"


def test_compress_ids_keeps_duplicates_and_negatives() -> None:
    """Like the C++, duplicates are listed again and rank -1 prints as "-1"."""
    assert compress_ids([-1, -1, -1]) == "-1,-1,-1"
    assert compress_ids([0, 0, 1]) == "0,0-1"
    assert compress_ids([-1, 0, 1]) == "-1-1"


def test_encode_flags() -> None:
    """idset_encode: ranges optional, brackets only for two or more ids."""
    assert encode([5, 0, 1, 2]) == "0-2,5"
    assert encode([5, 0, 1, 2], ranges=False) == "0,1,2,5"
    assert encode([0, 1], brackets=True) == "[0-1]"
    assert encode([3], brackets=True) == "3"
    assert encode([], brackets=True) == ""


def test_encode_rejects_out_of_range() -> None:
    """Negative ids and ids >= UINT_MAX are not idset members."""
    with pytest.raises(InputError):
        encode([-1])
    with pytest.raises(InputError):
        encode([UINT_MAX])


def test_decode_libidset_quirks() -> None:
    """Brackets, reversed ranges, empty tokens, blanks and '+' are accepted like libidset."""
    assert decode("[0-3,7]") == [0, 1, 2, 3, 7]
    assert decode("5-3") == [3, 4, 5]
    assert decode("1,,2,") == [1, 2]
    assert decode(" 4- 6") == [4, 5, 6]
    assert decode("+2") == [2]
    assert decode("") == []
    assert decode("3,1,3") == [1, 3]
    assert decode_ranges("9,0-1") == [(9, 9), (0, 1)]


@pytest.mark.parametrize("bad", ["a", "1-", "-1", "1-2-3", "1x", f"{UINT_MAX}", "0-x", "1--2"])
def test_decode_rejects_malformed(bad: str) -> None:
    """Garbage, negative ids and ids >= UINT_MAX raise InputError."""
    with pytest.raises(InputError):
        decode(bad)


@given(IDS, st.booleans(), st.booleans())
def test_encode_decode_round_trip(ids: set[int], brackets: bool, ranges: bool) -> None:
    """decode(encode(s)) == sorted(s) for every flag combination."""
    assert decode(encode(ids, brackets=brackets, ranges=ranges)) == sorted(ids)


@given(IDS)
def test_compress_ids_agrees_with_encode(ids: set[int]) -> None:
    """On sorted distinct ids Fluxion's compress_ids equals idset_encode(RANGE)."""
    assert compress_ids(sorted(ids)) == encode(ids)


@given(IDS)
def test_iter_ranges_are_maximal(ids: set[int]) -> None:
    """Ranges cover the set exactly and never touch each other."""
    rs = list(iter_ranges(ids))
    assert sorted(i for lo, hi in rs for i in range(lo, hi + 1)) == sorted(ids)
    assert all(b[0] > a[1] + 1 for a, b in itertools.pairwise(rs))
