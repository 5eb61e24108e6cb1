"""A background Flux test instance (``flux start --test-size=N``) with fluxlite as its scheduler.

Used by the tests (``tests/fluxsched``) and the benchmark (``fluxlite-flux bench``).  The
instance gets an optional fake R (``[resource] path``, ``noverify``) and extra broker
config; fluxlite is loaded by config (``FLUX_MODPROBE_PATH_APPEND``) unless ``by_config``
is False (then the instance starts with flux-core's default scheduler).  No flux import:
everything goes through the ``flux`` command.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from fluxlite.errors import FluxliteError
from fluxsched.cli import write_loader

__all__ = ["Instance", "InstanceError", "fake_R"]


class InstanceError(FluxliteError):
    """A flux command in the instance failed, or the instance did not start."""


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

    def __init__(self, flux: str, workdir: Path, size: int = 4, R: dict | None = None,
                 args: list[str] | None = None, config: str = "", by_config: bool = True) -> None:
        self.flux_bin = flux
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
        self.env["PATH"] = f"{Path(flux).parent}:{self.env.get('PATH', '')}"
        self.env.pop("FLUX_URI", None)
        # `flux start` makes its rundir (a "start" socket) under TMPDIR and leaves it when its process
        # group is signalled: give it a short private one (a socket path has ~100 bytes) removed in stop()
        base = tempfile.gettempdir()
        self._tmp = tempfile.mkdtemp(prefix="fluxlite-start-", dir=base if len(base) <= 40 else "/tmp")
        self.env["TMPDIR"] = self._tmp
        if by_config:
            self.env["FLUX_MODPROBE_PATH_APPEND"] = str(self.loader.parent)
        uri = workdir / "uri"
        self._out = open(workdir / "broker.out", "w")  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(
            [flux, "start", f"--test-size={size}", f"--config-path={conf}",
             "bash", "-c", f'echo "$FLUX_URI" > {uri}.tmp && mv {uri}.tmp {uri} && exec sleep 86400'],
            env=self.env, cwd=workdir, start_new_session=True,
            stdout=self._out, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while not uri.exists():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise InstanceError(f"flux start failed: {(workdir / 'broker.out').read_text()[-2000:]}")
            time.sleep(0.1)
        self.env["FLUX_URI"] = uri.read_text().strip()

    def flux(self, *args: str, check: bool = True, timeout: float = 60, input: str | None = None
             ) -> subprocess.CompletedProcess:
        r = subprocess.run([self.flux_bin, *args], env=self.env, cwd=self.workdir, capture_output=True, text=True,
                           timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise InstanceError(f"flux {' '.join(args)} failed ({r.returncode}): {r.stderr.strip()[:2000]}")
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
        """End the instance (SIGTERM to its process group, then SIGKILL) and wait for it."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        self._out.close()
        shutil.rmtree(self._tmp, ignore_errors=True)
