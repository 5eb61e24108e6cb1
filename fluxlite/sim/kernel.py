"""The one event kernel of every simulator: a SimPy environment with a few conveniences.

SimPy (a well-kept, process-based discrete-event library) owns the event
queue and the virtual clock.  Simulators use either style:

* callbacks: ``k.at(t, fn, *args)`` / ``k.after(dt, fn, *args)`` run ``fn`` at
  an absolute / relative virtual time; events at the same time run in the
  order they were scheduled (SimPy's FIFO tie order), unless ``urgent=True``
  puts them before the normal ones of that instant;
* processes: ``k.process(generator)`` with ``yield k.timeout(dt)`` and the
  rest of SimPy's API through ``k.env``.

Time is a float in seconds.  The engine's planner counts whole seconds:
:meth:`Kernel.tick` is the integer time to hand it (``ceil`` of ``now``, so
nothing is ever planned in the past).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Generator
from heapq import heappop, heappush
from typing import Any

import simpy
from simpy.core import NORMAL, URGENT, StopSimulation

__all__ = ["Kernel"]


class Kernel:
    """A virtual clock and event queue (SimPy) shared by every simulator."""

    def __init__(self, start: float = 0.0) -> None:
        self.env = simpy.Environment(initial_time=start)
        #: callbacks run so far (a simulator's events per second is ``events / wall time``)
        self.events = 0

    @property
    def now(self) -> float:
        return self.env.now

    def tick(self) -> int:
        """The current time as the engine's integer seconds (rounded up)."""
        return math.ceil(self.env.now - 1e-9)

    def at(self, t: float, fn: Callable[..., Any], *args: Any, urgent: bool = False) -> simpy.Event:
        """Run ``fn(*args)`` at absolute virtual time ``t`` (never before now)."""
        env = self.env
        return self._push(max(0.0, t - env._now), fn, args, urgent)

    def after(self, dt: float, fn: Callable[..., Any], *args: Any, urgent: bool = False) -> simpy.Event:
        """Run ``fn(*args)`` ``dt`` seconds from now; returns the event (``.cancel()``-able)."""
        if dt < 0:
            raise ValueError(f"cannot schedule {dt} s in the past")
        return self._push(dt, fn, args, urgent)

    def _push(self, dt: float, fn: Callable[..., Any], args: tuple[Any, ...], urgent: bool) -> simpy.Event:
        """``env.schedule`` of a triggered :class:`_Call`, written out: the same queue entry
        ``(now + dt, priority, next event id, event)``, so the same order as SimPy's own."""
        env = self.env
        ev = _Call.__new__(_Call)
        ev.env = env
        ev.callbacks = [_fire]
        ev._kernel = self
        ev._fn = fn
        ev._args = args
        # Event.ok/_value must be set for SimPy to process it
        ev._ok = True
        ev._value = None
        heappush(env._queue, (env._now + dt, URGENT if urgent else NORMAL, next(env._eid), ev))
        return ev

    def timeout(self, dt: float, value: Any = None) -> simpy.Timeout:
        return self.env.timeout(dt, value)

    def process(self, gen: Generator[simpy.Event, Any, Any]) -> simpy.Process:
        return self.env.process(gen)

    def run(self, until: float | None = None) -> None:
        """Process events until the queue is empty or virtual time ``until``.

        Without ``until``, each event is processed as :meth:`simpy.Environment.step` does
        (``env.run()`` is a loop of those), with the step of a plain callback event (a
        :class:`_Call` nobody else waits on) written out here: pop it, set the clock, clear its
        callbacks, call the function.  Any other event goes through ``env.step()`` itself.
        """
        if until is not None:
            self.env.run(until=until)
            return
        env = self.env
        q = env._queue
        step = env.step
        try:
            while q:
                ev = q[0][3]
                cbs = ev.callbacks
                if type(ev) is _Call and len(cbs) == 1 and cbs[0] is _fire:
                    env._now = heappop(q)[0]
                    ev.callbacks = None
                    fn = ev._fn
                    if fn is not None:
                        self.events += 1
                        fn(*ev._args)
                else:
                    step()
        except StopSimulation:
            return

    def peek(self) -> float:
        """Time of the next event (``inf`` when none is left)."""
        return self.env.peek()


class _Call(simpy.Event):
    """An event whose only job is to call a function; cancel() makes it a no-op."""

    __slots__ = ("_args", "_fn", "_kernel")

    def __init__(self, kernel: Kernel, fn: Callable[..., Any], args: tuple[Any, ...]) -> None:
        super().__init__(kernel.env)
        self._kernel = kernel
        self._fn: Callable[..., Any] | None = fn
        self._args = args
        self.callbacks.append(_fire)

    def cancel(self) -> None:
        self._fn = None


def _fire(ev: simpy.Event) -> None:
    assert isinstance(ev, _Call)
    fn = ev._fn
    if fn is not None:
        ev._kernel.events += 1
        fn(*ev._args)
