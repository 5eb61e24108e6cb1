"""Command-line entry points of the hierarchy: ``fluxlite instance|hierarchy|grow|shrink``.

``fluxlite`` dispatches ``instance`` to :func:`main_instance`, ``hierarchy``
to :func:`main_hierarchy`, ``grow`` to :func:`main_grow` and ``shrink`` to
:func:`main_shrink`.  Each prints a one-line error (never a traceback) for
bad input or a failed call and returns a non-zero status.

An instance is named by its address (``unix:/path.sock``, ``127.0.0.1:PORT``)
or, with ``--run-dir``, by its name in that run directory.  The tree secret
comes from ``--secret-file``, else from the run directory (``--run-dir`` or
``$FLUXLITE_RUN_DIR``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from fluxlite.cli._help import plain
from fluxlite.errors import BusyError, FluxliteError, InputError, UnsatisfiableError
from hierarchy._address import TlsConfig, read_secret_file
from hierarchy._client import InstanceClient, new_request_id
from hierarchy._errors import InstanceUnavailableError
from hierarchy._identity import Credential, current_user, read_user_key_file
from hierarchy.base import IDLE_WAIT_S, LevelTiming

__all__ = ["main_grow", "main_hierarchy", "main_instance", "main_shrink"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def _run(prog: str, fn: Callable[[], int]) -> int:
    try:
        return fn()
    except BusyError as exc:
        sys.stderr.write(f"{prog}: busy: {exc}\n")
    except UnsatisfiableError as exc:
        sys.stderr.write(f"{prog}: unsatisfiable: {exc}\n")
    except FluxliteError as exc:
        sys.stderr.write(f"{prog}: {exc}\n")
    except OSError as exc:
        sys.stderr.write(f"{prog}: {exc.filename or ''}: {exc.strerror or exc}\n")
    except KeyboardInterrupt:
        return 130
    return 1


# ---------------------------------------------------------------------- client options
def _client_options(p: argparse.ArgumentParser, need_instance: bool = True) -> None:
    g = p.add_argument_group("connection")
    g.add_argument(
        "--instance",
        "-i",
        required=need_instance,
        metavar="ADDR",
        help="instance address (unix:/path.sock, 127.0.0.1:PORT) or, with --run-dir, its name",
    )
    g.add_argument(
        "--run-dir",
        type=Path,
        default=os.environ.get("FLUXLITE_RUN_DIR") or None,
        help="run directory of 'fluxlite hierarchy launch' (secret and instance names; "
        "default $FLUXLITE_RUN_DIR)",
    )
    g.add_argument("--secret-file", type=Path, help="file holding the tree secret (mode 0600)")
    g.add_argument(
        "--user-key",
        type=Path,
        default=os.environ.get("FLUXLITE_USER_KEY") or None,
        help="your user key file (default $FLUXLITE_USER_KEY, else RUN_DIR/users/$USER.key if present)",
    )
    g.add_argument("--timeout", type=float, default=30.0, help="seconds per call (default 30)")
    g.add_argument(
        "--retries",
        type=int,
        default=3,
        help="retries (same request id) when an instance is unreachable (default 3)",
    )
    _tls_options(p)


def _tls_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("TLS (for non-loopback TCP)")
    g.add_argument("--tls-cert", type=Path, help="PEM certificate of this side")
    g.add_argument("--tls-key", type=Path, help="PEM private key of this side")
    g.add_argument("--tls-ca", type=Path, help="PEM CA certificate that signs the peers")


def _tls(a: argparse.Namespace) -> TlsConfig:
    return TlsConfig(a.tls_cert, a.tls_key, a.tls_ca)


def _credential(a: argparse.Namespace) -> Credential | None:
    """The caller's credential: --user-key, else the run directory's key of the current user, else none."""
    if a.user_key is not None:
        return read_user_key_file(a.user_key)
    if a.run_dir is not None:
        f = Path(a.run_dir) / "users" / f"{current_user()}.key"
        if f.exists():
            return read_user_key_file(f)
    return None


def _client(a: argparse.Namespace) -> InstanceClient:
    addr, secret = _resolve(a)
    return InstanceClient(addr, secret, timeout=a.timeout, tls=_tls(a), credential=_credential(a))


def _resolve(a: argparse.Namespace) -> tuple[str, bytes]:
    """(address, secret) from --instance, --run-dir and --secret-file."""
    addr = a.instance
    rd: Path | None = a.run_dir
    if rd is not None and not (addr.startswith("unix:") or ":" in addr or "/" in addr):
        try:
            doc = orjson.loads((rd / "instances.json").read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise InputError(f"--run-dir {rd}: no readable instances.json ({exc})") from exc
        found = [r["address"] for r in doc.get("instances", []) if r.get("name") == addr]
        if not found:
            raise InputError(f"--instance {addr}: no instance of that name in {rd}")
        addr = found[0]
    if a.secret_file is not None:
        secret = read_secret_file(a.secret_file)
    elif rd is not None:
        secret = read_secret_file(rd / "secret")
    else:
        raise InputError("no tree secret: give --secret-file FILE or --run-dir DIR")
    return addr, secret


def _retrying(a: argparse.Namespace, call: Callable[[], Any]) -> Any:
    import time

    for attempt in range(max(0, a.retries) + 1):
        try:
            return call()
        except InstanceUnavailableError:
            if attempt >= a.retries:
                raise
            time.sleep(min(2.0, 0.25 * 2**attempt))
    raise AssertionError("unreachable")  # pragma: no cover


def _timing_table(timings: list[LevelTiming], out: Any) -> None:
    out.write(
        f"  {'instance':<16} {'depth':>5} {'outcome':<9} {'match ms':>9} {'attach+upd ms':>13} "
        f"{'upstream ms':>11} {'server ms':>9}\n"
    )
    for t in timings:
        out.write(
            f"  {t.instance:<16} {t.depth:>5} {t.outcome:<9} {t.match_s * 1e3:>9.3f} "
            f"{t.attach_update_s * 1e3:>13.3f} {t.upstream_s * 1e3:>11.3f} {t.server_s * 1e3:>9.3f}\n"
        )


# ---------------------------------------------------------------------- fluxlite instance
def _serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run an instance (a root from a graph file, or a child of a running instance)",
        description="Run one scheduler instance as a gRPC service until SIGTERM/SIGINT.  A root loads a graph "
        "file; a child obtains its whole graph by MatchAllocate of --jobspec at --from-parent and keeps that "
        "lease alive with heartbeats.",
    )
    src = p.add_argument_group("graph (one of)")
    src.add_argument("--jgf", type=Path, help="root: load this JGF graph")
    src.add_argument(
        "--graph", type=Path, help="root: load this graph file (format from --format or extension)"
    )
    src.add_argument(
        "--format", dest="graph_format", choices=["grug", "jgf", "rv1exec", "hwloc"], help="format of --graph"
    )
    src.add_argument("--from-parent", metavar="ADDR", help="child: address of the parent instance")
    src.add_argument("--jobspec", type=Path, help="child: what to ask the parent for (jobspec file)")
    p.add_argument(
        "--listen",
        metavar="ADDR",
        help="unix:/path.sock (default: a socket in a private temp dir) or 127.0.0.1:PORT "
        "(port 0 picks one); other hosts need --tls-cert/--tls-key",
    )
    p.add_argument("--name", help="instance name (logs, Info; default root / child-PID)")
    p.add_argument("--policy", default="first", help="match policy (default first)")
    p.add_argument(
        "--prune-filters", default="ALL:core,ALL:node", help="pruning filters (default ALL:core,ALL:node)"
    )
    p.add_argument(
        "--state", type=Path, help="state file: written atomically after every change, restored on start"
    )
    p.add_argument(
        "--provider",
        metavar="KIND:ARG",
        help="ExternalAPI provider asked when the tree cannot grow, e.g. pool:FILE",
    )
    p.add_argument(
        "--secret-file",
        type=Path,
        help="tree secret (mode 0600); a root creates it if missing (default for a root: a new file next to "
        "its default socket, printed at start); a child must be given its tree's",
    )
    p.add_argument(
        "--child-grace",
        type=float,
        default=10.0,
        help="free a child's allocation after this many seconds without a heartbeat (default 10)",
    )
    p.add_argument(
        "--heartbeat",
        type=float,
        help="seconds between heartbeats to the parent (default: a third of the parent's grace)",
    )
    p.add_argument(
        "--rpc-timeout", type=float, default=10.0, help="seconds per call to the parent (default 10)"
    )
    p.add_argument(
        "--request-table-size",
        type=int,
        default=256,
        help="answers kept for retries: each live job's last N, and the last N of ended jobs; an older "
        "request id is refused, never served twice (default 256)",
    )
    p.add_argument(
        "--sync-attach",
        action="store_true",
        help="attach a subgraph obtained for a child before answering it (default: answer first, attach "
        "right after, still before serving any other call)",
    )
    p.add_argument(
        "--idle-wait",
        type=float,
        default=IDLE_WAIT_S,
        metavar="SECONDS",
        help="how long an attach for a child, after answering it, waits for the grow below to finish "
        "before it starts, so as not to slow it (any call to this instance starts it at once; 0: start "
        f"at once; default {IDLE_WAIT_S:g})",
    )
    p.add_argument(
        "--wire",
        choices=("columns", "jgf"),
        default="columns",
        help="what a grow asks the parent for: columns (the compact columns wire form when the parent "
        "speaks it, else JGF; the default) or jgf (always JGF, as instances before the columns form)",
    )
    p.add_argument("--ready-file", type=Path, help="write the bound address here once serving")
    p.add_argument(
        "--max-receive",
        type=int,
        metavar="BYTES",
        help="largest request message accepted (default 4 MiB; a bigger shrink JGF is streamed in chunks)",
    )
    p.add_argument(
        "--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"], help="log level (INFO)"
    )
    ident = p.add_argument_group(
        "identity and limits",
        "With --site-key every call must carry a token signed by its user's key (see 'fluxlite auth'); "
        "only a job's owner and the instance owner may grow, shrink, release or inspect it.  Without it the "
        "instance is single-user: every holder of the tree secret acts as the instance owner.",
    )
    ident.add_argument("--site-key", type=Path, help="site key file (mode 0600) that user keys derive from")
    ident.add_argument(
        "--user-key",
        type=Path,
        default=os.environ.get("FLUXLITE_USER_KEY") or None,
        help="user key file: the user this instance acts for towards its parent (default $FLUXLITE_USER_KEY)",
    )
    ident.add_argument(
        "--owner", help="instance owner (admin of every job here; default: the --user-key user, else you)"
    )
    ident.add_argument("--limits", type=Path, help="per-user limits (YAML; see hierarchy/_limits.py)")
    ident.add_argument("--audit-log", type=Path, help="JSON-lines audit log of every state-changing call")
    ident.add_argument(
        "--audit-max-bytes", type=int, default=10 * 1024 * 1024, help="rotate the audit log at this size"
    )
    ident.add_argument("--audit-backups", type=int, default=5, help="rotated audit logs kept (default 5)")
    p.add_argument(
        "--queue",
        metavar="POLICY",
        help="also serve a batch queue (fcfs, easy, conservative, hybrid): Submit/Cancel/Jobs/Dynget/Dynfree",
    )
    p.add_argument("--queue-depth", type=int, help="reservation depth of the hybrid queue policy")
    p.add_argument(
        "--queue-fairness",
        type=Path,
        metavar="FILE",
        help="DFS fairness of the queue's dynamic requests (Maui syntax: DFSPOLICY, DFSSINGLEDELAYTIME, ...)",
    )
    _tls_options(p)


def _cmd_serve(a: argparse.Namespace) -> int:
    from hierarchy._serve import ServeOptions, serve

    if a.jgf is not None and a.graph is not None:
        raise InputError("give --jgf or --graph, not both")
    graph = a.jgf or a.graph
    fmt = "jgf" if a.jgf is not None else a.graph_format
    if graph is not None and a.from_parent:
        raise InputError("a root (--jgf/--graph) has no --from-parent")
    if a.jobspec is not None and not a.from_parent:
        raise InputError("--jobspec is for a child (with --from-parent)")
    if a.child_grace <= 0 or a.rpc_timeout <= 0 or (a.heartbeat is not None and a.heartbeat <= 0):
        raise InputError("--child-grace, --heartbeat and --rpc-timeout must be positive")
    if not 0 <= a.idle_wait <= 10:
        raise InputError(f"--idle-wait {a.idle_wait:g}: seconds from 0 to 10")
    opts = ServeOptions(
        secret_file=a.secret_file,
        listen=a.listen,
        graph=graph,
        graph_format=fmt,
        from_parent=a.from_parent,
        jobspec=a.jobspec,
        name=a.name,
        policy=a.policy,
        prune_filters=a.prune_filters,
        state=a.state,
        provider=a.provider,
        tls=_tls(a),
        child_grace=a.child_grace,
        heartbeat=a.heartbeat,
        rpc_timeout=a.rpc_timeout,
        request_table_size=a.request_table_size,
        defer_attach=not a.sync_attach,
        idle_wait=a.idle_wait,
        wire=a.wire,
        ready_file=a.ready_file,
        log_level=a.log_level,
        site_key=a.site_key,
        user_key=a.user_key,
        owner=a.owner,
        limits=a.limits,
        audit_log=a.audit_log,
        audit_max_bytes=a.audit_max_bytes,
        audit_backups=a.audit_backups,
        queue=a.queue,
        queue_depth=a.queue_depth,
        queue_fairness=a.queue_fairness,
        max_receive=a.max_receive,
    )
    return serve(opts)


def main_instance(argv: list[str]) -> int:
    """``fluxlite instance serve|info|stat|health|release ...``."""
    p = _Parser(prog="fluxlite instance", description="Run or inspect one scheduler instance.")
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    _serve_parser(sub)
    pi = sub.add_parser("info", help="describe the instance (or one job) as JSON")
    _client_options(pi)
    pi.add_argument("--jobid", type=int, default=0, help="one job instead of the whole instance")
    pi.add_argument("--recount", action="store_true", help="also check every aggregate against a recount")
    ps = sub.add_parser("stat", help="graph size, free resources, operation counters (JSON)")
    _client_options(ps)
    ph = sub.add_parser("health", help="is the instance serving?")
    _client_options(ph)
    pr = sub.add_parser("release", help="release (cancel) a whole job")
    _client_options(pr)
    pr.add_argument("--jobid", type=int, required=True, help="the job to release")
    pr.add_argument("--lease-token", default="", help="lease token when the job is a child's lease")
    a = p.parse_args(argv)
    if a.cmd is None:
        p.print_help()
        return 2
    prog = f"fluxlite instance {a.cmd}"

    def body() -> int:
        if a.cmd == "serve":
            return _cmd_serve(a)
        with _client(a) as c:
            if a.cmd == "info":
                doc = _retrying(a, lambda: c.info(a.jobid, recount=a.recount))
            elif a.cmd == "stat":
                doc = _retrying(a, c.stat)
            elif a.cmd == "health":
                doc = _retrying(a, c.health)
            else:
                r = c.release(a.jobid, lease_token=a.lease_token)
                doc = {"jobid": a.jobid, "returned": r.returned, "pending": r.pending}
        sys.stdout.write(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode() + "\n")
        return 0

    return _run(prog, body)


# ---------------------------------------------------------------------- fluxlite hierarchy
def main_hierarchy(argv: list[str]) -> int:
    """``fluxlite hierarchy launch SPEC | stop RUNDIR | status RUNDIR``."""
    from hierarchy import _launch

    p = _Parser(
        prog="fluxlite hierarchy",
        description="Launch, inspect or stop a tree of instances.",
        epilog="Tree spec format: see 'fluxlite hierarchy launch --help'.",
    )
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    pl = sub.add_parser(
        "launch",
        help="start a tree of instances from a YAML spec",
        description=plain(_launch.__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    pl.add_argument("spec", type=Path, help="tree spec (YAML)")
    pl.add_argument("--run-dir", type=Path, help="run directory (default: a new private temp dir)")
    pl.add_argument("--detach", action="store_true", help="return once the tree runs (stop it with 'stop')")
    pst = sub.add_parser("stop", help="stop every instance of a run directory")
    pst.add_argument("run_dir", type=Path)
    pss = sub.add_parser("status", help="health of every instance of a run directory")
    pss.add_argument("run_dir", type=Path)
    a = p.parse_args(argv)
    if a.cmd is None:
        p.print_help()
        return 2

    def body() -> int:
        if a.cmd == "launch":
            return _launch.launch(a.spec, a.run_dir, detach=a.detach)
        if a.cmd == "stop":
            n = _launch.stop_tree(a.run_dir.resolve())
            sys.stdout.write(f"stopped {n} instance(s) of {a.run_dir}\n")
            return 0
        return _launch.status(a.run_dir)

    return _run(f"fluxlite hierarchy {a.cmd}", body)


# ---------------------------------------------------------------------- fluxlite grow / shrink
def main_grow(argv: list[str]) -> int:
    """``fluxlite grow --instance ADDR [--jobid N] JOBSPEC``."""
    p = _Parser(
        prog="fluxlite grow",
        description="MatchGrow job --jobid at an instance (the request climbs the tree until a level matches); "
        "without --jobid, allocate a new job with the jobspec.  Prints a summary; --output writes the JGF of the "
        "new resources.",
    )
    p.add_argument("jobspec", type=Path, help="jobspec file (YAML or JSON)")
    p.add_argument("--jobid", type=int, help="the running job to grow (default: allocate a new job)")
    p.add_argument("--request-id", help="request id (repeat it to retry a grow safely; default: a new one)")
    p.add_argument("--lease-token", default="", help="lease token when the job is a child's lease")
    p.add_argument("--output", "-o", type=Path, help="write the JGF of the new resources here ('-' = stdout)")
    p.add_argument("--timings", action="store_true", help="print the per-level server timings")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _client_options(p)
    a = p.parse_args(argv)

    def body() -> int:
        try:
            js = a.jobspec.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read jobspec {a.jobspec}: {exc.strerror or exc}") from exc
        from fluxlite.jobspec import parse_jobspec

        parse_jobspec(js, source=str(a.jobspec))  # bad input fails here, before any call
        rid = a.request_id or new_request_id()
        with _client(a) as c:
            if a.jobid is None:
                out = _retrying(a, lambda: c.match_allocate(js, request_id=rid))
                what = f"job {out.jobid} allocated"
            else:
                out = _retrying(
                    a, lambda: c.match_grow(a.jobid, js, request_id=rid, lease_token=a.lease_token)
                )
                what = f"job {out.jobid} grew"
        via = out.timings[0].outcome if out.timings else "?"
        if a.output is not None:
            if str(a.output) == "-":
                sys.stdout.write(out.jgf.decode() + "\n")
            else:
                a.output.write_bytes(out.jgf)
        if a.json:
            doc = {
                "jobid": out.jobid,
                "request_id": rid,
                "vertices": out.vertices,
                "edges": out.edges,
                "via": via,
                "replayed": out.replayed,
                "rtt_s": out.rtt_s,
                "timings": [t.__dict__ for t in out.timings],
            }
            sys.stdout.write(orjson.dumps(doc).decode() + "\n")
        elif str(a.output) != "-":
            sys.stdout.write(
                f"{what}: {out.vertices} vertices, {out.edges} edges (via {via}{', replayed' if out.replayed else ''}; "
                f"request {rid}; {out.rtt_s * 1e3:.2f} ms)\n"
            )
            if a.timings:
                _timing_table(out.timings, sys.stdout)
        return 0

    return _run("fluxlite grow", body)


def main_shrink(argv: list[str]) -> int:
    """``fluxlite shrink --instance ADDR --jobid N (--jgf FILE | --path PATH...)``."""
    p = _Parser(
        prog="fluxlite shrink",
        description="Release part of job --jobid at an instance: the resources in a JGF document (e.g. the "
        "output of 'fluxlite grow -o') or the subtrees at --path.  What the instance obtained from its parent "
        "goes back up the tree.",
    )
    p.add_argument("--jobid", type=int, required=True, help="the running job to shrink")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--jgf", type=Path, help="JGF document of the resources to release")
    what.add_argument(
        "--path", nargs="+", metavar="PATH", help="containment path(s): release the job's subtree there"
    )
    p.add_argument("--request-id", help="request id (repeat it to retry safely; default: a new one)")
    p.add_argument("--lease-token", default="", help="lease token when the job is a child's lease")
    p.add_argument("--timings", action="store_true", help="print the per-level server timings")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    _client_options(p)
    a = p.parse_args(argv)

    def body() -> int:
        doc = b""
        if a.jgf is not None:
            try:
                doc = a.jgf.read_bytes()
            except OSError as exc:
                raise InputError(f"cannot read {a.jgf}: {exc.strerror or exc}") from exc
        rid = a.request_id or new_request_id()
        with _client(a) as c:
            out = _retrying(
                a,
                lambda: c.shrink(
                    a.jobid, jgf=doc, paths=a.path or (), lease_token=a.lease_token, request_id=rid
                ),
            )
        if a.json:
            sys.stdout.write(
                orjson.dumps(
                    {
                        "jobid": a.jobid,
                        "request_id": rid,
                        "job_gone": out.job_gone,
                        "released": out.released,
                        "returned": out.returned,
                        "pending": out.pending,
                        "replayed": out.replayed,
                        "rtt_s": out.rtt_s,
                        "timings": [t.__dict__ for t in out.timings],
                    }
                ).decode()
                + "\n"
            )
        else:
            gone = " (job gone)" if out.job_gone else ""
            sys.stdout.write(
                f"job {a.jobid}: released {out.released} vertices{gone}; {out.returned} handed back up, "
                f"{out.pending} pending ({out.rtt_s * 1e3:.2f} ms)\n"
            )
            if a.timings:
                _timing_table(out.timings, sys.stdout)
        return 0

    return _run("fluxlite shrink", body)


# ---------------------------------------------------------------------- fluxlite auth
def main_auth(argv: list[str]) -> int:
    """``fluxlite auth site-key FILE | key --site-key F --user U -o FILE | whoami``."""
    from hierarchy._identity import read_key_file, write_key_file, write_user_key_file

    p = _Parser(
        prog="fluxlite auth",
        description="Identities of a tree's users.  A site key (one 0600 file per tree, given to every instance "
        "as --site-key) derives one key per user; a user signs every call with their key and can sign as "
        "nobody else.  'fluxlite hierarchy launch' creates the site key and its owner's key in the run "
        "directory; the owner gives other users their keys with 'fluxlite auth key'.",
    )
    sub = p.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    ps = sub.add_parser("site-key", help="create a new site key file (mode 0600; refuses to overwrite)")
    ps.add_argument("file", type=Path)
    pk = sub.add_parser("key", help="write a user's key file (mode 0600) derived from the site key")
    pk.add_argument("--site-key", type=Path, required=True, help="the tree's site key file")
    pk.add_argument("--user", required=True, help="user name (letters, digits, _.@-)")
    pk.add_argument(
        "-o", "--output", type=Path, required=True, help="where to write the key (must not exist)"
    )
    pw = sub.add_parser("whoami", help="the user a key file signs as")
    pw.add_argument(
        "--user-key",
        type=Path,
        default=os.environ.get("FLUXLITE_USER_KEY") or None,
        help="the key file (default $FLUXLITE_USER_KEY)",
    )
    a = p.parse_args(argv)
    if a.cmd is None:
        p.print_help()
        return 2

    def body() -> int:
        if a.cmd == "site-key":
            write_key_file(a.file)
            sys.stdout.write(f"wrote a new site key to {a.file}\n")
        elif a.cmd == "key":
            cred = write_user_key_file(a.output, read_key_file(a.site_key), a.user)
            sys.stdout.write(f"wrote the key of user {cred.user} to {a.output}\n")
        else:
            if a.user_key is None:
                raise InputError("give --user-key FILE (or set FLUXLITE_USER_KEY)")
            sys.stdout.write(read_user_key_file(a.user_key).user + "\n")
        return 0

    return _run(f"fluxlite auth {a.cmd}", body)
