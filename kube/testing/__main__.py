"""``python -m kube.testing``: run the stand-in Kubernetes API server until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from kube.testing import ApiServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kube.testing",
        description="Run an API-compatible Kubernetes API server on loopback (for tests, walkthroughs and "
        "`fluxlite bench kube`). Prints its URL, then serves until SIGTERM or SIGINT. Every request must "
        "carry the bearer token written to --kubeconfig (random per run, or $FLUXLITE_TESTING_TOKEN).",
    )
    parser.add_argument("--host", default="127.0.0.1", help="loopback address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=0, help="TCP port (default 0: any free port)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="write a kubeconfig for this server to FILE")
    parser.add_argument(
        "--no-controllers",
        action="store_true",
        help="do not run the ReplicaSet controller, garbage collector and kubelet stand-in",
    )
    parser.add_argument(
        "--tls-cert", metavar="FILE", help="serving certificate chain, PEM (default: a fresh one)"
    )
    parser.add_argument("--tls-key", metavar="FILE", help="its private key, PEM")
    parser.add_argument(
        "--no-tls", action="store_true", help="serve plain HTTP (kubectl then sends no token)"
    )
    parser.add_argument("--watch-cache-size", type=int, default=1000, help="watch events kept per resource")
    parser.add_argument(
        "--bookmark-interval",
        type=float,
        default=30.0,
        help="seconds between watch BOOKMARK events (default 30)",
    )
    args = parser.parse_args(argv)
    # the handlers go in before the URL is printed: a caller may send SIGTERM the moment it reads it
    done = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: done.set())
    try:
        cert = None
        if args.tls_cert or args.tls_key:
            from kube.testing._tls import ServingCert

            if not (args.tls_cert and args.tls_key):
                raise ValueError("--tls-cert and --tls-key go together")
            cert = ServingCert.read(args.tls_cert, args.tls_key)
        server = ApiServer(
            host=args.host,
            port=args.port,
            controllers=not args.no_controllers,
            watch_cache_size=args.watch_cache_size,
            bookmark_interval=args.bookmark_interval,
            token=os.environ.get("FLUXLITE_TESTING_TOKEN") or None,
            tls=not args.no_tls,
            serving_cert=cert,
        ).start()
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # a process of its own: its stored objects (every pod, the watch history) are long-lived, so
    # the collector's full passes would rescan them ever more; fluxlite.gcpolicy's upkeep
    # freezes what survives instead, off the request threads (stored objects form no cycles)
    from fluxlite.gcpolicy import upkeep

    gc_upkeep = upkeep()
    gc_upkeep.gc.settle()
    server.store.listeners.append(lambda _res, _event: gc_upkeep.poke())
    if args.kubeconfig:
        server.write_kubeconfig(args.kubeconfig)
    print(server.url, flush=True)
    # a timed wait: the handler runs only when the main thread runs Python code, and an untimed
    # wait can sleep through a SIGTERM the kernel delivered to another thread (seen: the docs'
    # walkthrough left this server running after its teardown's kill, about one run in twenty)
    while not done.wait(0.2):
        pass
    server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
