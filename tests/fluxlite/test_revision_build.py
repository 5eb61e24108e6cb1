"""A benchmark's ``--baseline`` revision runs as this checkout runs: compiled in place when this
checkout runs compiled modules, pure Python otherwise, and it says which (``build_like_this``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fluxlite import _compiled, revision
from fluxlite.errors import InputError


def _tree(tmp_path: Path, *files: str) -> Path:
    tree = tmp_path / "base"
    (tree / "fluxlite").mkdir(parents=True)
    for f in files:
        (tree / f).write_text("# placeholder\n")
    return tree


def _compiled_here(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    monkeypatch.delenv(revision.BASELINE_PURE_ENV, raising=False)
    monkeypatch.delenv("FLUXLITE_PURE", raising=False)
    monkeypatch.setattr(_compiled, "status", lambda: {"compiled": n})


def _no_subprocess(*a: Any, **k: Any) -> Any:
    raise AssertionError(f"nothing should run: {a}")


def test_the_opt_out_and_a_pure_checkout_build_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path, "setup.py", "pyproject.toml")
    monkeypatch.setattr(revision.subprocess, "run", _no_subprocess)
    _compiled_here(monkeypatch, 20)
    monkeypatch.setenv(revision.BASELINE_PURE_ENV, "1")
    assert revision.build_like_this("HEAD", tree) == f"pure Python ({revision.BASELINE_PURE_ENV} is set)"
    _compiled_here(monkeypatch, 0)
    assert revision.build_like_this("HEAD", tree) == "pure Python (as this checkout)"
    _compiled_here(monkeypatch, 20)
    monkeypatch.setenv("FLUXLITE_PURE", "1")
    assert revision.build_like_this("HEAD", tree) == "pure Python (as this checkout)"


def test_a_compiled_checkout_compiles_the_baseline_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path, "setup.py", "pyproject.toml")
    _compiled_here(monkeypatch, 20)
    monkeypatch.setenv("FLUXLITE_PURE_PYTHON", "1")  # an install-time opt-out must not leak into the build
    calls: list[tuple[list[str], Path, dict[str, str]]] = []

    def fake(cmd: list[str], *, cwd: Path, env: dict[str, str], **k: Any) -> Any:
        calls.append((cmd, cwd, env))
        doc = {"failed": [], "modules": {"fluxlite.a": "x", "fluxlite.b": "y", "fluxlite.c": "z"}}
        (Path(cwd) / "fluxlite" / "_compiled.json").write_text(json.dumps(doc))
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(revision.subprocess, "run", fake)
    how = revision.build_like_this("HEAD", tree)
    assert how.startswith("compiled in place like this checkout (3 modules, ")
    assert [(c, w) for c, w, _ in calls] == [([sys.executable, "setup.py", "build_ext", "--inplace"], tree)]
    assert "FLUXLITE_PURE_PYTHON" not in calls[0][2]


def test_a_failed_or_empty_compile_leaves_it_pure_and_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path, "setup.py", "pyproject.toml")
    _compiled_here(monkeypatch, 20)
    monkeypatch.setattr(
        revision.subprocess, "run", lambda cmd, **k: subprocess.CompletedProcess(cmd, 1, "", "warning\nerror: boom\n")
    )
    assert revision.build_like_this("HEAD", tree) == "pure Python (its compile failed: error: boom)"
    monkeypatch.setattr(revision.subprocess, "run", lambda cmd, **k: subprocess.CompletedProcess(cmd, 0, "", ""))
    assert revision.build_like_this("HEAD", tree) == "pure Python (its compile failed: no module compiled)"


def test_a_revision_without_a_compile_step_stays_pure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    tree = _tree(tmp_path)  # only fluxlite/ was unpacked, and the revision has no setup.py
    _compiled_here(monkeypatch, 20)
    asked: list[tuple[str, ...]] = []

    def no_files(ref: str, into: Path, paths: tuple[str, ...]) -> None:
        asked.append(paths)
        raise InputError("pathspec 'setup.py' did not match any files")

    monkeypatch.setattr(revision, "_archive", no_files)
    monkeypatch.setattr(revision.subprocess, "run", _no_subprocess)
    assert revision.build_like_this("old", tree) == "pure Python (the revision has no compile step)"
    assert asked == [("setup.py", "pyproject.toml")]


def test_extract_without_build_unpacks_the_revision(tmp_path: Path) -> None:
    if not (revision.REPO / ".git").exists():
        pytest.skip("not a git checkout")
    how = revision.extract_revision("HEAD", tmp_path, "fluxlite/revision.py", build=False)
    assert how == "pure Python (not built)"
    assert (tmp_path / "fluxlite" / "revision.py").is_file()
