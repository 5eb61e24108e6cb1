"""The floor under a level's communication: one RPC's round trip to an instance, next to a bare gRPC echo.

    python examples/benchmarks/hierarchy/rpc_rtt.py [--calls 400]

Starts one instance process (as ``fluxlite hierarchy`` does: Unix socket, tree secret, user tokens)
and times ``Health`` (no engine work: what every call pays for transport, the secret interceptor,
the token and the handler's thread), through the project's client and through the raw stub; then a
bare gRPC server in this process with the same thread pool and a Unix socket echoing bytes.  Medians
and minimums in ms.  ``fluxlite bench hierarchy`` reports a level's communication as its round trip
to the parent less the parent's server time: this script says how much of that any call pays.
Loopback only; the run directory is a temporary one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from concurrent import futures
from pathlib import Path

import grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from hierarchy._client import pb
from tests.hierarchy.helpers import chain, short_tmpdir, start


def _times(fn: object, calls: int) -> list[float]:
    for _ in range(50):  # warm the channel and both ends
        fn()  # type: ignore[operator]
    out = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        out.append(time.perf_counter() - t)
    return out


def _line(what: str, ts: list[float]) -> str:
    return f"  {what:44s} median {statistics.median(ts) * 1e3:7.3f} ms   min {min(ts) * 1e3:7.3f} ms"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=400, help="timed calls per figure (default 400)")
    a = ap.parse_args(argv)
    print(f"round trips, {a.calls} calls each, load average {os.getloadavg()[0]:.2f}")
    with short_tmpdir() as d:
        nodes = chain(d, [4])
        tree = start(d, nodes)
        try:
            c = tree.client(nodes[0].name)
            print(_line("instance Health, project client", _times(c.health, a.calls)))
            stub, md = c._stub.Health, c._md
            print(_line("instance Health, raw stub", _times(lambda: stub(pb.HealthRequest(), metadata=md, timeout=5), a.calls)))
        finally:
            tree.close()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=16))
    echo = grpc.unary_unary_rpc_method_handler(lambda req, ctx: req)
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("t.T", {"Echo": echo}),))
    with tempfile.TemporaryDirectory(prefix="rtt-") as td:
        path = os.path.join(td, "s")
        server.add_insecure_port(f"unix:{path}")
        server.start()
        try:
            with grpc.insecure_channel(f"unix:{path}") as ch:
                call = ch.unary_unary("/t.T/Echo")
                print(_line("bare gRPC echo (100 bytes), same thread pool", _times(lambda: call(b"x" * 100), a.calls)))
        finally:
            server.stop(None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
