"""The harness ``hop_stamps.py`` and ``shrink_stamps.py`` share: the five levels of ``fluxlite bench
hierarchy`` as real instance processes on Unix sockets, each with a ``sitecustomize`` module (the
caller's stamper, written to a temporary directory put first on ``PYTHONPATH``) that records stamps
and writes them to ``$OUT_VAR/<level>.json`` on SIGUSR1; and those stamps collected.  Imported by the
scripts after they have put the source tree to run first on ``sys.path``."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from hierarchy import InstanceClient, read_secret_file
from hierarchy._launch import TreeSpec, owner_credential, start_tree
from hierarchy.bench import LEVELS, fill_levels, nested_nodes

#: what ``stamped_tree`` yields: the clients by level, the leaf's job, and the collector of the stamps
Tree = tuple[dict[str, InstanceClient], int, Callable[[], dict[str, list[tuple[Any, ...]]]]]


@contextlib.contextmanager
def stamped_tree(
    stamper: str, out_var: str, bench_dir: Path, root: Path, jobspecs: dict[str, bytes], *, sync_attach: bool, prefix: str
) -> Iterator[Tree]:
    """The tree running the sources at ``root``, its levels filled (``hierarchy.bench.fill_levels``);
    torn down on leaving.  The collector signals every process and reads each level's stamps (as
    tuples), waiting up to 10 s for the files."""
    with tempfile.TemporaryDirectory(prefix=prefix, dir="/tmp") as tmp:
        run_dir, site = Path(tmp) / "run", Path(tmp) / "site"
        run_dir.mkdir()
        site.mkdir()
        (site / "sitecustomize.py").write_text(stamper)
        os.environ["PYTHONPATH"] = os.pathsep.join([str(site), str(root), os.environ.get("PYTHONPATH", "")])
        os.environ[out_var] = tmp
        spec = TreeSpec(nodes=nested_nodes(bench_dir), transport="unix", policy="first", child_grace=600.0, rpc_timeout=120.0,
                        extra_args=["--sync-attach"] if sync_attach else [])  # fmt: skip
        tree = start_tree(spec, run_dir)
        secret, cred = read_secret_file(run_dir / "secret"), owner_credential(run_dir)
        clients = {r["name"]: InstanceClient(r["address"], secret, timeout=120.0, credential=cred)
                   for r in tree.records}  # fmt: skip

        def collect() -> dict[str, list[tuple[Any, ...]]]:
            for r in tree.records:
                os.kill(r["pid"], signal.SIGUSR1)
            got: dict[str, list[tuple[Any, ...]]] = {}
            deadline = time.monotonic() + 10
            while len(got) < len(LEVELS) and time.monotonic() < deadline:
                for lv in LEVELS:
                    f = Path(tmp) / f"{lv}.json"
                    if lv not in got and f.exists():
                        with contextlib.suppress(ValueError):  # (still being written)
                            got[lv] = [tuple(x) for x in json.loads(f.read_text())]
                time.sleep(0.05)
            return got

        try:
            yield clients, fill_levels(clients, jobspecs), collect
        finally:
            for c in clients.values():
                c.close()
            tree.teardown()
