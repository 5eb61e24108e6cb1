"""fluxlite scheduling real jobs in a real Flux instance (``flux start --test-size=4``).

One instance (4 brokers, a fake R of 4 nodes x 4 cores + 1 GPU, node 3 has
property ``big``) is shared by the tests of this module; each test leaves it
idle.  fluxlite is loaded by config (``FLUX_MODPROBE_PATH_APPEND``).
"""

from __future__ import annotations

import json
import time

import pytest

from tests.fluxsched.conftest import Instance, fake_R, needs_flux

pytestmark = needs_flux


@pytest.fixture(scope="module")
def inst(tmp_path_factory):
    R = fake_R(4, 4, gpus=1, props={"big": "3"})
    # the module's settings from the broker config (the same names as load arguments)
    conf = '[sched-fluxlite]\nqueue-policy = "easy"\npolicy = "lonode"\n'
    i = Instance(tmp_path_factory.mktemp("flux"), R=R, config=conf)
    yield i
    i.stop()


def ranks_cores(R: dict) -> dict[int, list[int]]:
    from fluxlite.idset import decode

    out: dict[int, list[int]] = {}
    for e in R["execution"]["R_lite"]:
        for r in decode(e["rank"]):
            out[r] = decode(e["children"].get("core", ""))
    return out


def wait_until(fn, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.1)


def test_fluxlite_is_the_scheduler_and_jobs_run_and_complete(inst):
    mods = inst.flux("module", "list").stdout
    assert "sched-fluxlite" in mods and "sched-simple" not in mods
    assert "ready: queue-policy=easy policy=lonode" in inst.dmesg()
    ids = inst.flux("submit", "--cc=1-4", "-n1", "true").stdout.split()
    for j in ids:
        assert "status=0" in inst.wait_event(j, "finish")
    R = inst.R(ids[0])
    assert sum(len(c) for c in ranks_cores(R).values()) == 1
    assert R["execution"]["nodelist"][0].startswith("fake")


def test_exclusive_node_versus_shared_cores(inst):
    a = inst.submit("-N1", "--exclusive", "-n1", "true")
    b = inst.submit("-n2", "true")
    inst.wait_event(a, "clean")
    inst.wait_event(b, "clean")
    assert ranks_cores(inst.R(a)) == {0: [0, 1, 2, 3]}  # lonode: the lowest node first
    assert sum(len(c) for c in ranks_cores(inst.R(b)).values()) == 2


def test_cancel_pending_and_running_jobs(inst):
    big = inst.submit("-N4", "--exclusive", "sleep", "300")
    inst.wait_event(big, "start")
    small = inst.submit("-n1", "true")
    time.sleep(0.5)
    assert inst.state(small) == "SCHED"
    inst.flux("cancel", small)
    out = inst.wait_event(small, "exception")
    assert "cancel" in out
    inst.flux("cancel", big)
    inst.wait_event(big, "clean")
    again = inst.submit("-N4", "--exclusive", "true")
    assert "status=0" in inst.wait_event(again, "finish")


def test_a_job_that_can_never_fit_is_denied_with_the_reason(inst):
    j = inst.submit("-N8", "true")
    out = inst.wait_event(j, "exception")
    assert "alloc" in out and "unsatisfiable" in out
    # feasibility.check answers the same, at once
    js = inst.flux("run", "--dry-run", "-N8", "true").stdout
    r = inst.flux(
        "python", "-c",
        "import sys, json, flux\nh = flux.Flux()\n"
        "try:\n    h.rpc('feasibility.check', {'jobspec': json.load(sys.stdin)}).get()\n    print('ok')\n"
        "except OSError as e:\n    print('denied:', e.strerror)\n",
        input=js,
    ).stdout
    assert r.startswith("denied:") and "unsatisfiable" in r


def test_constraints_gpus_and_time_limits(inst):
    c = inst.submit("-n1", "--requires=big", "true")
    g = inst.submit("-n1", "-g1", "true")
    t = inst.submit("-n1", "-t", "2s", "sleep", "60")
    nope = inst.submit("-n1", "--requires=nosuch", "true")
    inst.wait_event(c, "clean")
    assert list(ranks_cores(inst.R(c))) == [3]
    inst.wait_event(g, "clean")
    gR = inst.R(g)["execution"]["R_lite"]
    assert gR[0]["children"]["gpu"] == "0"
    assert "unsatisfiable" in inst.wait_event(nope, "exception")
    tR = inst.R(t)["execution"]
    assert tR["expiration"] - tR["starttime"] == pytest.approx(2, abs=0.01)
    assert "timeout" in inst.wait_event(t, "exception", timeout=30)
    inst.wait_event(t, "clean")


def test_urgency_reorders_the_queue_and_resource_list_shows_fluxlites_view(inst):
    big = inst.submit("-N4", "--exclusive", "sleep", "300")
    inst.wait_event(big, "start")
    st = inst.flux("resource", "list", "-s", "allocated", "-no", "{ncores}").stdout.split()
    assert st == ["16"]
    first = inst.submit("-N4", "--exclusive", "true")
    second = inst.submit("-N4", "--exclusive", "true")
    inst.flux("job", "urgency", second, "31")
    inst.flux("cancel", big)
    inst.wait_event(first, "clean")
    inst.wait_event(second, "clean")
    t1 = float(inst.flux("jobs", "-no", "{t_run}", first).stdout)
    t2 = float(inst.flux("jobs", "-no", "{t_run}", second).stdout)
    assert t2 < t1
    free = inst.flux("resource", "list", "-s", "free", "-no", "{ncores}").stdout.split()
    assert free == ["16"]


def test_easy_reservation_is_annotated_with_t_estimate(inst):
    long = inst.submit("-N4", "--exclusive", "-t", "60s", "sleep", "300")
    inst.wait_event(long, "start")
    waiting = inst.submit("-N4", "--exclusive", "-t", "10s", "true")

    def est():
        out = inst.flux("jobs", "-no", "{annotations.sched.t_estimate}", waiting).stdout.strip()
        return out if out and out not in ("None", "-") else None

    t = float(wait_until(est))
    start = inst.R(long)["execution"]["starttime"]
    assert start + 60 <= t <= start + 75
    # a longer time limit for the running job (sched.expiration) moves the reservation with it
    inst.flux("update", long, "duration=120s")
    t2 = float(wait_until(lambda: (e := est()) and float(e) > t + 30 and e))
    assert start + 120 <= t2 <= start + 135
    inst.flux("cancel", long, waiting)
    inst.wait_event(waiting, "clean")
    inst.wait_event(long, "clean")


def test_module_reload_with_jobs_running_rebuilds_every_allocation(inst):
    jobs = [inst.submit("-N1", "--exclusive", "sleep", "300") for _ in range(3)]
    for j in jobs:
        inst.wait_event(j, "start")
    before = {j: inst.R(j)["execution"]["R_lite"] for j in jobs}
    inst.flux("module", "reload", str(inst.loader))
    wait_until(lambda: "re-allocated 3 running job(s)" in inst.dmesg())
    st = inst.flux("resource", "list", "-s", "allocated", "-no", "{ncores}").stdout.split()
    assert st == ["12"]
    # one node is left: one exclusive job fits, the next must wait (nothing double-booked)
    a = inst.submit("-N1", "--exclusive", "sleep", "300")
    b = inst.submit("-N1", "--exclusive", "true")
    inst.wait_event(a, "start")
    time.sleep(0.5)
    assert inst.state(b) == "SCHED"
    used = {tuple(sorted(ranks_cores(inst.R(j)))) for j in [*jobs, a]}
    assert len(used) == 4
    assert {j: inst.R(j)["execution"]["R_lite"] for j in jobs} == before
    inst.flux("cancel", *jobs, a)
    assert "status=0" in inst.wait_event(b, "finish")
    for j in [*jobs, a]:
        inst.wait_event(j, "clean")


def test_a_batch_subinstance_runs_fluxlite_and_schedules_its_own_jobs(inst):
    script = (
        "#!/bin/bash\n"
        "flux module list | grep -c sched-fluxlite\n"
        "id=$(flux submit -n2 true)\n"
        "flux job wait-event $id clean >/dev/null\n"
        "flux job info $id R\n"
    )
    (inst.workdir / "batch.sh").write_text(script)
    j = inst.flux(
        "batch", "-N2", "--exclusive", "-o", "cpu-affinity=off", "--output=batch.out", str(inst.workdir / "batch.sh")
    ).stdout.strip()
    assert "status=0" in inst.wait_event(j, "finish", timeout=60)
    lines = (inst.workdir / "batch.out").read_text().splitlines()
    assert lines[0] == "1"
    sub = json.loads(lines[-1])
    assert sum(len(c) for c in ranks_cores(sub).values()) == 2
    outer = ranks_cores(inst.R(j))
    assert len(outer) == 2 and all(len(c) == 4 for c in outer.values())


def test_malformed_requests_from_a_raw_client_get_bounded_errors_and_change_nothing(inst):
    script = r"""
import json, flux
h = flux.Flux()
def ask(topic, payload):
    try:
        h.rpc(topic, payload).get()
        return "ok"
    except OSError as e:
        return f"{e.errno}:{len(e.strerror or '')}"
out = [
    ask("feasibility.check", {"nojobspec": 1}),
    ask("feasibility.check", {"jobspec": "x" * 100000}),
    ask("feasibility.check", {"jobspec": {"version": 1, "resources": [{"type": "core", "count": -5}]}}),
    ask("sched.expiration", {"id": 12345, "expiration": -1}),
    ask("sched.expiration", {"id": "bogus"}),
]
print(json.dumps(out))
"""
    out = json.loads(inst.flux("python", "-c", script).stdout)
    for res in out:
        code, n = res.split(":")
        assert int(code) > 0 and int(n) <= 400
    before = inst.flux("module", "stats", "sched-fluxlite").stdout
    j = inst.submit("-n1", "true")
    assert "status=0" in inst.wait_event(j, "finish")
    assert json.loads(before)["running"] == 0


def test_a_stopped_instance_leaves_nothing_in_the_temp_dir(tmp_path, monkeypatch):
    """`flux start` makes its rundir under TMPDIR and left it behind (a /tmp/flux-XXXXXX with its
    "start" socket) when the process group was signalled; the instance now gives it a private
    directory and removes it on stop.  (A short temp dir: a rundir must stay under 96 bytes.)"""
    import shutil
    import tempfile
    from pathlib import Path

    tmp = Path(tempfile.mkdtemp(prefix="fl-t-", dir="/tmp"))
    try:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        monkeypatch.setenv("TMPDIR", str(tmp))
        i = Instance(tmp_path / "w", size=1)
        try:
            assert i.flux("getattr", "size").stdout.strip() == "1"
            made = list(tmp.iterdir())
            assert [p.name[:15] for p in made] == ["fluxlite-start-"]  # flux's rundir is inside it
        finally:
            i.stop()
        assert list(tmp.iterdir()) == []
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
