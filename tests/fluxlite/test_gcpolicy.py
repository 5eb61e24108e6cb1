"""fluxlite.gcpolicy: what survives an operation is frozen, cycles are still reclaimed.

And the premise of the policy: the engine's operations leave no cyclic
garbage (what they drop is freed by reference counting), so freezing the
survivors of each operation loses nothing.
"""

from __future__ import annotations

import gc
import io
import weakref
from collections.abc import Iterator

import pytest

from fluxlite.api import Engine
from fluxlite.cli import query
from fluxlite.gcpolicy import OperationGC
from fluxlite.readers.generate import generate_graph
from tests.fluxlite.helpers import jobspec


class Node:
    def __init__(self) -> None:
        self.other: object = None


def cycle() -> weakref.ref:
    """A two-object reference cycle, already unreachable; a weak reference to one of its objects."""
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)


@pytest.fixture(autouse=True)
def restore_gc() -> Iterator[None]:
    # an earlier test in this process may have started the process-wide upkeep thread (any in-process
    # instance does); it would freeze and collect under these tests' feet, so stop it first
    from fluxlite import gcpolicy

    if gcpolicy._UPKEEP is not None:
        gcpolicy._UPKEEP.close()
        gcpolicy._UPKEEP = None
    gc.unfreeze()
    was = gc.isenabled()
    yield
    gc.unfreeze()
    if was:
        gc.enable()
    gc.collect()


def test_after_freezes_what_survives_an_operation() -> None:
    policy = OperationGC()
    policy.settle()
    frozen = gc.get_freeze_count()
    kept = [Node() for _ in range(100)]
    policy.after()
    assert gc.get_freeze_count() >= frozen + len(kept)
    assert policy.operations == 1


def test_young_cycles_are_collected_not_frozen() -> None:
    policy = OperationGC()
    policy.settle()
    gc.disable()  # no automatic collection: only the policy's
    ref = cycle()
    assert ref() is not None
    policy.after()
    assert ref() is None


def test_the_periodic_full_collection_reclaims_frozen_cycles() -> None:
    policy = OperationGC(full_every=3)
    gc.disable()
    a, b = Node(), Node()
    a.other, b.other = b, a
    ref = weakref.ref(a)
    policy.settle()  # the cycle is alive here: frozen with the rest
    del a, b
    policy.after()
    policy.after()
    assert ref() is not None  # frozen: the young collections do not see it
    policy.after()  # the third: unfreeze, collect everything
    assert ref() is None
    assert gc.get_freeze_count() > 0  # frozen again after it


def test_disabled_does_nothing() -> None:
    gc.unfreeze()
    policy = OperationGC(enabled=False)
    policy.settle()
    policy.after()
    assert gc.get_freeze_count() == 0
    assert policy.operations == 0


def test_bad_period_is_refused() -> None:
    with pytest.raises(ValueError, match="full_every"):
        OperationGC(full_every=-1)


def test_engine_operations_leave_no_cyclic_garbage() -> None:
    """Allocate, reserve, fail, grow, shrink, partial release and cancel: nothing for the collector."""
    node = jobspec(
        "  - type: node\n    count: 2\n    with:\n      - type: slot\n        count: 1\n"
        "        label: default\n        with:\n          - type: socket\n            count: 1\n"
        "            with:\n              - type: core\n                count: 4\n"
    )
    socket = jobspec(
        "  - type: slot\n    count: 1\n    label: default\n    with:\n      - type: socket\n"
        "        count: 1\n        with:\n          - type: core\n            count: 8\n"
    )
    huge = jobspec("  - type: node\n    count: 999\n    with:\n      - type: core\n        count: 1\n")
    for policy in ("first", "low"):
        eng = Engine(generate_graph(nodes=6, sockets=2, cores=8), policy=policy)
        eng.match(node)  # first-use structures (indexes, templates) are built here
        gc.collect()
        gc.disable()
        jobs = [eng.match(node).jobid, eng.match(socket).jobid]
        assert eng.grow(jobs[1], socket).ok
        while eng.match(node).ok:
            pass
        assert eng.match(node, op="allocate_orelse_reserve").ok
        assert not eng.match(huge).ok
        tags = eng.traverser.tags
        held = [p for p, v in eng.graph.by_path.items() if "core" in p and jobs[0] in (tags[v] or ())]
        eng.shrink(jobs[0], [held[0]])
        for j in list(eng.jobs):
            eng.cancel(j)
        assert gc.collect() == 0, policy
        gc.enable()


def test_query_settles_after_loading_and_keeps_up_after_each_command(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``fluxlite query`` freezes the loaded graph and runs the upkeep after every command."""
    calls: list[str] = []
    real = OperationGC

    class Recording(real):  # type: ignore[misc,valid-type]
        def settle(self) -> None:
            calls.append("settle")
            super().settle()

        def after(self) -> None:
            calls.append("after")
            super().after()

        def release(self) -> None:
            calls.append(f"release {gc.get_freeze_count() > 0}")
            super().release()

    gc.unfreeze()
    monkeypatch.setattr(query, "OperationGC", Recording)
    monkeypatch.setattr("sys.stdin", io.StringIO("find status=up\nstat\nquit\n"))
    assert query.main([]) == 0
    # settle once, one upkeep per command that did not end the session, and at the end the
    # collector is given back as it was (nothing frozen before: nothing frozen after)
    assert calls == ["settle", "after", "after", "release True"]
    assert gc.get_freeze_count() == 0
    assert "INFO" in capsys.readouterr().out  # the commands ran (stat's report)


def test_release_keeps_a_freeze_the_caller_made() -> None:
    gc.freeze()
    policy = OperationGC()
    policy.settle()
    policy.release()
    assert gc.get_freeze_count() > 0  # the caller's freeze stands
    gc.unfreeze()
    policy = OperationGC()
    policy.settle()
    assert gc.get_freeze_count() > 0
    policy.release()
    assert gc.get_freeze_count() == 0


def test_background_upkeep_runs_off_the_caller_and_coalesces_pokes() -> None:
    import time

    from fluxlite.gcpolicy import BackgroundUpkeep

    up = BackgroundUpkeep(min_interval=0.05)
    try:
        gc.disable()
        ref = cycle()
        kept = [Node() for _ in range(100)]
        frozen = gc.get_freeze_count()
        for _ in range(20):  # a burst of operations: one upkeep, not twenty
            up.poke()
        deadline = time.monotonic() + 10
        while up.gc.operations == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert up.gc.operations >= 1
        assert up.gc.operations < 20
        assert ref() is None  # the young cycle was collected by the upkeep thread
        assert gc.get_freeze_count() >= frozen + len(kept)
        assert up._thread is not None and up._thread.name == "gc-upkeep"
    finally:
        up.close()
    assert up._thread is not None and not up._thread.is_alive()


def test_an_instance_operation_pokes_the_process_upkeep(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every RPC of an instance (and of its queue service) runs under the instance lock, which pokes it."""
    pytest.importorskip("grpc")
    from fluxlite import gcpolicy
    from hierarchy.instance import Instance

    class Counter:
        pokes = 0

        def poke(self) -> None:
            Counter.pokes += 1

    monkeypatch.setattr(gcpolicy, "_UPKEEP", Counter())
    inst = Instance(Engine(generate_graph(nodes=2, sockets=1, cores=2)), name="root", owner="admin")
    with inst._locked(None):
        assert Counter.pokes == 0
    assert Counter.pokes == 1
    assert gcpolicy.upkeep() is gcpolicy.upkeep()
