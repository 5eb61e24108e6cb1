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

# rank 0's housekeeping waits while the file HOLD exists (only the partial-free test creates it)
HOUSEKEEPING = """
[job-manager.housekeeping]
command = ["sh", "-c", "if [ $(flux getattr rank) = 0 ]; then while [ -e {hold} ]; do sleep 0.1; done; fi"]
release-after = "0"
"""


@pytest.fixture(scope="module")
def inst(tmp_path_factory):
    d = tmp_path_factory.mktemp("load")
    i = Instance(d, R=fake_R(4, 4), config=HOUSEKEEPING.format(hold=d / "HOLD"), by_config=False)
    yield i
    i.stop()


def fluxlite_flux(inst, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "fluxsched", *args], env=inst.env, capture_output=True,
                          text=True, timeout=120)


def test_load_by_hand_refuses_bad_settings_then_runs_limited(inst):
    def names():
        return sorted(line.split()[0] for line in inst.flux("module", "list").stdout.splitlines()[1:])

    before = names()
    assert "sched-fluxlite" not in before
    # a bad setting is refused before anything is removed
    r = fluxlite_flux(inst, "load", "--dir", str(inst.loader.parent), "queue-policy=lifo")
    assert r.returncode == 1 and r.stderr.startswith("fluxlite-flux: queue-policy='lifo'")
    assert names() == before
    r = fluxlite_flux(inst, "load", "--dir", str(inst.loader.parent), "queue-policy=easy")
    assert r.returncode == 0, r.stderr
    mods = inst.flux("module", "list").stdout
    assert "sched-fluxlite" in mods and "sched-simple" not in mods and "qmanager" not in mods
    # flux module load itself refuses a bad setting with EINVAL and one logged line
    inst.flux("module", "remove", "sched-fluxlite")
    bad = inst.flux("module", "load", str(inst.loader), "queue-policy=lifo", check=False)
    assert bad.returncode != 0 and "Invalid argument" in bad.stderr
    assert "queue-policy='lifo': known are fcfs, easy, conservative, hybrid" in inst.dmesg()
    assert "sched-fluxlite" not in inst.flux("module", "list").stdout
    inst.flux("module", "load", str(inst.loader), "queue-depth=2", "queue-policy=conservative")
    wait_until(lambda: "queue-depth=2" in inst.dmesg())
    # limited mode: the job manager sends 2 requests at a time; all 6 jobs still run
    ids = inst.flux("submit", "--cc=1-6", "-N1", "--exclusive", "true").stdout.split()
    for j in ids:
        assert "status=0" in inst.wait_event(j, "finish")
    for j in ids:
        inst.wait_event(j, "clean")


def test_partial_free_releases_ranks_as_housekeeping_finishes(inst):
    hold = inst.workdir / "HOLD"
    hold.touch()
    try:
        j = inst.submit("-N4", "--exclusive", "true")
        inst.wait_event(j, "finish")
        # ranks 1-3 come back (partial frees) while rank 0 is still in housekeeping
        wait_until(lambda: inst.flux("resource", "list", "-s", "allocated", "-no", "{ncores}").stdout.split()
                   == ["4"])
        k = inst.submit("-N3", "--exclusive", "true")
        assert "status=0" in inst.wait_event(k, "finish")
        assert 0 not in ranks_cores(inst.R(k))
        inst.wait_event(k, "clean")
        # rank 0 is still held (its housekeeping waits): the final free has not come
        assert inst.flux("resource", "list", "-s", "allocated", "-no", "{ncores}").stdout.split() == ["4"]
    finally:
        hold.unlink()
    wait_until(lambda: inst.flux("resource", "list", "-s", "free", "-no", "{ncores}").stdout.split() == ["16"])


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
    import sys

    from fluxsched.cli import write_loader
    from tests.fluxsched.conftest import FLUX, PREFIX

    loader = write_loader(tmp_path / "m")
    script = f"{sys.executable} -m fluxsched load --dir {loader.parent} && flux run -n1 true"
    env = {"PATH": f"{PREFIX / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    r = subprocess.run([FLUX, "start", "--test-size=1", "bash", "-c", script], env=env, cwd=tmp_path,
                       capture_output=True, text=True, timeout=120)
    # rc3 unloads the resource module first: fluxlite must take that as the end, not a failure
    assert r.returncode == 0, r.stderr[-2000:]
    assert "runtime failure" not in r.stderr
