"""Dynamic fairness (DFS): the Maui-style config, limits, and the evolving-job iteration."""

from __future__ import annotations

import pytest

from fluxlite.api import Engine
from fluxlite.errors import InputError, StateError
from fluxlite.queue import Job, Queue
from fluxlite.queue.dynamic import DynamicScheduler
from fluxlite.queue.fairness import DfsConfig, Fairness, parse_dfs_config, parse_duration
from fluxlite.readers.generate import generate_graph
from fluxlite.sim.batch.sim import BatchConfig, BatchSim
from fluxlite.sim.batch.workloads import esp_dynamic

SPEC_EXAMPLE = """\
DFSPOLICY          DFSSINGLEANDTARGETDELAY
DFSINTERVAL        06:00:00
DFSDECAY           0.4
USERCFG[user01]    DFSDYNDELAYPERM=1 DFSTARGETDELAYTIME=3600 DFSSINGLEDELAYTIME=0
USERCFG[user02]    DFSDYNDELAYPERM=0
USERCFG[user03]    DFSDYNDELAYPERM=1 DFSTARGETDELAYTIME=0 DFSSINGLEDELAYTIME=00:30:00
GROUPCFG[group05]  DFSSINGLEDELAYTIME=04:00:00
"""


def test_spec_example_parses():
    """The specification's example configuration parses to the values it states."""
    cfg = parse_dfs_config(SPEC_EXAMPLE)
    assert cfg.policy == "DFSSINGLEANDTARGETDELAY" and cfg.interval == 6 * 3600 and cfg.decay == 0.4
    assert cfg.limits[("user", "user01")] == {
        "DFSDYNDELAYPERM": 1,
        "DFSTARGETDELAYTIME": 3600,
        "DFSSINGLEDELAYTIME": 0,
    }
    assert cfg.limits[("user", "user03")]["DFSSINGLEDELAYTIME"] == 1800
    assert cfg.limits[("group", "group05")]["DFSSINGLEDELAYTIME"] == 4 * 3600


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("DFSPOLICY NONE\nDFSFOO 3\n", "<dfs>:2: unknown key 'DFSFOO'"),
        ("USERCFG[a] DFSWHAT=1\n", "<dfs>:1: unknown setting 'DFSWHAT=1'"),
        ("NODECFG[a] DFSDYNDELAYPERM=1\n", "<dfs>:1: unknown key 'NODECFG'"),
        ("DFSPOLICY SOMETIMES\n", "<dfs>:1: DFSPOLICY must be one of"),
        ("\n\nDFSINTERVAL 1:xx\n", "<dfs>:3: bad time"),
        ("DFSDECAY 2\n", "<dfs>:1: DFSDECAY must be in"),
        ("USERCFG[a] DFSDYNDELAYPERM=2\n", "<dfs>:1: DFSDYNDELAYPERM must be 0 or 1"),
    ],
)
def test_config_errors_name_the_line(text, needle):
    """Unknown keys and bad values are InputErrors naming source and line."""
    with pytest.raises(InputError) as exc:
        parse_dfs_config(text)
    assert needle in str(exc.value)


def test_durations():
    assert parse_duration("90") == 90 and parse_duration("01:30") == 90
    assert parse_duration("1:00:00:05") == 86405


def _j(jobid, user, group="", **kw):
    return Job(jobid, 1, 10, user=user, group=group, **kw)


def test_most_restrictive_limit_wins_and_zero_means_none():
    """User and group limits: the smaller non-zero time wins; any perm 0 forbids."""
    cfg = parse_dfs_config(SPEC_EXAMPLE + "USERCFG[user04] DFSSINGLEDELAYTIME=5:00:00\n")
    assert cfg.limit(_j(1, "user04", "group05"), "DFSSINGLEDELAYTIME") == 4 * 3600
    assert cfg.limit(_j(1, "user03", "group05"), "DFSSINGLEDELAYTIME") == 1800
    assert cfg.limit(_j(1, "user01"), "DFSSINGLEDELAYTIME") == 0
    assert cfg.limit(_j(1, "user02"), "DFSDYNDELAYPERM") == 0


def test_fairness_decisions():
    """Single/target limits, the perm flag, same-user delays and interval decay."""
    f = Fairness(parse_dfs_config(SPEC_EXAMPLE))
    req = _j(99, "evolver")
    assert not f.allows(req, [(_j(1, "user02"), 1.0)], 0)  # may never be delayed
    assert f.allows(req, [(_j(2, "evolver"), 9999.0)], 0)  # the requester's own jobs do not count
    assert f.allows(req, [(_j(3, "user01"), 3600.0)], 0)
    assert not f.allows(req, [(_j(3, "user01"), 3601.0)], 0)  # target 3600 per interval
    f.record(req, [(_j(3, "user01"), 3000.0)])
    assert not f.allows(req, [(_j(4, "user01"), 700.0)], 10)
    assert f.allows(req, [(_j(4, "user01"), 700.0)], 6 * 3600)  # decayed: 3000 * 0.4 = 1200
    assert not f.allows(req, [(_j(5, "user03"), 1801.0)], 0)  # single 30 min
    assert f.allows(req, [(_j(5, "user03"), 1800.0)], 0)
    assert Fairness(DfsConfig()).allows(req, [(_j(1, "user02"), 1e9)], 0)  # NONE


def _dyn_queue():
    q = Queue(Engine(generate_graph(nodes=2, sockets=1, cores=4)), "easy")
    return q, DynamicScheduler(
        q, DfsConfig(policy="DFSTARGETDELAY", limits={("", ""): {"DFSTARGETDELAYTIME": 5}})
    )


def test_dynget_grants_idle_cores_and_one_request_per_job():
    """dynget grows a running job on idle cores; a second pending request is refused; dynfree gives back a subset."""
    q, dyn = _dyn_queue()
    job = q.submit(Job(1, 4, 100, unit="core", user="a"), 0)
    dyn.iterate(0)
    dyn.dynget(job, 2, 5)
    with pytest.raises(StateError):
        dyn.dynget(job, 1, 5)
    _started, decided = dyn.iterate(5)
    assert decided[0].granted and job.size == 6 and q.used("core", 5) == 6
    held = q.held(job)
    dyn.dynfree(job, held[:3], 6)
    assert job.size == 3 and q.used("core", 6) == 3


def test_grant_refused_when_it_delays_another_user_beyond_the_limit():
    """A grant that would delay another user's reserved job by more than the target is undone."""
    q, dyn = _dyn_queue()
    job = q.submit(Job(1, 4, 100, unit="core", user="a"), 0)
    dyn.iterate(0)
    q.submit(Job(2, 4, 20, unit="core", user="b"), 1)
    q.submit(Job(3, 8, 20, unit="core", user="b"), 1)
    dyn.iterate(1)
    before = dict(q.engine.jobs)
    dyn.dynget(job, 4, 2)
    _s, decided = dyn.iterate(2)
    assert decided[0].granted is False and job.refusals == 1 and job.size == 4
    assert q.used("core", 2) == 8 and set(q.engine.jobs) == set(before)


def test_esp_dynamic_target_limit_is_never_exceeded():
    """Dynamic-500: per user and 1-hour interval, the delays granted never add up beyond 500 s."""
    cfg = parse_dfs_config(
        "DFSPOLICY DFSTARGETDELAY\nDFSINTERVAL 01:00:00\nDFSDECAY 0\nDFSTARGETDELAYTIME 500\n"
    )
    sim = BatchSim(esp_dynamic(), BatchConfig(queue="hybrid", reservation_depth=5, dfs=cfg))
    res = sim.run()
    assert res.recount == []
    log = sim.dyn.log
    assert any(granted for _t, _j, granted, _d in log) and any(not g for _t, _j, g, _d in log)
    per: dict[tuple[str, int], float] = {}
    for t, rid, granted, delays in log:
        for jid, d in delays:
            assert granted
            if sim.q.jobs[jid].user == sim.q.jobs[rid].user:
                continue  # delays among a user's own jobs do not count
            key = (sim.q.jobs[jid].user, t // 3600)
            per[key] = per.get(key, 0.0) + d
    assert per and max(per.values()) <= 500
    assert res.summary["dyn_satisfied_jobs"] == sum(1 for j in res.jobs if j.grants)
