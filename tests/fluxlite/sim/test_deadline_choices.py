"""The modelling choices taken from the papers (and their ablations) do what they say."""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.errors import BusyError, InputError
from fluxlite.grid import generate_grid
from fluxlite.sim.deadline.program import CommModel, parse_comm_model
from fluxlite.sim.deadline.workload import lublin_trace


def test_very_heavy_traces_submit_every_second_and_start_over_about_two_months() -> None:
    """Journal section 5: one request a second at very heavy load, ~65 days of simulated time."""
    jobs = lublin_trace(1000, "very-heavy", "uniform", seed=3)
    assert jobs[-1].submit - jobs[0].submit < 3000  # about a second apart
    lags = [j.earliest_start - j.submit for j in jobs]
    assert min(lags) >= 0 and max(lags) <= 63 * 86400
    assert 55 * 86400 < max(j.earliest_start for j in jobs) < 63 * 86400
    assert all(j.requested == j.runtime for j in jobs)  # figures 6 and 8 reserve t_runtime
    assert all(j.earliest_start + j.runtime <= j.deadline for j in jobs)


def test_the_ablations_of_the_generator() -> None:
    none = lublin_trace(300, "heavy", "1", seed=5, lag_model="none")
    assert all(j.earliest_start == j.submit for j in none)
    half = lublin_trace(300, "heavy", "1", seed=5, lag_model="half-1h", walltime_margin=0.25)
    lags = [j.earliest_start - j.submit for j in half]
    assert max(lags) <= 3600 and 0.35 < sum(x == 0 for x in lags) / len(lags) < 0.65
    assert all(j.requested >= j.runtime * 1.25 for j in half)
    with pytest.raises(InputError, match="unknown lag model"):
        lublin_trace(10, "heavy", "1", lag_model="weeks")
    with pytest.raises(InputError, match="margin"):
        lublin_trace(10, "heavy", "1", walltime_margin=-1)


def test_the_leak_one_node_check_can_ask_for_an_empty_node() -> None:
    eng = Engine(generate_grid(2, 2, cores=2), policy="first")
    for _ in range(4):  # one core busy on every node
        eng.leak_start(1, strategy="leak", now=0, duration=100)
    with pytest.raises(BusyError, match="free node"):
        eng.leak_start(1, strategy="leak", now=0, duration=100, start_on="empty")
    assert len(eng.leak_jobs) == 4  # nothing changed
    got = eng.leak_start(1, strategy="leak", now=0, duration=100)  # a free core is enough
    assert got.procs[0].core is not None
    with pytest.raises(InputError, match="start_on"):
        eng.leak_start(1, strategy="leak", now=0, duration=100, start_on="nodes")


def test_communication_model_settings() -> None:
    assert parse_comm_model("") == CommModel()
    assert parse_comm_model("gamma=0, beta=0.5") == CommModel(gamma=0.0, beta=0.5)
    for bad in ("gamma", "delta=1", "gamma=x", "gamma=-1", "dynamic_phases=2"):
        with pytest.raises(InputError):
            parse_comm_model(bad)


def test_type2_forks_use_the_leak_search_unless_kept_local() -> None:
    """Journal section 5: the leak searches a core at every fork; 'local' (the ablation) oversubscribes."""
    from fluxlite.sim.deadline.sim import simulate

    jobs = [j for j in lublin_trace(60, "normal", "2", seed=11, cores=64) if j.procs >= 8][:6]
    assert jobs
    leak = simulate(jobs, "leak", width=4, height=4, cores_per_node=4)
    local = simulate(jobs, "leak", width=4, height=4, cores_per_node=4, type2_forks="local")
    assert leak.oversubscribed < local.oversubscribed
    with pytest.raises(InputError, match="type-2"):
        simulate(jobs, "leak", width=4, height=4, cores_per_node=4, type2_forks="remote")


@pytest.mark.parametrize("backend", ["grid", "interim"])
def test_static_shift_none_tries_only_the_earliest_start(backend: str) -> None:
    """Ablation of figures 6 and 8's 'get next valid time interval': every accepted job starts at its earliest start."""
    from fluxlite.sim.deadline.placement import Machine
    from fluxlite.sim.deadline.sim import simulate

    jobs = lublin_trace(150, "very-heavy", "uniform", seed=4, cores=32, lag_model="none")
    later = simulate(jobs, "count", machine=Machine(4, 2, 4, strategy="count", backend=backend))
    none = simulate(
        jobs, "count", machine=Machine(4, 2, 4, strategy="count", backend=backend), static_shift="none"
    )
    earliest = {j.jobid: j.earliest_start for j in jobs}
    started = [(jid, s) for jid, out, s, _ in none.outcomes if out != "rejected"]
    assert started and all(s == earliest[jid] for jid, s in started)
    # the default moves some starts later, and so accepts more on this overloaded machine
    assert any(s > earliest[jid] for jid, out, s, _ in later.outcomes if out != "rejected")
    assert none.accepted < later.accepted
    with pytest.raises(InputError, match="static shift"):
        simulate(jobs[:3], "count", static_shift="sometimes")


def test_offered_load_table_reads_the_generator() -> None:
    """The causes section's table: the default spreads a trace over ~2 months; no lag packs it."""
    from fluxlite.sim.deadline.reproduce import offered_load

    rows = [r.strip("|").split("|") for r in offered_load(("uniform-63d", "none"))[2:]]
    got = {(c[0].strip(), c[1].strip()): (float(c[2]), float(c[3])) for c in rows}
    assert len(got) == 6
    for load in ("normal", "heavy", "very-heavy"):
        span, share = got[("uniform-63d", load)]
        assert 60 < span < 90 and share < 0.3
    assert got[("none", "very-heavy")][1] > 1.0 > got[("uniform-63d", "very-heavy")][1]
