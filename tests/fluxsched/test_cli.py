"""fluxlite-flux without Flux: the loader it writes, the modules it would remove, bad input."""

from __future__ import annotations

import subprocess
import sys
import tomllib

from fluxsched.cli import MODULE_NAME, main, scheduler_modules, write_loader

FLUXION = """Module                    Idle  S Sendq Recvq Service
sched-fluxion-feasibility    0  R     0     0 feasibility
job-manager                  0  R     0     0
sched-fluxion-qmanager       0  R     0     0 sched
sched-fluxion-resource       0  R     0     0
resource                     0  R     0     0
"""
SIMPLE = """Module                    Idle  S Sendq Recvq Service
sched-simple                 0  R     0     0 feasibility,sched
resource                     0  R     0     0
"""


def test_the_modules_holding_the_scheduler_seat_in_removal_order():
    assert scheduler_modules(FLUXION) == [
        "sched-fluxion-qmanager",
        "sched-fluxion-feasibility",
        "sched-fluxion-resource",
    ]
    assert scheduler_modules(SIMPLE) == ["sched-simple"]
    assert scheduler_modules("Module Idle S Sendq Recvq Service\n") == []


def test_the_loader_appends_paths_and_the_modprobe_entry_names_it(tmp_path):
    loader = write_loader(tmp_path / "m", ["queue-policy=easy"])
    assert loader.name == f"{MODULE_NAME}.py"
    text = loader.read_text()
    assert "sys.path.append" in text and "sys.path.insert" not in text
    conf = tomllib.loads((loader.parent / "modprobe.d" / "fluxlite.toml").read_text())
    mod = conf["modules"][0]
    assert mod["module"] == str(loader) and mod["args"] == ["queue-policy=easy"]
    assert set(mod["provides"]) == {"sched", "feasibility"} and mod["priority"] > 500
    compile(text, str(loader), "exec")  # valid Python (importing it needs flux-core's bindings)


def test_bad_input_is_one_line_and_writes_nothing(tmp_path, capsys):
    assert main(["loader", "--dir", str(tmp_path / "x"), "--arg", "policy=nosuch"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("fluxlite-flux: policy='nosuch'")
    assert not (tmp_path / "x").exists()
    r = subprocess.run([sys.executable, "-m", "fluxsched", "options"], capture_output=True, text=True)
    assert r.returncode == 0 and "queue-policy" in r.stdout
