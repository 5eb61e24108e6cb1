"""Start and stop a whole tree of instances as local processes.

A tree spec (YAML) is either *regular* - a root plus ``depth`` and
``fanout`` and one jobspec per level below the root::

    transport: unix          # unix (default) or tcp (127.0.0.1, a free port each)
    policy: first
    child_grace: 10          # seconds a parent waits for a silent child
    state: false             # true: every instance keeps a state file in the run directory
    limits: limits.yaml      # optional per-user limits for every instance (see hierarchy/_limits.py)
    root:
      graph: cluster.graphml # relative to this file; format from the extension or `format:`
      provider: pool:burst.json
    depth: 3                 # levels, root included
    fanout: 2
    jobspecs: [level1.yaml, level2.yaml]   # what a child at each level asks its parent for

or *explicit* - a ``tree:`` of nodes, each with ``name``, ``jobspec`` (all
but the root), ``graph`` (the root), optional ``policy``/``provider`` and
``children``.

:func:`launch` creates a private run directory (mode 0700) holding the
tree secret (``secret``, mode 0600 - passed to every instance as
``--secret-file``, never on a command line), one socket, log, address file
and optional state file per instance, the site key (``site.key``) from
which user keys derive, the launching user's key (``users/USER.key``: the
instances act for that user towards their parents, and that user owns
them), one audit log per instance (``NAME.audit.jsonl``), and
``instances.json`` (name, depth,
parent, address, pid, log, state).  Instances start level by level, each
level's siblings in parallel, each in its own process group.  In the
foreground the launcher waits and tears everything down (deepest level
first, SIGTERM then SIGKILL) on Ctrl-C or SIGTERM; :func:`stop` does the
same from another shell.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import yaml

from fluxlite.errors import FluxliteError, InputError
from hierarchy._address import check_private_dir, write_secret_file
from hierarchy._identity import (
    Credential,
    current_user,
    read_key_file,
    read_user_key_file,
    write_key_file,
    write_user_key_file,
)
from hierarchy._state import write_atomic

__all__ = ["TreeNode", "TreeSpec", "launch", "load_tree_spec", "start_tree", "status", "stop_tree"]

_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,39}$")


@dataclass
class TreeNode:
    """One instance of the tree."""

    name: str
    depth: int
    parent: str | None
    graph: Path | None = None
    graph_format: str | None = None
    jobspec: Path | None = None
    policy: str | None = None
    provider: str | None = None


@dataclass
class TreeSpec:
    """A parsed tree spec (see the module docstring)."""

    nodes: list[TreeNode]  # parents before children
    transport: str = "unix"
    policy: str = "first"
    child_grace: float = 10.0
    heartbeat: float | None = None
    rpc_timeout: float = 10.0
    state: bool = False
    extra_args: list[str] = field(default_factory=list)
    limits: Path | None = None


def _num(doc: dict[str, Any], key: str, default: float | None, where: str) -> float | None:
    v = doc.get(key, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float) or v <= 0:
        raise InputError(f"{where}: {key}: must be a positive number, got {v!r}")
    return float(v)


def _path(base: Path, v: Any, where: str) -> Path:
    if not isinstance(v, str) or not v:
        raise InputError(f"{where}: must be a file name, got {v!r}")
    p = (base / v).resolve()
    if not p.is_file():
        raise InputError(f"{where}: file {p} does not exist")
    return p


def load_tree_spec(path: str | Path) -> TreeSpec:
    """Parse a tree spec; InputError naming the file and field for anything wrong."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise InputError(f"cannot read tree spec {path}: {exc.strerror or exc}") from exc
    except yaml.YAMLError as exc:
        raise InputError(f"tree spec {path}: not YAML: {str(exc).splitlines()[0]}") from exc
    if not isinstance(doc, dict):
        raise InputError(f"tree spec {path}: must be a mapping")
    base = path.parent
    src = str(path)
    known = {
        "transport",
        "policy",
        "child_grace",
        "heartbeat",
        "rpc_timeout",
        "state",
        "limits",
        "root",
        "depth",
        "fanout",
        "jobspecs",
        "tree",
    }
    for k in doc:
        if k not in known:
            raise InputError(f"{src}: {k}: unknown key (known: {', '.join(sorted(known))})")
    transport = doc.get("transport", "unix")
    if transport not in ("unix", "tcp"):
        raise InputError(f"{src}: transport: must be unix or tcp, got {transport!r}")
    spec = TreeSpec(
        nodes=[],
        transport=transport,
        policy=str(doc.get("policy", "first")),
        child_grace=_num(doc, "child_grace", 10.0, src) or 10.0,
        heartbeat=_num(doc, "heartbeat", None, src),
        rpc_timeout=_num(doc, "rpc_timeout", 10.0, src) or 10.0,
        state=bool(doc.get("state", False)),
        limits=_path(base, doc["limits"], f"{src}: limits") if doc.get("limits") else None,
    )
    if "tree" in doc:
        if "root" in doc or "depth" in doc:
            raise InputError(f"{src}: give either tree: or root:/depth:/fanout:, not both")
        _explicit(spec, doc["tree"], base, src)
    else:
        _regular(spec, doc, base, src)
    names = [n.name for n in spec.nodes]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"{src}: instance names must be unique: {', '.join(sorted(dup))}")
    return spec


def _root(spec: TreeSpec, node: Any, base: Path, where: str, default_name: str) -> TreeNode:
    if not isinstance(node, dict):
        raise InputError(f"{where}: must be a mapping")
    name = str(node.get("name", default_name))
    if not _NAME.match(name):
        raise InputError(f"{where}.name: {name!r} is not a valid instance name")
    if "graph" not in node:
        raise InputError(f"{where}.graph: missing (the root's resource graph file)")
    return TreeNode(
        name,
        0,
        None,
        graph=_path(base, node["graph"], f"{where}.graph"),
        graph_format=node.get("format"),
        policy=node.get("policy"),
        provider=_provider_spec(base, node.get("provider")),
    )


def _provider_spec(base: Path, spec: Any) -> str | None:
    """``KIND:FILE`` with FILE resolved against the tree spec's folder when it is there."""
    if spec is None:
        return None
    kind, sep, arg = str(spec).partition(":")
    if sep and arg and not Path(arg).is_absolute() and (base / arg).exists():
        return f"{kind}:{(base / arg).resolve()}"
    return str(spec)


def _regular(spec: TreeSpec, doc: dict[str, Any], base: Path, src: str) -> None:
    if "root" not in doc:
        raise InputError(f"{src}: root: missing (or give an explicit tree:)")
    root = _root(spec, doc["root"], base, f"{src}: root", "root")
    depth = doc.get("depth", 1)
    fanout = doc.get("fanout", 1)
    for k, v in (("depth", depth), ("fanout", fanout)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise InputError(f"{src}: {k}: must be an integer >= 1, got {v!r}")
    js = doc.get("jobspecs", [])
    if isinstance(js, str):
        js = [js] * (depth - 1)
    if not isinstance(js, list) or len(js) != depth - 1:
        raise InputError(
            f"{src}: jobspecs: need one jobspec per level below the root ({depth - 1}), got {js!r}"
        )
    jobspecs = [_path(base, j, f"{src}: jobspecs[{i}]") for i, j in enumerate(js)]
    spec.nodes.append(root)
    level = [root]
    for d in range(1, depth):
        nxt = []
        for p in level:
            for i in range(fanout):
                n = TreeNode(
                    f"{p.name}.{i}" if d > 1 else f"{p.name}-{i}", d, p.name, jobspec=jobspecs[d - 1]
                )
                nxt.append(n)
        spec.nodes.extend(nxt)
        level = nxt


def _explicit(spec: TreeSpec, tree: Any, base: Path, src: str) -> None:
    root = _root(spec, tree, base, f"{src}: tree", "root")
    spec.nodes.append(root)
    queue: list[tuple[Any, TreeNode, str]] = [(tree, root, f"{src}: tree")]
    while queue:
        doc, parent, where = queue.pop(0)
        kids = doc.get("children", []) or []
        if not isinstance(kids, list):
            raise InputError(f"{where}.children: must be a list")
        for i, kid in enumerate(kids):
            w = f"{where}.children[{i}]"
            if not isinstance(kid, dict):
                raise InputError(f"{w}: must be a mapping")
            name = str(kid.get("name", f"{parent.name}.{i}"))
            if not _NAME.match(name):
                raise InputError(f"{w}.name: {name!r} is not a valid instance name")
            if "jobspec" not in kid:
                raise InputError(f"{w}.jobspec: missing (what this child asks its parent for)")
            node = TreeNode(
                name,
                parent.depth + 1,
                parent.name,
                jobspec=_path(base, kid["jobspec"], f"{w}.jobspec"),
                policy=kid.get("policy"),
                provider=_provider_spec(base, kid.get("provider")),
            )
            spec.nodes.append(node)
            queue.append((kid, node, w))


# ---------------------------------------------------------------------- processes
def _proc_cmdline(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie is not alive
        st = Path(f"/proc/{pid}/stat").read_text()
        return st.rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True


def _ours(pid: int, run_dir: Path) -> bool:
    """The process is alive and was started for this run directory (never signal a reused pid)."""
    if not _alive(pid):
        return False
    cmd = _proc_cmdline(pid)
    return cmd is None or str(run_dir) in cmd


def _tail(path: Path, n: int = 5) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return " | ".join(lines[-n:])


class _Tree:
    """Processes of a launched tree."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = run_dir
        self.records: list[dict[str, Any]] = []
        self.procs: dict[str, subprocess.Popen[bytes]] = {}

    def write(self) -> None:
        doc = {
            "run_dir": str(self.run_dir),
            "secret_file": str(self.run_dir / "secret"),
            "launcher_pid": os.getpid(),
            "instances": self.records,
        }
        write_atomic(self.run_dir / "instances.json", orjson.dumps(doc, option=orjson.OPT_INDENT_2))

    def teardown(self, timeout: float = 5.0) -> None:
        """SIGTERM the deepest level first, then SIGKILL whatever is left."""
        by_depth: dict[int, list[dict[str, Any]]] = {}
        for r in self.records:
            by_depth.setdefault(r["depth"], []).append(r)
        for d in sorted(by_depth, reverse=True):
            for r in by_depth[d]:
                _signal_group(r["pid"], signal.SIGTERM, self.run_dir)
            end = time.monotonic() + timeout / max(1, len(by_depth))
            for r in by_depth[d]:
                _wait_gone(r["pid"], end, self.procs.get(r["name"]))
        for r in self.records:
            if _ours(r["pid"], self.run_dir):
                _signal_group(r["pid"], signal.SIGKILL, self.run_dir)
            p = self.procs.get(r["name"])
            if p is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.wait(timeout=2.0)


def _signal_group(pid: int, sig: int, run_dir: Path) -> None:
    if not _ours(pid, run_dir):
        return
    try:
        os.killpg(pid, sig)  # each instance leads its own process group
    except ProcessLookupError:
        pass
    except PermissionError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _wait_gone(pid: int, end: float, proc: subprocess.Popen[bytes] | None) -> bool:
    while time.monotonic() < end:
        if proc is not None:
            if proc.poll() is not None:
                return True
        elif not _alive(pid):
            return True
        time.sleep(0.02)
    return False


def ensure_identity(run_dir: Path, owner: str | None = None) -> tuple[Path, Path, str]:
    """The run directory's site key and the owner's user key (created if missing): (site key, user key, owner)."""
    owner = owner or current_user()
    site_key = run_dir / "site.key"
    if not site_key.exists():
        write_key_file(site_key)
    users = run_dir / "users"
    users.mkdir(mode=0o700, exist_ok=True)
    owner_key = users / f"{owner}.key"
    if not owner_key.exists():
        write_user_key_file(owner_key, read_key_file(site_key), owner)
    return site_key, owner_key, owner


def owner_credential(run_dir: Path) -> Credential | None:
    """The current user's credential in a run directory (None if it holds no key for them)."""
    f = Path(run_dir) / "users" / f"{current_user()}.key"
    return read_user_key_file(f) if f.exists() else None


def start_tree(
    spec: TreeSpec,
    run_dir: Path,
    *,
    python: str = sys.executable,
    startup_timeout: float = 60.0,
    extra_args: list[str] | None = None,
) -> _Tree:
    """Start every instance of ``spec`` (level by level); returns the running tree.

    On any failure the instances started so far are torn down and the
    error (with the failing instance's last log lines) is raised.
    """
    run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    check_private_dir(run_dir)
    secret_file = run_dir / "secret"
    if not secret_file.exists():
        write_secret_file(secret_file)
    site_key, owner_key, owner = ensure_identity(run_dir)
    tree = _Tree(run_dir)
    addr: dict[str, str] = {}
    levels: dict[int, list[TreeNode]] = {}
    for n in spec.nodes:
        levels.setdefault(n.depth, []).append(n)
    try:
        for d in sorted(levels):
            starting: list[tuple[TreeNode, subprocess.Popen[bytes], Path, Path]] = []
            for n in levels[d]:
                ready = run_dir / f"{n.name}.addr"
                log = run_dir / f"{n.name}.log"
                if ready.exists():
                    ready.unlink()
                listen = f"unix:{run_dir / (n.name + '.sock')}" if spec.transport == "unix" else "127.0.0.1:0"
                cmd = [
                    python,
                    "-m",
                    "fluxlite.cli.main",
                    "instance",
                    "serve",
                    "--name",
                    n.name,
                    "--listen",
                    listen,
                    "--secret-file",
                    str(secret_file),
                    "--ready-file",
                    str(ready),
                    "--policy",
                    n.policy or spec.policy,
                    "--child-grace",
                    str(spec.child_grace),
                    "--rpc-timeout",
                    str(spec.rpc_timeout),
                ]
                if n.parent is None:
                    assert n.graph is not None
                    cmd += ["--graph", str(n.graph)]
                    if n.graph_format:
                        cmd += ["--format", n.graph_format]
                else:
                    assert n.jobspec is not None
                    cmd += ["--from-parent", addr[n.parent], "--jobspec", str(n.jobspec)]
                if n.provider:
                    cmd += ["--provider", n.provider]
                if spec.heartbeat:
                    cmd += ["--heartbeat", str(spec.heartbeat)]
                state = run_dir / f"{n.name}.state" if spec.state else None
                if state is not None:
                    cmd += ["--state", str(state)]
                cmd += ["--site-key", str(site_key), "--user-key", str(owner_key), "--owner", owner]
                cmd += ["--audit-log", str(run_dir / f"{n.name}.audit.jsonl")]
                if spec.limits is not None:
                    cmd += ["--limits", str(spec.limits)]
                cmd += list(extra_args or []) + spec.extra_args
                with open(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600), "ab") as lf:
                    os.fchmod(lf.fileno(), 0o600)
                    proc = subprocess.Popen(
                        cmd,
                        stdin=subprocess.DEVNULL,
                        stdout=lf,
                        stderr=subprocess.STDOUT,
                        process_group=0,  # own process group (teardown signals it), same session (so thread priorities compare across instances)
                    )
                tree.procs[n.name] = proc
                tree.records.append(
                    {
                        "name": n.name,
                        "depth": n.depth,
                        "parent": n.parent,
                        "address": "",
                        "pid": proc.pid,
                        "log": str(log),
                        "state": str(state) if state else None,
                        "argv": cmd,
                    }
                )
                starting.append((n, proc, ready, log))
            tree.write()
            end = time.monotonic() + startup_timeout
            for n, proc, ready, log in starting:
                while not ready.exists():
                    if proc.poll() is not None:
                        raise InputError(
                            f"instance {n.name} exited with status {proc.returncode} while starting: {_tail(log)}"
                        )
                    if time.monotonic() > end:
                        raise InputError(
                            f"instance {n.name} did not start within {startup_timeout:.0f}s: {_tail(log)}"
                        )
                    time.sleep(0.02)
                addr[n.name] = ready.read_text().strip()
                for r in tree.records:
                    if r["name"] == n.name:
                        r["address"] = addr[n.name]
            tree.write()
    except BaseException:
        tree.teardown()
        raise
    return tree


def stop_tree(run_dir: Path, timeout: float = 5.0) -> int:
    """Stop the tree of ``run_dir`` (its launcher first, then any instance left); returns how many were stopped."""
    try:
        doc = orjson.loads((run_dir / "instances.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InputError(f"{run_dir}: no readable instances.json: {exc}") from exc
    lp = int(doc.get("launcher_pid", 0))
    if lp and lp != os.getpid() and _alive(lp):
        cmd = _proc_cmdline(lp) or ""
        if "hierarchy" in cmd and "launch" in cmd:
            os.kill(lp, signal.SIGTERM)
            _wait_gone(lp, time.monotonic() + timeout + 5.0, None)
    tree = _Tree(run_dir)
    tree.records = [r for r in doc.get("instances", []) if _ours(int(r["pid"]), run_dir)]
    n = len(tree.records)
    tree.teardown(timeout)
    return n


def launch(
    spec_path: str | Path, run_dir: str | Path | None = None, *, detach: bool = False, out: Any = None
) -> int:
    """``fluxlite hierarchy launch``: start the tree, print the addresses, wait (unless ``detach``)."""
    out = out or sys.stdout
    spec = load_tree_spec(spec_path)
    rd = Path(run_dir).resolve() if run_dir else Path(tempfile.mkdtemp(prefix="fluxlite-run-"))
    stopping = False

    def on_signal(signum: int, frame: Any) -> None:
        nonlocal stopping
        stopping = True

    # in the foreground, Ctrl-C from the first moment on stops the tree (once it is up) instead of
    # killing the launcher half way
    old = {} if detach else {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        tree = start_tree(spec, rd)
        out.write(f"run directory {rd}\n")
        for r in tree.records:
            out.write(f"{r['name']:<16} depth {r['depth']}  {r['address']}  pid {r['pid']}\n")
        out.flush()
        if detach:
            out.write(f"stop with: fluxlite hierarchy stop {rd}\n")
            return 0
        exited: set[str] = set()
        while not stopping:
            for name, p in tree.procs.items():
                if name not in exited and p.poll() is not None:
                    exited.add(name)
                    out.write(f"instance {name} exited with status {p.returncode}\n")
                    out.flush()
            if len(exited) == len(tree.procs):
                return 1
            time.sleep(0.2)
        out.write("stopping the tree\n")
        out.flush()
        tree.teardown()
        return 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def status(run_dir: str | Path, out: Any = None) -> int:
    """``fluxlite hierarchy status``: health of every instance of the run directory."""
    from hierarchy._address import read_secret_file
    from hierarchy._client import InstanceClient

    out = out or sys.stdout
    rd = Path(run_dir)
    cred = owner_credential(rd)
    try:
        doc = orjson.loads((rd / "instances.json").read_bytes())
    except (OSError, orjson.JSONDecodeError) as exc:
        raise InputError(f"{rd}: no readable instances.json: {exc}") from exc
    secret = read_secret_file(rd / "secret")
    bad = 0
    for r in doc.get("instances", []):
        try:
            with InstanceClient(r["address"], secret, timeout=2.0, credential=cred) as c:
                s = c.stat()
            out.write(f"{r['name']:<16} {r['address']}  up  {s['vertices']} vertices, {s['jobs']} jobs\n")
        except FluxliteError as exc:
            bad += 1
            out.write(f"{r['name']:<16} {r['address'] or '?'}  DOWN  {exc}\n")
    return 1 if bad else 0
