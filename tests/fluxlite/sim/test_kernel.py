"""The shared event kernel: order, cancellation, processes and the integer tick."""

from __future__ import annotations

import pytest

from fluxlite.sim import Kernel


def test_callbacks_run_in_time_then_fifo_order() -> None:
    k = Kernel()
    seen: list[tuple[float, str]] = []
    k.at(5, lambda: seen.append((k.now, "b")))
    k.at(2, lambda: seen.append((k.now, "a")))
    k.at(5, lambda: seen.append((k.now, "c")))
    k.at(5, lambda: seen.append((k.now, "urgent")), urgent=True)
    k.run()
    assert seen == [(2, "a"), (5, "urgent"), (5, "b"), (5, "c")]
    assert k.events == 4


def test_cancelled_callback_does_not_run_and_nesting_works() -> None:
    k = Kernel()
    seen: list[float] = []
    ev = k.after(3, lambda: seen.append(-1))
    ev.cancel()

    def chain(n: int) -> None:
        seen.append(k.now)
        if n:
            k.after(1.5, chain, n - 1)

    k.after(1, chain, 2)
    k.run()
    assert seen == [1, 2.5, 4.0]


def test_processes_and_until() -> None:
    k = Kernel()
    log: list[float] = []

    def proc():
        while True:
            yield k.timeout(10)
            log.append(k.now)

    k.process(proc())
    k.run(until=35)
    assert log == [10, 20, 30]
    assert k.now == 35


def test_tick_rounds_up_and_past_is_refused() -> None:
    k = Kernel(start=1.25)
    assert k.tick() == 2
    k.run(until=3.0)
    assert k.tick() == 3
    with pytest.raises(ValueError):
        k.after(-1, lambda: None)


def _schedule(k: Kernel, log: list[tuple[float, str]], seed: int) -> None:
    """Callbacks (some urgent, some cancelled, some scheduling more) and processes that wait on
    timeouts and on callback events, all at colliding times: the same calls on any kernel."""
    import random

    rnd = random.Random(seed)
    events = []

    def cb(name: str, more: int) -> None:
        log.append((k.now, name))
        if more:
            k.after(rnd.choice([0, 0.5, 1, 2]), cb, f"{name}+", more - 1)

    for i in range(40):
        t = rnd.choice([0, 1, 1, 2, 3, 3, 5])
        events.append(k.at(t, cb, f"c{i}", rnd.randrange(3), urgent=rnd.random() < 0.2))
    for ev in rnd.sample(events, 8):
        ev.cancel()

    def proc(name: str, waits: list[float]):  # type: ignore[no-untyped-def]
        for w in waits:
            yield k.timeout(w)
            log.append((k.now, name))
        got = yield k.at(k.now + 1, cb, f"{name}-cb", 0)  # a process waiting on a callback event
        log.append((k.now, f"{name}-woke-{got}"))

    for j in range(5):
        k.process(proc(f"p{j}", [rnd.choice([0, 1, 2]) for _ in range(4)]))


def test_run_gives_the_order_of_simpys_own_loop() -> None:
    """``Kernel.run()`` processes plain callback events itself: the same order, times and event
    count as SimPy's ``env.run()`` on the same schedule, with processes waiting on some events."""
    for seed in range(20):
        ours: list[tuple[float, str]] = []
        k = Kernel()
        _schedule(k, ours, seed)
        k.run()
        plain: list[tuple[float, str]] = []
        ref = Kernel()
        _schedule(ref, plain, seed)
        ref.env.run()
        assert ours == plain and k.now == ref.now and k.events == ref.events
        assert len(ours) > 60


def test_a_failing_event_stops_the_run_as_in_simpy() -> None:
    k = Kernel()

    def boom() -> None:
        ev = k.env.event()
        ev.fail(RuntimeError("broken"))

    k.at(1, boom)
    with pytest.raises(RuntimeError, match="broken"):
        k.run()
