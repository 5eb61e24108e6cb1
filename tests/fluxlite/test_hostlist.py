"""Hostlist text with flux-core semantics: compression, padding, decoding, round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluxlite.errors import InputError
from fluxlite.hostlist import HostList, decode, encode


def test_encode_consecutive_hosts() -> None:
    """Consecutive suffixes fold into one bracketed range (node[17-19])."""
    assert encode(["node17", "node18", "node19"]) == "node[17-19]"
    assert encode(["node0"]) == "node0"
    assert encode([]) == ""


def test_encode_keeps_append_order() -> None:
    """No implicit sorting: groups follow append order, prefixes break groups."""
    assert encode(["node1", "node3", "login1", "node5", "node6"]) == "node[1,3],login1,node[5-6]"
    assert encode(["node2", "node1"]) == "node[2,1]"
    assert encode(["n1", "n1"]) == "n[1,1]"


def test_encode_hosts_without_suffix() -> None:
    """Names without a numeric suffix are single hosts, never bracketed."""
    assert encode(["foo", "bar", "foo"]) == "foo,bar,foo"
    assert encode(["node", "node1", "node2"]) == "node,node[1-2]"


def test_encode_zero_padding() -> None:
    """Widths combine as in flux-core's width_equiv (node9,node10 -> node[9-10])."""
    assert encode(["node01", "node02", "node10"]) == "node[01-02,10]"
    assert encode(["node9", "node10"]) == "node[9-10]"
    assert encode(["node99", "node100"]) == "node[99-100]"
    assert encode(["node01", "node2"]) == "node[01,2]"
    assert encode(["node009", "node10"]) == "node[009,10]"


def test_encode_appends_hostlist_text() -> None:
    """Each appended string is itself hostlist text, as hostlist_append() decodes it."""
    assert encode(["node[0-1]", "node2", "node[4-5]"]) == "node[0-2,4-5]"


def test_decode_examples() -> None:
    """Brackets, lists, separators and suffixes expand like hostlist_decode()."""
    assert decode("node[01-03],login") == ["node01", "node02", "node03", "login"]
    assert decode("node[1,3-4] n7\tn8") == ["node1", "node3", "node4", "n7", "n8"]
    assert decode("x[1-2]-eth0") == ["x1-eth0", "x2-eth0"]
    assert decode("[3-4]") == ["3", "4"]
    assert decode("") == []


@pytest.mark.parametrize("bad", ["node[1-", "node]1", "node[3-1]", "node[1--2]", "node[a]", "node[1,,2]"])
def test_decode_rejects_malformed(bad: str) -> None:
    """Unbalanced brackets and bad ranges raise InputError."""
    with pytest.raises(InputError):
        decode(bad)


def test_hostlist_object_api() -> None:
    """len, indexing, index(), iteration and append counts behave like a list."""
    hl = HostList("node[0-3],login1")
    assert len(hl) == 5
    assert hl[0] == "node0" and hl[-1] == "login1" and hl[3] == "node3"
    assert hl.index("node2") == 2
    assert hl.append("node[7-8]") == 2
    assert str(hl) == "node[0-3],login1,node[7-8]"
    with pytest.raises(IndexError):
        hl[7]
    with pytest.raises(InputError):
        hl.append("bad[")
    assert len(hl) == 7


HOSTS = st.lists(
    st.builds(
        lambda p, n, pad: p + ("" if n is None else str(n).zfill(pad)),
        st.sampled_from(["node", "n", "login-", "rack1n", ""]),
        st.none() | st.integers(0, 120),
        st.integers(0, 3),
    ).filter(bool),
    max_size=25,
)


@given(HOSTS)
def test_round_trip(hosts: list[str]) -> None:
    """decode(encode(hosts)) returns the hosts in order, duplicates included."""
    assert decode(encode(hosts)) == hosts


@given(st.lists(st.integers(0, 200), min_size=1, max_size=40, unique=True))
def test_sorted_hosts_compress_to_ranges(nums: list[int]) -> None:
    """Sorted same-prefix hosts print as one bracket of maximal ranges."""
    text = encode(f"node{n}" for n in sorted(nums))
    if len(nums) == 1:
        assert text == f"node{nums[0]}"
    else:
        assert text.startswith("node[") and text.endswith("]")
        assert decode(text) == [f"node{n}" for n in sorted(nums)]
