"""Shared fixtures: where the project's shared test data lives, and small engines."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = (REPO / ".." / "shared").resolve()
CONFORMANCE = SHARED / "fluxion-conformance"
BENCH = SHARED / "bench"


def need_shared() -> None:
    """Skip the calling test when ../shared (beside the checkout) is not there."""
    if not CONFORMANCE.is_dir():
        pytest.skip(f"shared test data not found at {SHARED}")


@pytest.fixture
def shared_dir() -> Path:
    need_shared()
    return SHARED
