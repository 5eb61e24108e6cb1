"""Planner is an extension type in compiled builds, declared by ``_planner.pxd`` beside ``_planner.py``.

The .pxd must name exactly the class's ``__slots__``: a slot added to the .py
alone would make the compiled class refuse that attribute at run time (an
extension type has no other storage), one left in the .pxd alone would be a
field the pure build does not have.  Every field reads and writes from Python
in both builds (the matcher reads the planners' fields directly).
PlannerMulti stays a Python class: tests replace its methods on the class to
inject failures and reference searches, which an extension type refuses.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fluxlite.planner import _planner
from fluxlite.planner._multi import PlannerMulti
from fluxlite.planner._planner import Planner


def _pxd_fields() -> set[str]:
    text = (Path(_planner.__file__).parent / "_planner.pxd").read_text()  # type: ignore[arg-type]
    names: set[str] = set()
    for line in text.splitlines():
        m = re.match(r"\s*cdef public object (.*)$", line)
        if m:
            # "a, b, c" or one name with a C name: errno "fl_errno"
            names.update(re.sub(r'"[^"]*"', "", part).strip() for part in m.group(1).split(","))
    return names


def test_the_pxd_declares_exactly_the_slots() -> None:
    assert _pxd_fields() == set(Planner.__slots__)


def test_every_field_reads_and_writes_in_this_build() -> None:
    p = Planner(0, 100, 8, "core")
    m = PlannerMulti(0, 100, [8, 2], ["core", "gpu"])
    for obj in (p, m):
        for name in type(obj).__slots__:
            value = getattr(obj, name)
            setattr(obj, name, value)
            assert getattr(obj, name) is value
    sid = p.add_span(10, 20, 3)
    assert p._times == [0, 10, 30] and p._rem == [8, 5, 8] and p._total == 8 and p._end == 100
    assert p.errno is None
    assert p.avail_time_first(0, 95, 8) is None and p.errno == "ENOENT"
    p.rem_span(sid)
    assert m.add_span(0, 10, [1, 1]) == 0 and m._planners[1].avail_resources_at(5) == 1


def test_compiled_builds_make_planner_an_extension_type() -> None:
    if not str(_planner.__file__).endswith(".so"):
        pytest.skip("a pure build: Planner keeps its slots")
    # an extension type's fields are descriptors Cython wrote, not slot members
    assert {type(Planner.__dict__[n]).__name__ for n in Planner.__slots__} == {"getset_descriptor"}
    with pytest.raises(AttributeError):
        Planner(0, 10, 1, "core").unknown = 1  # type: ignore[attr-defined]
    # PlannerMulti's methods can still be replaced on the class (tests inject failures that way)
    real = PlannerMulti.add_span_amounts
    try:
        PlannerMulti.add_span_amounts = real  # type: ignore[method-assign]
    finally:
        PlannerMulti.add_span_amounts = real  # type: ignore[method-assign]
