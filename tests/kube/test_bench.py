"""``fluxlite bench kube``'s command line (the runs themselves are committed outputs, not tests)."""

from __future__ import annotations

import pytest

from kube.bench import main


@pytest.mark.parametrize("sizes", ["5:x", "5", "0:10", "10:0", ",", "5:5,:3"])
def test_bad_sizes_are_one_line_errors(sizes: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A malformed ``--sizes`` is refused in one line, before any server starts."""
    assert main(["--throughput", "--sizes", sizes, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fluxlite bench kube: --sizes") and err.count("\n") == 1
