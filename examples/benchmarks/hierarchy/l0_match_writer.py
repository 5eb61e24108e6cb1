"""Where L0's 64-node match in a grow goes: the match itself against the JGF it answers with.

    python examples/benchmarks/hierarchy/l0_match_writer.py [BENCH_DIR [ROUNDS]] > l0-match-writer.txt

An instance answers a MatchGrow with the match writer's JGF (the child attaches it), while
``fluxlite bench match`` and Fluxion's recorded figures use the ``simple`` writer.  On the
shared L0 graph (128 nodes) T1 (64 nodes, 2 sockets x 16 cores each) is allocated and
cancelled with no writer, with ``simple``, with ``jgf`` and with ``jgf`` recorded lazily (``jgf-lazy``:
the ``JgfColumnsWriter`` an instance installs, as it matches for a caller that reads the columns wire
form: records only, no text; where the tree has no ``lazy`` writer this row is the eager one), in ROUNDS rounds of 10 matches
(best thread CPU time of each round, so the machine's load moves it little); then the JGF text
alone (``vertex_json`` / ``edge_json`` over the job's vertices and edges) is timed, warm (as an
instance writes its graph's vertices again and again) and, where the writer keeps a per-graph
text cache (``jgf_vcache``), cold (caches emptied before each repetition).

Run it against another revision's code with ``PYTHONPATH=<that tree>`` (e.g. ``git archive main``
unpacked in a temporary directory) to compare on the same machine.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.writers import jgf as jgf_writers
from fluxlite.writers.jgf import edge_json, vertex_json


def main() -> None:
    bench = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/bench")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    eng = Engine.from_file(bench / "graphs" / "L0.graphml", format="grug", policy="first")
    g = eng.graph
    js = parse_jobspec((bench / "jobspecs" / "T1.yaml").read_text())
    best: dict[str, list[float]] = {}
    cols_writer = getattr(jgf_writers, "JgfColumnsWriter", None)
    plain_writer = eng.writer("jgf")
    for _ in range(rounds):
        for fmt in ("none", "simple", "jgf", "jgf-lazy"):
            lazy = fmt == "jgf-lazy" and cols_writer is not None
            if lazy:
                w = cols_writer()
                w.lazy = True
                eng.set_writer("jgf", w)
            cpu = []
            for _ in range(10):
                c = time.thread_time()
                job = eng.allocate(js) if fmt == "none" else eng.allocate(js, fmt=fmt[:3] if lazy else fmt)
                cpu.append(time.thread_time() - c)
                eng.cancel(job.jobid)
            if lazy and plain_writer is not None:
                eng.set_writer("jgf", plain_writer)
            best.setdefault(fmt, []).append(min(cpu) * 1e3)
    print(
        f"L0 ({len(g.v_rank)} vertices), T1 (64 nodes), policy first: allocate + cancel, {rounds} rounds of 10"
    )
    print("thread CPU ms per allocate, best of each round:")
    for fmt, xs in best.items():
        print(f"  writer {fmt:7s} " + "  ".join(f"{x:6.2f}" for x in xs))
    job = eng.allocate(js)
    vids = eng.traverser.job_vertices(job.jobid)
    inside = set(vids)
    eids = [e for e in range(len(g.e_src)) if g.e_src[e] in inside and g.e_dst[e] in inside]
    cached = hasattr(g, "jgf_vcache")
    for mode in ("warm", "cold") if cached else ("uncached",):
        text = []
        for _ in range(10):
            if mode == "cold":
                g.jgf_vcache.clear()
                g.jgf_ecache.clear()
            c = time.thread_time()
            for v in vids:
                vertex_json(g, v, 1, None, True)
            for e in eids:
                edge_json(g, e)
            text.append(time.thread_time() - c)
        print(
            f"the JGF text alone ({len(vids)} vertices, {len(eids)} edges), {mode}: "
            f"best {min(text) * 1e3:.2f} ms CPU"
        )


if __name__ == "__main__":
    main()
