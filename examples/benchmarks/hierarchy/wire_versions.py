"""The columns wire form's two versions side by side: payload bytes, encode and decode time.

    python examples/benchmarks/hierarchy/wire_versions.py [--bench-dir DIR] [--reps N] > wire-versions.txt

On the shared L0 graph (``graphs/L0.graphml``, GRUG), each request T1..T8 is matched with the
``jgf`` writer as an instance's grow is (lazily: only what it emitted recorded), then encoded in
version 1 (every varying integer column 8 bytes per entry) and version 2 (the narrowest of 1, 2,
4 or 8 bytes that holds the column), and decoded again; ``jgf`` is the JGF text written from the
decoded columns (``jgf.columns_jgf``: what the leaf answers a client that reads JGF).  Times are the best of ``--reps`` runs of
each (thread CPU time, so that the machine's load moves them little); the bytes are exact.  The
bytes are what every level of a nested grow sends on to the next (``fluxlite bench hierarchy``'s
communication slope).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy import _wire
from jgf import columns_jgf


def _best(fn: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time()
        fn()
        best = min(best, time.thread_time() - t0)
    return best * 1e3


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", default="../shared/bench")
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    bench = Path(args.bench_dir)
    eng = Engine.from_file(bench / "graphs" / "L0.graphml", format="grug", policy="first")
    w = JgfColumnsWriter()
    eng.set_writer("jgf", w)
    print("request  vertices  edges  | v1 bytes  v2 bytes  v2/v1 | encode ms v1  v2 | decode ms v1  v2 | jgf ms")
    for name in [f"T{k}" for k in range(1, 9)]:
        js = parse_jobspec((bench / "jobspecs" / f"{name}.yaml").read_text())
        w.lazy = True
        try:
            r = eng.allocate(js, fmt="jgf")
        finally:
            w.lazy = False
        emitted = w.emitted
        pay = {v: _wire.encode(eng.graph, emitted, v) for v in (1, 2)}
        if pay[1] is None or pay[2] is None:
            print(f"{name:8} (off what the form describes)")
            eng.cancel(r.jobid)
            continue
        enc = {v: _best(lambda v=v, e=emitted: _wire.encode(eng.graph, e, v), args.reps) for v in (1, 2)}
        dec = {v: _best(lambda p=pay[v]: _wire.decode(p), args.reps) for v in (1, 2)}
        cols = _wire.decode(pay[2])
        text = _best(lambda c=cols: columns_jgf(c), args.reps)
        nv, ne = _wire.counts(pay[2])
        print(
            f"{name:8} {nv:8d} {ne:6d}  | {len(pay[1]):8d}  {len(pay[2]):8d}  {len(pay[2]) / len(pay[1]):5.2f} |"
            f"       {enc[1]:6.3f} {enc[2]:6.3f} |       {dec[1]:6.3f} {dec[2]:6.3f} | {text:6.3f}"
        )
        eng.cancel(r.jobid)


if __name__ == "__main__":
    main()
