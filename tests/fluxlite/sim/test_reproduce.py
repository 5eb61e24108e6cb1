"""``fluxlite sim reproduce``: sections assembled from study modules, missing ones named, runs resumable."""

from __future__ import annotations

import json
import sys
import types

from fluxlite.sim import reproduce
from fluxlite.sim.batch import reproduce as batch_reproduce


def _study(calls: list[tuple[str, bool]]) -> types.ModuleType:
    mod = types.ModuleType("fluxlite_test_study")

    def section(out_dir, quick=False):
        calls.append((str(out_dir), quick))
        (out_dir / "fake").mkdir(exist_ok=True)
        return "## A fake study\n\n| finding | verdict |\n|---|---|\n| it works | reproduced |\n"

    mod.section = section
    return mod


def test_sections_are_assembled_and_a_missing_study_says_not_yet_reproduced(tmp_path, monkeypatch):
    """Each study's markdown lands in REPRODUCTION.md; a study whose module is absent is named as not reproduced."""
    calls: list[tuple[str, bool]] = []
    monkeypatch.setitem(sys.modules, "fluxlite_test_study", _study(calls))
    monkeypatch.setattr(reproduce, "STUDIES", {
        "fake": ("fluxlite_test_study", "A fake study", "fake.txt"),
        "absent": ("fluxlite_no_such_study_module", "An absent study", "absent.txt"),
    })  # fmt: skip
    path = reproduce.write_reproduction(tmp_path, quick=True, progress=False)
    text = path.read_text()
    assert calls == [(str(tmp_path), True)]
    assert "| it works | reproduced |" in text
    assert "## An absent study\n\nNot yet reproduced" in text
    assert "| An absent study | absent.txt | not yet reproduced |" in text


def test_cli_refuses_an_unknown_study_in_one_line(tmp_path, capsys):
    """An unknown --only name: exit 2, one line naming the known studies, nothing written."""
    assert reproduce.main(["--only", "nosuch", "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown study 'nosuch'" in err and "batch" in err
    assert not (tmp_path / "REPRODUCTION.md").exists()


def test_batch_runs_are_kept_and_reused_until_their_options_change(tmp_path, monkeypatch):
    """A finished run is read back on the next call (resumable); changed options run it again."""
    ran: list[dict] = []

    def fake(opts):
        ran.append(opts)
        return {"makespan_s": 100 + len(ran)}

    monkeypatch.setattr(batch_reproduce, "_simulate", fake)
    runs = batch_reproduce._Runs(tmp_path)
    a = runs.get("x", {"workload": "esp", "seed": 1})
    b = batch_reproduce._Runs(tmp_path).get("x", {"workload": "esp", "seed": 1})
    assert a == b and len(ran) == 1
    c = batch_reproduce._Runs(tmp_path).get("x", {"workload": "esp", "seed": 2})
    assert len(ran) == 2 and c["makespan_s"] == 102
    assert json.loads((tmp_path / "runs" / "x.json").read_text())["makespan_s"] == 102
    assert not list((tmp_path / "runs").glob("*.tmp"))


def test_power_violations_count_only_excursions_not_restored_by_a_resize():
    """Static backfill never resizes: every excursion is a violation; the LP strategies restore theirs."""
    from fluxlite.sim.batch.cli import _DEFAULTS, build
    from fluxlite.sim.batch.sim import BatchSim

    out = {}
    for scope in ("static", "waiting"):
        opts = batch_reproduce._power_opts(scope)
        wl, cfg = build({**_DEFAULTS, **opts})
        out[scope] = BatchSim(wl, cfg).run().summary
    assert out["static"]["corridor_violations"] == out["static"]["corridor_episodes"] > 0
    assert out["waiting"]["corridor_violations"] < out["waiting"]["corridor_episodes"]


def test_only_reruns_one_study_and_keeps_the_others_sections(tmp_path, monkeypatch):
    """--only reruns the named study; another study's section comes from its last run."""
    calls: list[tuple[str, bool]] = []
    monkeypatch.setitem(sys.modules, "fluxlite_test_study", _study(calls))
    monkeypatch.setattr(reproduce, "STUDIES", {
        "fake": ("fluxlite_test_study", "A fake study", "fake.txt"),
        "other": ("fluxlite_test_study", "Another study", "other.txt"),
    })  # fmt: skip
    reproduce.write_reproduction(tmp_path, progress=False)
    (tmp_path / "other" / "SECTION.md").write_text("## Another study\n\nkept text\n")
    text = reproduce.write_reproduction(tmp_path, only=["fake"], progress=False).read_text()
    assert len(calls) == 3
    assert "kept text" in text and "(kept from its last run)" in text


def test_no_run_asks_studies_that_can_for_their_committed_data(tmp_path, monkeypatch):
    """``--no-run`` passes ``run=False`` to a section that takes it, and nothing extra to one that does not."""
    seen: dict[str, object] = {}
    plain = types.ModuleType("fluxlite_test_plain")
    plain.section = lambda out_dir, quick=False: seen.setdefault("plain", "called") and "## Plain\n"
    runny = types.ModuleType("fluxlite_test_runny")

    def section(out_dir, quick=False, *, run=True):
        seen["runny"] = run
        return "## Runny\n"

    runny.section = section
    monkeypatch.setitem(sys.modules, "fluxlite_test_plain", plain)
    monkeypatch.setitem(sys.modules, "fluxlite_test_runny", runny)
    monkeypatch.setattr(reproduce, "STUDIES", {
        "plain": ("fluxlite_test_plain", "Plain", "p.txt"),
        "runny": ("fluxlite_test_runny", "Runny", "r.txt"),
    })  # fmt: skip
    assert reproduce.main(["--out", str(tmp_path), "--no-run", "--no-progress"]) == 0
    assert seen == {"plain": "called", "runny": False}
    reproduce.main(["--out", str(tmp_path), "--no-progress"])
    assert seen["runny"] is True
