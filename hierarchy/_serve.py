"""Run one instance as a process: build it, serve it, keep it alive, stop it cleanly.

:func:`serve` is what ``fluxlite instance serve`` runs:

1. read the tree secret (a root creates the secret file if it is missing);
2. build the instance: from ``--state`` if that file exists (restart), else
   from a graph file (a root), else by MatchAllocate at ``--from-parent``
   (a child: its whole graph is the parent's allocation for it);
3. bind the address (Unix socket by default; TCP only on loopback unless
   TLS is configured), write ``--ready-file`` and print the address;
4. run two background threads: *maintenance* (frees the jobs of children
   silent for longer than ``--child-grace``, retries pending hand-backs)
   and, for a child, *heartbeat* (every ``--heartbeat`` seconds, default a
   third of the parent's grace period);
5. on SIGTERM/SIGINT stop serving; a child without ``--state`` releases its
   lease at the parent (a child with ``--state`` keeps it, to come back).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fluxlite.api import Engine
from fluxlite.errors import FluxliteError, InputError
from hierarchy._address import TlsConfig, parse_address, read_secret_file, write_secret_file
from hierarchy._client import InstanceClient
from hierarchy._identity import (
    AuditLog,
    Credential,
    Verifier,
    current_user,
    read_key_file,
    read_user_key_file,
)
from hierarchy._limits import Limits
from hierarchy._logging import SafeFormatter, escape
from hierarchy._service import InstanceServicer, build_server
from hierarchy._state import read_state, write_atomic
from hierarchy.base import IDLE_WAIT_S
from hierarchy.instance import Instance, settle_memory

__all__ = ["SWITCH_INTERVAL_S", "ServeOptions", "default_listen", "serve"]

#: an instance process's interpreter switch interval (CPython's default is 5 ms): how long gRPC's
#: threads can wait for the lock while a deferred attach runs (see docs/benchmarks.md, fifteenth
#: session, for its measured effect)
SWITCH_INTERVAL_S = 0.0005


def default_listen(name: str) -> str:
    """``unix:`` socket in a private per-user directory under the temp dir."""
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or f"/tmp/fluxlite-{os.getuid()}")
    base.mkdir(mode=0o700, parents=True, exist_ok=True)
    return f"unix:{base / f'{name}-{os.getpid()}.sock'}"


def _graph_format(path: Path, given: str | None) -> str:
    if given:
        return given
    return "grug" if path.suffix.lower() in (".graphml", ".xml", ".grug") else "jgf"


@dataclass
class ServeOptions:
    """Everything ``fluxlite instance serve`` takes (see its ``--help``)."""

    secret_file: Path | None = None
    listen: str | None = None
    graph: Path | None = None
    graph_format: str | None = None
    from_parent: str | None = None
    jobspec: Path | None = None
    name: str | None = None
    policy: str = "first"
    prune_filters: str = "ALL:core,ALL:node"
    state: Path | None = None
    provider: str | None = None
    tls: TlsConfig = field(default_factory=TlsConfig)
    child_grace: float = 10.0
    heartbeat: float | None = None
    rpc_timeout: float = 10.0
    request_table_size: int = 256
    defer_attach: bool = True
    #: seconds a child's deferred attach waits for the grow below to finish (a call starts it at once)
    idle_wait: float = IDLE_WAIT_S
    #: what MatchGrow asks the parent for: "columns" (the columns wire form when the parent speaks
    #: it, else JGF) or "jgf" (always JGF, as an older instance does)
    wire: str = "columns"
    ready_file: Path | None = None
    log_level: str = "INFO"
    #: verify every caller's user token with this site key (None: single-user mode)
    site_key: Path | None = None
    #: the user this instance acts for towards its parent (a user key file)
    user_key: Path | None = None
    #: the instance owner (admin); default: the user of ``user_key``, else the process's user
    owner: str | None = None
    limits: Path | None = None
    audit_log: Path | None = None
    audit_max_bytes: int = 10 * 1024 * 1024
    audit_backups: int = 5
    #: queue policy of the batch queue service (None: no queue)
    queue: str | None = None
    queue_depth: int | None = None
    #: DFS fairness configuration of the queue's dynamic requests (Maui syntax)
    queue_fairness: Path | None = None
    #: largest request message accepted (bigger JGF goes through ShrinkStream); None: the default
    max_receive: int | None = None


def _logger(name: str, level: str) -> logging.Logger:
    root = logging.getLogger("fluxlite")
    if not root.handlers:
        h = logging.StreamHandler(sys.stderr)
        # caller-supplied strings end up in messages: one record is one escaped line
        h.setFormatter(
            SafeFormatter(
                f"%(asctime)s {escape(name, 64).replace('%', '%%')}[%(process)d] %(levelname)s %(message)s"
            )
        )
        root.addHandler(h)
    root.setLevel(getattr(logging, level.upper(), logging.INFO))
    root.propagate = False
    return logging.getLogger("fluxlite.instance")


def provider_upkeep(inst: Instance, stop: threading.Event, log: logging.Logger) -> None:
    """Keep a cloud provider in step with the instance, in the background (the instance serves meanwhile).

    First a reconcile: terminate the provider's instances that no attached
    node stands for (a crash between create and attach), retried with
    backoff (1 s doubling to 60 s, one log line each) while the cloud is
    unreachable.  Then every ``watch_interval`` seconds: the provider's
    ``watch`` (granted instances that died: :meth:`Instance.nodes_down`) and
    a reconcile again (orphans, unsettled requests).
    """
    prov = inst.provider
    name = getattr(prov, "name", "provider")
    interval = float(getattr(prov, "watch_interval", 30.0))
    watch = getattr(prov, "watch", None)
    reconciled = False
    delay = 1.0

    def attached(path: str) -> bool:
        return inst.engine.graph.vertex_by_path(path) is not None

    while not stop.is_set():
        try:
            if reconciled and watch is not None:
                lost = watch()
                if lost:
                    inst.nodes_down(lost)
            gone = prov.reconcile(attached)  # type: ignore[union-attr]
            if gone:
                log.warning("provider %s: terminated %d orphans: %s", name, len(gone), ", ".join(gone))
            if not reconciled:
                log.info("provider %s: reconciled with the cloud", name)
            reconciled, delay = True, interval
        except FluxliteError as exc:
            log.warning("provider %s: %s (retrying in %.0fs)", name, " ".join(str(exc).split())[:500], delay)
            delay = min(delay * 2, 60.0) if not reconciled else interval
        except Exception:  # keep the loop alive, say what happened
            log.exception("provider %s: upkeep failed", name)
            delay = interval
        stop.wait(delay)


def _build(
    opts: ServeOptions,
    secret: bytes,
    address: str,
    log: logging.Logger,
    credential: Credential | None = None,
    owner: str = "",
) -> Instance:
    parent_addr = opts.from_parent
    restoring = opts.state is not None and opts.state.exists()
    if restoring and not parent_addr:
        assert opts.state is not None
        saved = read_state(opts.state).get("parent")  # a restarted child finds its parent in its state
        parent_addr = saved["address"] if saved else None
    parent = None
    if parent_addr:
        # waits for a restarting parent (up to each call's timeout) instead of failing at once
        parent = InstanceClient(
            parent_addr,
            secret,
            timeout=opts.rpc_timeout,
            tls=opts.tls,
            wait_for_ready=True,
            credential=credential,
            accept_columns=opts.wire == "columns",
            wire_columns=False,  # (--wire jgf: the JGF text on the wire, as asked)
        )
    provider = None
    if opts.provider:
        from providers import create_provider

        pstate = Path(f"{opts.state}.provider") if opts.state is not None else None
        provider = create_provider(opts.provider, state_path=pstate)
    common: dict[str, Any] = {
        "state_path": opts.state,
        "child_grace": opts.child_grace,
        "rpc_timeout": opts.rpc_timeout,
        "request_table_size": opts.request_table_size,
        "defer_attach": opts.defer_attach,
        "idle_wait": opts.idle_wait,
        "address": address,
        "log": log,
        "owner": owner,
        "limits": Limits.from_file(opts.limits) if opts.limits is not None else None,
    }
    if restoring:
        assert opts.state is not None
        kw = dict(common)
        kw.pop("state_path")
        if opts.name:
            kw["name"] = opts.name
        return Instance.restore(opts.state, parent=parent, provider=provider, **kw)
    name = opts.name or ("root" if parent is None else f"child-{os.getpid()}")
    if parent is not None:
        if opts.jobspec is None:
            raise InputError("--from-parent needs --jobspec FILE (what to ask the parent for)")
        try:
            js = opts.jobspec.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read jobspec {opts.jobspec}: {exc.strerror or exc}") from exc
        depth = int(parent.health(timeout=opts.rpc_timeout)["depth"]) + 1
        return Instance.from_parent(
            parent,
            js,
            name=name,
            depth=depth,
            policy=opts.policy,
            prune_filters=opts.prune_filters,
            timeout=opts.rpc_timeout,
            provider=provider,
            **common,
        )
    if opts.graph is None:
        raise InputError(
            "give --jgf FILE / --graph FILE (a root), --from-parent ADDR (a child), or an existing --state"
        )
    if not opts.graph.is_file():
        raise InputError(f"graph file {opts.graph} does not exist")
    eng = Engine.from_file(
        opts.graph,
        format=_graph_format(opts.graph, opts.graph_format),
        policy=opts.policy,
        prune_filters=opts.prune_filters,
    )
    return Instance(eng, name=name, depth=0, provider=provider, **common)


def serve(opts: ServeOptions) -> int:
    """Run an instance until SIGTERM/SIGINT (see the module docstring); returns the exit status."""
    log = _logger(opts.name or "instance", opts.log_level)
    os.umask(0o077)  # socket, state and address files: this user only
    listen = parse_address(opts.listen or default_listen(opts.name or "instance"))
    from hierarchy._address import check_listen

    check_listen(listen, opts.tls)
    if listen.kind == "unix":
        from hierarchy._address import prepare_unix_listen

        prepare_unix_listen(listen.path)  # before a child takes a lease at its parent
    secret_file = opts.secret_file
    if secret_file is None:
        if opts.from_parent or (opts.state is not None and opts.state.exists()):
            raise InputError("a child (or a restarted instance) needs --secret-file: the secret of its tree")
        secret_file = Path(default_listen(opts.name or "root")[len("unix:") :]).with_suffix(".secret")
    if not secret_file.exists() and not opts.from_parent:
        write_secret_file(secret_file)
        log.info("created a new tree secret in %s", secret_file)
        print(f"tree secret in {secret_file}", flush=True)
    secret = read_secret_file(secret_file)
    credential = read_user_key_file(opts.user_key) if opts.user_key is not None else None
    owner = opts.owner or (credential.user if credential is not None else current_user())
    site_key = read_key_file(opts.site_key) if opts.site_key is not None else None
    # a log that already has lines belongs to an earlier run (a relaunch into the same run directory)
    earlier = opts.audit_log is not None and opts.audit_log.is_file() and opts.audit_log.stat().st_size > 0
    audit = (
        AuditLog(opts.audit_log, max_bytes=opts.audit_max_bytes, backups=opts.audit_backups)
        if opts.audit_log is not None
        else None
    )
    inst = _build(opts, secret, listen.target, log, credential, owner)
    if audit is not None and earlier:
        audit.write(
            user=owner, instance=inst.name, op="Start", job=0, outcome="restart",
            detail=f"pid {os.getpid()}: a new run of this instance starts here; the lines above are an earlier run's",
        )  # fmt: skip
    verifier = Verifier(site_key, inst.name, log=log) if site_key is not None else None
    if verifier is None:
        log.warning(
            "no --site-key: single-user mode, every holder of the tree secret acts as the instance owner"
        )
    settle_memory()
    # a thread that wants the interpreter lock waits at most this long for a running one: a
    # deferred attach then holds up gRPC's threads (answers, the next request) for 0.5 ms, not 5
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    servicer = InstanceServicer(inst, verifier=verifier, audit=audit)
    extra = {"max_receive": opts.max_receive} if opts.max_receive else {}
    server, bound = build_server(servicer, listen, secret, tls=opts.tls, **extra)
    queue = None
    if opts.queue:
        from hierarchy._queue_service import attach_queue

        dfs = None
        if opts.queue_fairness is not None:
            from fluxlite.queue.fairness import load_dfs_config

            dfs = load_dfs_config(opts.queue_fairness)
        queue = attach_queue(
            server, inst, opts.queue, opts.queue_depth, dfs=dfs, verifier=verifier, audit=audit
        )
    inst.address = bound.target
    server.start()
    if queue is not None:
        queue.start()
    inst.save()
    if opts.ready_file is not None:
        write_atomic(opts.ready_file, (bound.target + "\n").encode())
    print(
        f"instance {inst.name} listening on {bound.target} (pid {os.getpid()}, depth {inst.depth})",
        flush=True,
    )
    log.info("serving %d vertices on %s", len(inst.engine.graph), bound.target)

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)

    def maintenance() -> None:
        period = max(0.05, min(inst.child_grace / 4, 1.0))
        while not stop.wait(period):
            try:
                inst.tick()
            except Exception:  # keep the loop alive, say what happened
                log.exception("maintenance failed")

    def heartbeats() -> None:
        while True:
            if opts.heartbeat:
                period = opts.heartbeat
            else:
                period = inst.parent_grace / 3 if inst.parent_grace > 0 else 1.0
            inst.heartbeat_parent()
            if stop.wait(max(0.05, min(period, 5.0))):
                return

    threads = [threading.Thread(target=maintenance, name="maintenance", daemon=True)]
    if inst.provider is not None and hasattr(inst.provider, "reconcile"):
        threads.append(
            threading.Thread(target=provider_upkeep, args=(inst, stop, log), name="provider", daemon=True)
        )
    if inst.parent is not None:
        threads.append(threading.Thread(target=heartbeats, name="heartbeat", daemon=True))
    for t in threads:
        t.start()
    while not stop.wait(0.5):
        pass
    log.info("stopping")
    if queue is not None:
        queue.stop()
    server.stop(grace=1.0).wait(2.0)
    if inst.parent is not None and opts.state is None and not inst.orphaned:
        try:
            inst.parent.release(inst.parent_jobid, lease_token=inst.parent_token, timeout=2.0)
            log.info("released the lease (job %d) at the parent", inst.parent_jobid)
        except FluxliteError as exc:
            log.warning("could not release the lease at the parent: %s", exc)
    if inst.provider is not None:
        inst.provider.close()
    inst.save()
    if audit is not None:
        audit.close()  # the last fsync
    if bound.kind == "unix":
        with contextlib.suppress(OSError):
            os.unlink(bound.path)
    return 0
