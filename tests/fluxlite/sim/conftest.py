"""Fixtures shared by the simulator tests."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="package")
def dask_cluster() -> Iterator[Any]:
    """A real Dask cluster on loopback (a scheduler and two single-thread worker processes), shared by
    this package's tests and stopped when they end (its event loop must not outlive them: later tests
    count the garbage collector's frozen objects)."""
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=None
    ) as cluster:
        yield cluster
