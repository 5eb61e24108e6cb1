"""A request jobspec is parsed once per distinct text (each level of a nested grow parses the same bytes)."""

from __future__ import annotations

import pytest

from fluxlite.errors import InputError, JobspecError
from hierarchy.instance.core import MAX_JOBSPEC_BYTES, InstanceCore

SPEC = b"""version: 1
resources: [{type: slot, count: 1, label: s, with: [{type: core, count: 2}]}]
attributes: {system: {duration: 60}}
tasks: [{command: [app], slot: s, count: {per_slot: 1}}]
"""


def test_the_same_text_gives_the_same_parsed_request() -> None:
    a = InstanceCore._parse_jobspec(SPEC)
    assert InstanceCore._parse_jobspec(bytes(SPEC)) is a
    assert InstanceCore._parse_jobspec(SPEC.decode()) is not a  # str and bytes: each parsed once
    assert a.resources[0].with_[0].count.min == 2
    other = InstanceCore._parse_jobspec(SPEC.replace(b"count: 2", b"count: 3"))
    assert other.resources[0].with_[0].count.min == 3


def test_bad_requests_fail_every_time_and_the_size_limit_comes_first() -> None:
    for _ in range(2):
        with pytest.raises(JobspecError):
            InstanceCore._parse_jobspec(b"version: 1\n")
    with pytest.raises(InputError, match="limit"):
        InstanceCore._parse_jobspec(b" " * (MAX_JOBSPEC_BYTES + 1))


def test_large_requests_are_not_kept() -> None:
    big = SPEC + b"#" + b"x" * (20 << 10) + b"\n"
    assert InstanceCore._parse_jobspec(big) is not InstanceCore._parse_jobspec(big)
