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
