"""The evolving-ESP ablation options: polling passes (--sched-interval) and whole-node placement."""

from __future__ import annotations

import math

import pytest

from fluxlite.errors import InputError
from fluxlite.sim.batch.cli import _DEFAULTS, build
from fluxlite.sim.batch.sim import BatchSim

_STATIC = {"workload": "esp-dynamic", "queue": "hybrid", "reservation_depth": 5}


def _run(**opts):
    wl, cfg = build({**_DEFAULTS, **_STATIC, **opts})
    res = BatchSim(wl, cfg).run()
    assert not res.recount
    return wl, res


def test_defaults_are_the_event_driven_core_placement():
    wl, cfg = build({**_DEFAULTS, **_STATIC})
    assert cfg.sched_interval == 0
    assert wl.unit == "core"
    # the committed baseline (examples/experiments/batch/runs/evolving-Static.json) made before the options
    _wl, res = _run()
    assert res.summary["makespan_s"] == 13645


def test_sched_interval_starts_jobs_only_at_multiples_and_changes_the_run():
    _wl, res = _run(sched_interval=30)
    starts = [j.start for j in res.jobs]
    assert all(s % 30 == 0 for s in starts)
    _wl, base = _run()
    # event-driven passes start some job off the 30 s grid
    assert any(j.start % 30 for j in base.jobs)
    assert res.summary["makespan_s"] != base.summary["makespan_s"]


def test_node_placement_requests_whole_nodes():
    core_wl, _cfg = build({**_DEFAULTS, **_STATIC})
    wl, res = _run(placement="node")
    assert wl.unit == "node"
    for a, b in zip(core_wl.jobs, wl.jobs, strict=True):
        assert b.job.size == math.ceil(a.job.size / 8) and b.job.unit == "node"
    # a node never holds two jobs: whole nodes of the jobs running at any start never exceed 15
    assert _peak_nodes(res.jobs, lambda j: j.size) <= 15
    # with cores anywhere, jobs share nodes: their whole-node counts exceed the machine at some point
    _wl, base = _run()
    assert _peak_nodes(base.jobs, lambda j: math.ceil(j.size / 8)) > 15
    assert res.summary["makespan_s"] != base.summary["makespan_s"]


def _peak_nodes(jobs, nodes_of):
    return max(sum(nodes_of(j) for j in jobs if j.start <= t < j.end) for t in {j.start for j in jobs})


def test_node_placement_dynamic_request_is_one_node():
    wl, _cfg = build({**_DEFAULTS, **_STATIC, "dynamic": True, "placement": "node"})
    assert {sj.dyn_count for sj in wl.jobs if sj.dyn_at} == {1}


@pytest.mark.parametrize("bad", [{"sched_interval": -1}])
def test_bad_values_are_input_errors(bad):
    with pytest.raises(InputError):
        build({**_DEFAULTS, **_STATIC, **bad})


def test_unknown_placement_is_an_input_error():
    from fluxlite.sim.batch.workloads import esp_dynamic

    with pytest.raises(InputError):
        esp_dynamic(placement="socket")
