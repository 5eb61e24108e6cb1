"""Loading sched-fluxlite by hand (``flux module load``), limited mode, partial free, drained nodes.

One instance started with flux-core's own scheduler, housekeeping that keeps
rank 0 a few seconds longer than the others (so a job's resources come back
in two frees), and a fake R of 4 nodes x 4 cores.
"""

from __future__ import annotations

import time

import pytest

from tests.fluxsched.conftest import Instance, fake_R, needs_flux
from tests.fluxsched.test_instance import ranks_cores, wait_until

pytestmark = needs_flux

HOUSEKEEPING = """
[job-manager.housekeeping]
command = ["sh", "-c", "if [ $(flux getattr rank) = 0 ]; then sleep 4; fi"]
release-after = "0"
"""


@pytest.fixture(scope="module")
def inst(tmp_path_factory):
    i = Instance(tmp_path_factory.mktemp("load"), R=fake_R(4, 4), config=HOUSEKEEPING, by_config=False)
    yield i
    i.stop()


def test_load_by_hand_refuses_bad_settings_then_runs_limited(inst):
    assert "sched-simple" in inst.flux("module", "list").stdout
    inst.flux("module", "remove", "sched-simple")
    bad = inst.flux("module", "load", str(inst.loader), "queue-policy=lifo", check=False)
    assert bad.returncode != 0 and "Invalid argument" in bad.stderr
    assert "queue-policy='lifo': known are fcfs, easy, conservative, hybrid" in inst.dmesg()
    assert "sched-fluxlite" not in inst.flux("module", "list").stdout
    inst.flux("module", "load", str(inst.loader), "queue-depth=2", "queue-policy=conservative")
    assert "queue-depth=2" in inst.dmesg()
    # limited mode: the job manager sends 2 requests at a time; all 6 jobs still run
    ids = inst.flux("submit", "--cc=1-6", "-N1", "--exclusive", "true").stdout.split()
    for j in ids:
        assert "status=0" in inst.wait_event(j, "finish")
    for j in ids:
        inst.wait_event(j, "clean")


def test_partial_free_releases_ranks_as_housekeeping_finishes(inst):
    j = inst.submit("-N4", "--exclusive", "true")
    inst.wait_event(j, "finish")

    def partly_free():
        st = inst.flux("resource", "list", "-s", "allocated", "-no", "{ncores}").stdout.split()
        return st == ["4"]

    # ranks 1-3 came back (partial free) while rank 0 is still in housekeeping
    wait_until(partly_free, timeout=4)
    k = inst.submit("-N3", "--exclusive", "true")
    assert "status=0" in inst.wait_event(k, "finish")
    assert 0 not in ranks_cores(inst.R(k))
    inst.wait_event(j, "clean", timeout=20)
    free = inst.flux("resource", "list", "-s", "free", "-no", "{ncores}")
    wait_until(lambda: inst.flux("resource", "list", "-s", "free", "-no", "{ncores}").stdout.split() == ["16"],
               timeout=20)
    assert free.returncode == 0
    inst.wait_event(k, "clean", timeout=20)


def test_drained_nodes_are_down_in_fluxlites_view_and_skipped(inst):
    inst.flux("resource", "drain", "3", "test")
    wait_until(lambda: inst.flux("resource", "list", "-s", "down", "-no", "{nnodes}").stdout.split() == ["1"])
    j = inst.submit("-N4", "--exclusive", "true")
    time.sleep(1)
    assert inst.state(j) == "SCHED"
    inst.flux("resource", "undrain", "3")
    assert "status=0" in inst.wait_event(j, "finish")
    inst.wait_event(j, "clean", timeout=20)


def test_an_instance_with_fluxlite_loaded_by_hand_shuts_down_cleanly(tmp_path):
    import subprocess

    from fluxsched.cli import write_loader
    from tests.fluxsched.conftest import FLUX, PREFIX

    loader = write_loader(tmp_path / "m")
    script = f"flux module remove sched-simple && flux module load {loader} && flux run -n1 true"
    env = {"PATH": f"{PREFIX / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run([FLUX, "start", "--test-size=1", "bash", "-c", script], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    # rc3 unloads the resource module first: fluxlite must take that as the end, not a failure
    assert r.returncode == 0, r.stderr[-2000:]
    assert "runtime failure" not in r.stderr
