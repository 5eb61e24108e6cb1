"""Real Flux instances (``flux start --test-size=N``) whose scheduler is fluxlite.

flux-core is looked for in ``$FLUXLITE_FLUX_PREFIX`` (default
``~/.cache/fluxlite/flux-0.88.0``, where ``.ci/run`` builds it), then on PATH.
Without it the tests that need it skip with one line.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fluxsched.instance import Instance as _Instance
from fluxsched.instance import fake_R

__all__ = ["FLUX", "PREFIX", "Instance", "fake_R", "needs_flux"]

PREFIX = Path(os.environ.get("FLUXLITE_FLUX_PREFIX", str(Path.home() / ".cache/fluxlite/flux-0.88.0")))


def flux_binary() -> str | None:
    cand = PREFIX / "bin" / "flux"
    if cand.exists():
        return str(cand)
    return shutil.which("flux")


FLUX = flux_binary()
needs_flux = pytest.mark.skipif(
    FLUX is None, reason="flux-core not installed (bash ../shared/flux/build.sh $FLUXLITE_FLUX_PREFIX)"
)


class Instance(_Instance):
    """The instance of :mod:`fluxsched.instance` on the flux found above; a failed command fails the test."""

    def __init__(self, workdir: Path, **kw) -> None:
        assert FLUX is not None
        super().__init__(FLUX, workdir, **kw)


@pytest.fixture
def make_instance(tmp_path):
    made: list[Instance] = []

    def make(**kw) -> Instance:
        inst = Instance(tmp_path / f"i{len(made)}", **kw)
        made.append(inst)
        return inst

    yield make
    for inst in made:
        inst.stop()
