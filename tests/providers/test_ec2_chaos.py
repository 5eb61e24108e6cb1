"""The chaos test in CI: seeded random fault schedules over the EC2 actions, kill -9 and restart.

See tests/providers/chaos.py; ``python -m tests.providers.chaos --schedules 200``
is the long run (its output: examples/benchmarks/burst/chaos.txt).
"""

from __future__ import annotations

from tests.providers.chaos import make_schedule, run_chaos, summary

#: schedules run in CI (1-4 s each on a 2-core host, by load; the 200-schedule run is the command)
SCHEDULES = 12


def test_schedules_are_a_function_of_the_seed() -> None:
    a, b = make_schedule(7, 3), make_schedule(7, 3)
    assert (a.ops, a.faults, a.kill_at, a.mode) == (b.ops, b.faults, b.kill_at, b.mode)
    assert make_schedule(7, 4).faults != a.faults or make_schedule(7, 4).ops != a.ops


def test_chaos_schedules_lose_track_of_nothing() -> None:
    results = run_chaos(SCHEDULES, seed=1)
    text = summary(results, 1)
    assert all(r.ok for r in results), text
    assert sum(r.killed for r in results) >= 1, text  # some schedules did kill the instance mid-way
    kinds = {k for r in results for _, k, _, _, _ in r.schedule.faults}
    assert {"lost", "500", "throttle"} <= kinds, text
