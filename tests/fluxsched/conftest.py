"""Real Flux instances (``flux start --test-size=N``) whose scheduler is fluxlite.

flux-core is looked for in ``$FLUXLITE_FLUX_PREFIX`` (default
``~/.cache/fluxlite/flux-0.88.0``, where ``.ci/run`` builds it), then on PATH.
Without it the tests that need it skip with one line.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from fluxsched.cli import write_loader

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


def fake_R(nodes: int = 4, cores: int = 16, gpus: int = 0, props: dict[str, str] | None = None) -> dict:
    """An R with ``nodes`` ranks of ``cores`` cores (and ``gpus`` GPUs) on hosts fake0..."""
    children = {"core": f"0-{cores - 1}"}
    if gpus:
        children["gpu"] = f"0-{gpus - 1}" if gpus > 1 else "0"
    ex = {
        "R_lite": [{"rank": f"0-{nodes - 1}", "children": children}],
        "nodelist": [f"fake[0-{nodes - 1}]"],
        "starttime": 0.0,
        "expiration": 0.0,
    }
    if props:
        ex["properties"] = props
    return {"version": 1, "execution": ex}


class Instance:
    """A background ``flux start --test-size=N`` instance; ``flux(...)`` runs a command in it."""

    def __init__(self, workdir: Path, size: int = 4, R: dict | None = None, args: list[str] | None = None,
                 config: str = "", by_config: bool = True) -> None:
        assert FLUX is not None
        self.workdir = workdir
        workdir.mkdir(parents=True, exist_ok=True)
        self.loader = write_loader(workdir / "module", args or [])
        conf = workdir / "conf"
        conf.mkdir(exist_ok=True)
        text = config
        if R is not None:
            (workdir / "R.json").write_text(json.dumps(R))
            text += f'\n[resource]\npath = "{workdir / "R.json"}"\nnoverify = true\n'
        (conf / "test.toml").write_text(text)
        self.env = dict(os.environ)
        self.env["PATH"] = f"{Path(FLUX).parent}:{self.env.get('PATH', '')}"
        self.env.pop("FLUX_URI", None)
        if by_config:
            self.env["FLUX_MODPROBE_PATH_APPEND"] = str(self.loader.parent)
        uri = workdir / "uri"
        self._out = open(workdir / "broker.out", "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [FLUX, "start", f"--test-size={size}", f"--config-path={conf}",
             "bash", "-c", f'echo "$FLUX_URI" > {uri}.tmp && mv {uri}.tmp {uri} && exec sleep 3600'],
            env=self.env, cwd=workdir, start_new_session=True,
            stdout=self._out, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 60
        while not uri.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"flux start failed: {(workdir / 'broker.out').read_text()[-2000:]}")
            time.sleep(0.1)
        self.env["FLUX_URI"] = uri.read_text().strip()

    def flux(self, *args: str, check: bool = True, timeout: float = 60, input: str | None = None
             ) -> subprocess.CompletedProcess:
        r = subprocess.run([FLUX, *args], env=self.env, cwd=self.workdir, capture_output=True, text=True,
                           timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise AssertionError(f"flux {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()}")
        return r

    def submit(self, *args: str) -> str:
        return self.flux("submit", *args).stdout.strip()

    def wait_event(self, jobid: str, event: str, timeout: float = 30) -> str:
        return self.flux("job", "wait-event", "-t", str(timeout), jobid, event, timeout=timeout + 10).stdout

    def R(self, jobid: str) -> dict:
        return json.loads(self.flux("job", "info", jobid, "R").stdout)

    def state(self, jobid: str) -> str:
        return self.flux("jobs", "-no", "{state}", jobid).stdout.strip()

    def dmesg(self) -> str:
        return self.flux("dmesg", check=False).stdout

    def stop(self) -> None:
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._out.close()


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
