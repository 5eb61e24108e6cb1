"""``fluxlite providers``: look after external providers outside a running instance.

``fluxlite providers ec2 cleanup --config FILE [--dry-run] [--force] [--json]``
    List (and unless ``--dry-run`` terminate) the orphans of an EC2 provider:
    instances tagged with its owner identity that its journal does not count
    as granted - e.g. after a crash between create and attach.  A running
    instance does the same at start and then periodically, against what it
    actually holds.  While an instance holds the journal (its writer lock),
    cleanup refuses and terminates nothing: that instance may be creating
    the very instances that look orphaned.  ``--force`` terminates them
    anyway (reading the journal, not writing it).
``fluxlite providers ec2 list --config FILE [--json]``
    The provider's live instances and the request each belongs to (reads
    the journal without its lock: works beside a running instance).
``fluxlite providers ec2 moto-server [--port N]``
    A local EC2-compatible endpoint (moto) on 127.0.0.1 for trying the
    provider without an AWS account; prints its URL and runs until Ctrl-C.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import Any

import orjson

from fluxlite.cli._help import plain
from fluxlite.errors import FluxliteError

__all__ = ["main_providers"]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message}\n")


def main_providers(argv: list[str]) -> int:
    p = _Parser(prog="fluxlite providers", description="External resource providers (cloud bursting).")
    sub = p.add_subparsers(dest="kind", metavar="KIND", parser_class=_Parser)
    e = sub.add_parser(
        "ec2",
        help="the Amazon EC2 provider",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    esub = e.add_subparsers(dest="cmd", metavar="COMMAND", parser_class=_Parser)
    for name, helptext in (
        ("cleanup", "terminate instances of this provider that no grant holds"),
        ("list", "the provider's live instances"),
    ):
        c = esub.add_parser(name, help=helptext)
        c.add_argument("--config", type=Path, required=True, help="the provider's config (YAML)")
        c.add_argument("--json", action="store_true", help="print JSON")
        if name == "cleanup":
            c.add_argument("--dry-run", action="store_true", help="list the orphans, terminate nothing")
            c.add_argument(
                "--force",
                action="store_true",
                help="terminate orphans even while a running instance holds the journal",
            )
    m = esub.add_parser("moto-server", help="a local EC2-compatible endpoint (moto) on 127.0.0.1")
    m.add_argument("--port", type=int, default=5000, help="port on 127.0.0.1 (default 5000; 0 picks one)")
    a = p.parse_args(argv)
    if a.kind is None or a.cmd is None:
        (e if a.kind else p).print_help()
        return 2
    try:
        if a.cmd == "moto-server":
            return _moto_server(a.port)
        from providers.ec2 import Ec2Config, Ec2Provider

        cfg = Ec2Config.load(a.config)
        readonly = a.cmd == "list" or a.dry_run or a.force
        try:
            prov = Ec2Provider(cfg, readonly=readonly)
        except FluxliteError as exc:
            if "in use by process" in str(exc):
                raise FluxliteError(
                    f"{exc}; its instances are left alone (--force terminates the journal's orphans anyway)"
                ) from exc
            raise
        try:
            if a.cmd == "list":
                rows = prov.owned_instances()
            else:
                rows = prov.orphans()
                if not a.dry_run and rows:
                    prov.reconcile()
        finally:
            prov.close()
        if a.json:
            sys.stdout.write(orjson.dumps(rows).decode() + "\n")
        else:
            verb = "live" if a.cmd == "list" else ("would terminate" if a.dry_run else "terminated")
            sys.stdout.write(f"{len(rows)} instance(s) {verb} (owner {prov.config.owner})\n")
            for r in rows:
                sys.stdout.write(
                    f"  {r['id']}  {r['type']:<12} {r['zone']:<12} {r['state']:<8} request {r['request']}\n"
                )
        return 0
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite providers ec2 {a.cmd}: {exc}\n")
        return 1
    except Exception as exc:  # anything else: still one line, not a traceback
        sys.stderr.write(f"fluxlite providers ec2 {a.cmd}: {type(exc).__name__}: {' '.join(str(exc).split())}\n")
        return 1


def _moto_server(port: int) -> int:
    import signal
    import threading

    from providers._moto import MotoServer

    srv = MotoServer(port).start()
    sys.stdout.write(
        f"moto EC2 endpoint on {srv.url} (local only; any credentials work)\n"
        f"  endpoint_url: {srv.url}   # in the provider config\n"
        "Ctrl-C stops it.\n"
    )
    sys.stdout.flush()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        while not stop.wait(0.2):  # timed: an untimed wait can sleep through the SIGTERM
            pass
    srv.stop()
    return 0
