"""Helpers for the hierarchy tests: small graphs and jobspecs, trees of real instance processes."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from fluxlite.readers import graph_to_jgf
from fluxlite.readers.generate import generate_graph
from hierarchy import InstanceClient, read_secret_file
from hierarchy._launch import TreeNode, TreeSpec, _Tree, owner_credential, start_tree

CORES = 4  # per socket; 2 sockets per node


def nodes_jobspec(n: int, sockets: int = 2, cores: int = CORES) -> str:
    """node[n] -> slot -> socket[sockets] -> core[cores]."""
    return (
        f"version: 1\nresources:\n  - type: node\n    count: {n}\n    with:\n      - type: slot\n"
        "        count: 1\n        label: default\n        with:\n          - type: socket\n"
        f"            count: {sockets}\n            with:\n              - type: core\n"
        f"                count: {cores}\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    )


def socket_jobspec(cores: int = CORES) -> str:
    """slot -> socket[1] -> core[cores]."""
    return (
        "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
        f"      - type: socket\n        count: 1\n        with:\n          - type: core\n            count: {cores}\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    )


def saved_records(state_path: str | Path, table: str = "requests") -> list[dict[str, Any]]:
    """The records of ``table`` in a state file as written, each record's resources (``jgf_ref``)
    read back from its payload file as ``jgf`` (bytes), through the reader restore uses."""
    import orjson

    from hierarchy._state import PayloadStore

    doc = orjson.loads(Path(state_path).read_bytes())
    store = PayloadStore(state_path)
    return [store.record(r, state_path=state_path) for r in doc[table]]


@contextmanager
def short_tmpdir() -> Iterator[Path]:
    """A private directory with a short path (Unix socket paths are limited to 107 bytes)."""
    d = Path(tempfile.mkdtemp(prefix="flh-", dir="/tmp"))
    try:
        yield d
    finally:
        shutil.rmtree(d, ignore_errors=True)


def write_graph(path: Path, nodes: int) -> Path:
    """cluster0 -> node[nodes] -> socket[2] -> core[CORES], as JGF."""
    path.write_bytes(graph_to_jgf(generate_graph(nodes=nodes, sockets=2, cores=CORES)))
    return path


def write_pool(path: Path, base_nodes: int, pool_nodes: int) -> Path:
    """The nodes after the first ``base_nodes`` of a generated cluster: distinct paths, ranks and uniq ids."""
    g = generate_graph(nodes=base_nodes + pool_nodes, sockets=2, cores=CORES)
    from fluxlite.api import Engine

    eng = Engine(g)
    for i in range(base_nodes):
        eng.remove_subgraph(path=f"/cluster0/node{i}")
    path.write_bytes(graph_to_jgf(eng.graph))
    return path


class Tree:
    """A tree of instance processes started by the launcher, with handy clients."""

    def __init__(self, tree: _Tree, run_dir: Path) -> None:
        self._tree = tree
        self.run_dir = run_dir
        self.secret = read_secret_file(run_dir / "secret")
        self._clients: dict[str, InstanceClient] = {}

    def record(self, name: str) -> dict[str, Any]:
        return next(r for r in self._tree.records if r["name"] == name)

    def address(self, name: str) -> str:
        return self.record(name)["address"]

    def client(self, name: str, timeout: float = 10.0) -> InstanceClient:
        c = self._clients.get(name)
        if c is None:
            c = self._clients[name] = InstanceClient(
                self.address(name), self.secret, timeout=timeout, credential=owner_credential(self.run_dir)
            )
        return c

    def info(self, name: str) -> dict[str, Any]:
        return self.client(name).info(recount=True)

    def log(self, name: str) -> str:
        return Path(self.record(name)["log"]).read_text(errors="replace")

    def kill(self, name: str) -> None:
        """SIGKILL the instance's process group and reap it."""
        r = self.record(name)
        with_suppress(lambda: os.killpg(r["pid"], signal.SIGKILL))
        p = self._tree.procs.get(name)
        if p is not None:
            p.wait(timeout=10)
        c = self._clients.pop(name, None)
        if c is not None:
            c.close()

    def restart(self, name: str, timeout: float = 30.0, *, drop: tuple[str, ...] = ()) -> None:
        """Start the instance again with the same command line (same socket, same state file).

        ``drop`` names options (with their value) to leave out, e.g. ``--from-parent``: a child
        restarted from its state file finds its parent there.
        """
        r = self.record(name)
        argv = list(r["argv"])
        for opt in drop:
            i = argv.index(opt)
            del argv[i : i + 2]
        ready = Path(next(argv[i + 1] for i, a in enumerate(argv) if a == "--ready-file"))
        if ready.exists():
            ready.unlink()
        with open(r["log"], "ab") as lf:
            p = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=lf,
                stderr=subprocess.STDOUT,
                process_group=0,
            )
        self._tree.procs[name] = p
        r["pid"] = p.pid
        end = time.monotonic() + timeout
        while not ready.exists():
            assert p.poll() is None, f"{name} exited: {self.log(name)[-2000:]}"
            assert time.monotonic() < end, f"{name} did not restart"
            time.sleep(0.02)
        r["address"] = ready.read_text().strip()

    def close(self) -> None:
        for c in self._clients.values():
            c.close()
        self._clients.clear()
        self._tree.teardown(timeout=3.0)


def with_suppress(fn: Any) -> None:
    with suppress(ProcessLookupError, PermissionError):
        fn()


def start(
    run_dir: Path,
    nodes: list[TreeNode],
    *,
    transport: str = "unix",
    child_grace: float = 10.0,
    heartbeat: float | None = None,
    state: bool = False,
    rpc_timeout: float = 5.0,
    extra_args: list[str] | None = None,
    limits: Path | None = None,
) -> Tree:
    """Start ``nodes`` (parents first) as real processes (``extra_args`` go to every ``instance serve``)."""
    spec = TreeSpec(
        nodes=nodes,
        transport=transport,
        child_grace=child_grace,
        heartbeat=heartbeat,
        rpc_timeout=rpc_timeout,
        state=state,
        extra_args=list(extra_args or []),
        limits=limits,
    )
    return Tree(start_tree(spec, run_dir, python=sys.executable, startup_timeout=60.0), run_dir)


def chain(run_dir: Path, sizes: list[int]) -> list[TreeNode]:
    """A chain root -> mid -> leaf...: the root has ``sizes[0]`` nodes, each child asks for ``sizes[i]`` nodes."""
    write_graph(run_dir / "g.json", sizes[0])
    names = ["root", "mid", "leaf"][: len(sizes)] if len(sizes) <= 3 else [f"L{i}" for i in range(len(sizes))]
    out = [TreeNode(names[0], 0, None, graph=run_dir / "g.json")]
    for i, n in enumerate(sizes[1:], start=1):
        js = run_dir / f"n{n}.yaml"
        js.write_text(nodes_jobspec(n))
        out.append(TreeNode(names[i], i, names[i - 1], jobspec=js))
    return out


def wait_for(cond: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
