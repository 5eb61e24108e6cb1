"""``Traverser.__slots__``: the traverser's instance attributes are slots (read by their descriptors,
not looked up in a ``__dict__`` of a hundred keys).  A slot hides a class attribute of the same name
in a mixin (a default, a method, a property): reading the instance would then raise or answer the
slot, not the class's value.  These tests hold the slots to names no class of the traverser
defines, and check that instances keep a ``__dict__`` for every other attribute."""

from __future__ import annotations

import random

from fluxlite.api import Engine
from fluxlite.match import Traverser
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec


def test_slots_hide_no_class_attribute() -> None:
    from fluxlite.match.flexible import FlexibleTraverser

    slots = Traverser.__dict__["__slots__"]
    assert len(set(slots)) == len(slots)
    # the traverser's bases, and its subclass (whose class attributes would hide the slots)
    for cls in (*Traverser.__mro__, FlexibleTraverser):
        for name in slots:
            if cls is Traverser:
                # the slot's own descriptor, nothing else under that name
                assert type(cls.__dict__[name]).__name__ == "member_descriptor", name
            else:
                assert name not in cls.__dict__, (cls.__name__, name)


def test_slots_are_set_by_the_constructor_and_a_dict_remains() -> None:
    eng = Engine(generate_graph(nodes=4, sockets=2, cores=4), policy="first")
    tr = eng.traverser
    # set later, by the walks that use them
    later = {"_kids_memo", "_ud"}
    for name in Traverser.__dict__["__slots__"]:
        if name not in later:
            getattr(tr, name)  # raises AttributeError if __init__ left it unset
    # attributes outside the slots (class defaults overridden per instance, instruments) still work
    tr._undo = []
    assert tr.__dict__["_undo"] == [] and tr._undo == []
    del tr._undo
    assert tr._undo is None  # the class default again
    tr.some_test_attribute = 1
    assert vars(tr)["some_test_attribute"] == 1


def test_a_session_runs_with_slots() -> None:
    """Allocations, reservations and cancels on a slotted traverser (the walks read and assign
    the slots; a class attribute replaced by a slot would show up here as an AttributeError)."""
    rng = random.Random(3)
    eng = Engine(generate_graph(nodes=6, sockets=2, cores=4), policy="first")
    jobs: list[int] = []
    for _ in range(40):
        if jobs and rng.random() < 0.3:
            eng.cancel(jobs.pop(rng.randrange(len(jobs))))
        n = rng.choice([1, 2])
        js = jobspec(
            f"- type: node\n  count: {n}\n  with:\n  - type: slot\n    count: 1\n    label: default\n"
            f"    with:\n    - type: socket\n      count: 1\n      with:\n      - type: core\n        count: 2\n",
            rng.choice([60, 3600]),
        )
        r = eng.match(js, "allocate_orelse_reserve")
        if r.ok:
            jobs.append(r.jobid)
    assert jobs
