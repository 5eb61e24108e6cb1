"""The suite's own rules: every test runs in its own temporary directory."""

from __future__ import annotations

import os
from pathlib import Path

from tests.conftest import REPO


def test_a_test_runs_in_its_own_tmp_path(tmp_path: Path) -> None:
    """The working directory is the test's tmp_path, not the directory pytest was started in."""
    assert Path.cwd() == tmp_path and not any(tmp_path.iterdir())
    assert REPO not in Path.cwd().parents and Path(os.getcwd()) != REPO
