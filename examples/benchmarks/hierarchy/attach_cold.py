"""One level's attach of a small grow, warm and with the caches evicted before it: what the per-level
intercept of ``fluxlite bench hierarchy`` is made of.

    python examples/benchmarks/hierarchy/attach_cold.py [--bench-dir ../shared/bench] [--request T8] [--attaches 30]

L0 (``graphs/L0.graphml``) answers REQUEST (default T8, one socket: 19 vertices, 18 edges) with the
``jgf`` writer; the payload is encoded in the columns wire form and each of 2 x ATTACHES children (a
lease of 8 nodes holding one job) decodes and attaches it to its job, once each
(``Engine.attach(..., allocate_to=job)``, what a level does with a grow from above).  The first
half attach back to back (warm: the attach's code and data stay in the CPU caches); before each of
the second half, 32 MiB are copied and 70,000 strings sorted, as a service's work between two grows
(gRPC, protobuf, other requests) would evict them.  Prints the median and best thread CPU time of
each half.  In the twelfth session the warm attach of T8 took 0.29 ms and the cold one 0.71 ms on
this machine: a level's attach of a small grow inside an instance (0.5-0.6 ms) is mostly the cost
of cold caches, not of the instructions (about 1 M, see ``attach_ir.py --request T8``).
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path

from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import load_graph
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy import _wire


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--request", default="T8", help="the jobspec L0 answers (default T8: one socket)")
    ap.add_argument("--attaches", type=int, default=30, help="attaches per half (default 30)")
    a = ap.parse_args()
    jobspecs = a.bench_dir / "jobspecs"
    spec = {t: parse_jobspec((jobspecs / f"{t}.yaml").read_text()) for t in {a.request, "T4"}}
    parent = Engine.from_file(a.bench_dir / "graphs" / "L0.graphml", format="grug", policy="first")
    lease = parent.allocate(spec["T4"], fmt="jgf").text
    kids = []
    for _ in range(2 * a.attaches):
        child = Engine(load_graph(lease, format="jgf"), policy="first")
        kids.append((child, child.allocate(spec["T4"], fmt="jgf").jobid))
    writer = JgfColumnsWriter()
    parent.set_writer("jgf", writer)
    parent.allocate(spec[a.request], fmt="jgf")
    payload = _wire.encode(parent.graph, writer.emitted)
    assert payload is not None
    big = bytearray(32 << 20)
    junk = [str(i) for i in range(210_000)]
    gc.collect()
    gc.disable()  # as an instance's lock does while it attaches
    for name, half, cold in (("warm", kids[: a.attaches], False), ("cold", kids[a.attaches :], True)):
        ts = []
        for child, job in half:
            if cold:
                bytes(big)
                sorted(junk[::3])
            c = time.thread_time()
            child.attach(_wire.decode(payload), allocate_to=job, at=0, duration=3600)
            ts.append(time.thread_time() - c)
        ts.sort()
        print(f"{name}: {a.request} attach, thread CPU ms: median {ts[len(ts) // 2] * 1e3:.3f}, best {ts[0] * 1e3:.3f}")


if __name__ == "__main__":
    main()
