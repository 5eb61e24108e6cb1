"""Queue requests share one parsed shape per (unit, count) and differ only in duration."""

from __future__ import annotations

import pytest

from fluxlite.errors import InputError
from fluxlite.jobspec import parse_jobspec
from fluxlite.queue._request import request_jobspec


def _text(unit: str, count: int, duration: int) -> str:
    return (
        f"version: 1\nresources:\n  - type: slot\n    count: {count}\n    label: default\n    with:\n"
        f"      - type: {unit}\n        count: 1\n"
        "tasks:\n  - command: [app]\n    slot: default\n    count: {per_slot: 1}\n"
        f"attributes: {{system: {{duration: {duration}}}}}\n"
    )


@pytest.mark.parametrize(("unit", "count", "duration"), [("node", 3, 60), ("node", 3, 7201), ("core", 16, 5)])
def test_request_is_the_parsed_text_and_shares_the_shape(unit: str, count: int, duration: int) -> None:
    got = request_jobspec(unit, count, duration)
    want = parse_jobspec(_text(unit, count, duration))
    assert got.to_dict() == want.to_dict()
    assert (got.duration, got.queue, got.constraint) == (want.duration, want.queue, want.constraint)
    other = request_jobspec(unit, count, duration + 1)
    assert other.resources is got.resources and other.duration == duration + 1


def test_bad_requests_are_refused() -> None:
    for args in (("node", 0, 10), ("node", 2, 0), ("gpu", 1, 10)):
        with pytest.raises(InputError):
            request_jobspec(*args)
