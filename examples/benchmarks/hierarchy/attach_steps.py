"""One level's attach of a 64-node grow, in process, by step (thread CPU time).

    python examples/benchmarks/hierarchy/attach_steps.py [BENCH_DIR [ROUNDS [REPS [REQUEST]]]]

REQUEST (default T1) names the jobspec L0 answers: T1 is the 64-node grow, T8 one socket (the
fixed part of a level's attach, what the per-level intercept measures).

The shape of L1 in ``fluxlite bench hierarchy``: L0 (``graphs/L0.graphml``, 128 nodes) leases 8
nodes (T4) to a child, which loads the lease's JGF as its graph and fills it with one job; L0
then answers a 64-node request (T1) with the ``jgf`` writer and the child attaches that
subgraph and allocates it to its job (``Engine.attach(..., allocate_to=job)``, what a level does
with a grow from above).  Each repetition is undone (shrink, remove the 64 nodes, cancel at L0).
Per round the best thread CPU time of REPS repetitions of the whole attach and of each step:

* read   - ``jgf.read_columns`` (the document into columns);
* create - ``readers.jgf.attach_columns`` (vertices and edges into the graph);
* prime  - ``Traverser.attach_update`` (aggregates of the new subtrees, ancestors' totals);
* alloc  - ``Engine._allocate_items`` (the allocation to the job);

With the columns wire form (``hierarchy._wire``, where the revision has it) each repetition also
attaches the same match from its columns payload: ``encode`` (the parent's side, from what the
``jgf`` writer emitted), ``decode`` (the checked message into columns, in place of ``read``) and the
same create / prime / alloc steps, reported with a ``+c`` suffix (``attach+c`` is decode + attach).

and the parent's side: ``match`` (L0's match writing the JGF text) and, where the revision writes
columns straight from the match (``JgfColumnsWriter.lazy``), ``match+c`` (the match recording only,
then the encode: what a parent answering in columns does before it replies);

plus ``bulk``: the floor of ``rx.PyDiGraph.add_nodes_from`` + ``add_edges_from`` of the same
numbers of vertices and edges.  Steps a revision does not have are left out.  Run it against
another revision with ``PYTHONPATH=<that tree>`` to compare on the same machine.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import rustworkx as rx

import fluxlite.api as api_mod
import fluxlite.readers.jgf as rjgf
import jgf as jgf_mod
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.match import Traverser
from fluxlite.readers import load_graph

ACC: dict[str, float] = {}


def timed(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*a: Any, **k: Any) -> Any:
        c = time.thread_time()
        try:
            return fn(*a, **k)
        finally:
            ACC[name] = ACC.get(name, 0.0) + time.thread_time() - c

    return wrapper


def setup(bench: Path, req: str) -> tuple[dict[str, Any], Engine, Engine, int]:
    """The jobspecs, L0, the child holding 8 nodes of it (T4) and the child's job that grows."""
    spec = {t: parse_jobspec((bench / "jobspecs" / f"{t}.yaml").read_text()) for t in {req, "T4"}}
    parent = Engine.from_file(bench / "graphs" / "L0.graphml", format="grug", policy="first")
    lease = parent.allocate(spec["T4"], fmt="jgf").text
    child = Engine(load_graph(lease, format="jgf"), policy="first")
    return spec, parent, child, child.allocate(spec["T4"], fmt="jgf").jobid


def main() -> None:
    bench = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/bench")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 10
    req = sys.argv[4] if len(sys.argv) > 4 else "T1"
    spec, parent, child, cjob = setup(bench, req)
    try:
        from fluxlite.writers.jgf import JgfColumnsWriter
        from hierarchy import _wire
    except ImportError:  # a revision without the columns wire form
        _wire = None
    if _wire is not None:
        writer = JgfColumnsWriter()
        parent.set_writer("jgf", writer)
    jgf_mod.read_columns = timed("read", jgf_mod.read_columns)
    rjgf.attach_columns = timed("create", rjgf.attach_columns)
    Traverser.attach_update = timed("prime", Traverser.attach_update)
    api_mod.Engine._allocate_items = timed("alloc", api_mod.Engine._allocate_items)
    rows: dict[str, list[float]] = {}
    n = 0
    for _ in range(rounds):
        best: dict[str, float] = {}
        for rep in range(reps):
            r = parent.allocate(spec[req], fmt="jgf")
            sub = r.text
            forms: list[tuple[str, Any]] = [("", sub)]
            if _wire is not None:
                c = time.thread_time()
                payload = _wire.encode(parent.graph, writer.emitted)
                best["encode"] = min(best.get("encode", 9.0), time.thread_time() - c)
                forms.append(("+c", payload))
            # a removed block of handles is refilled in order every other attach (rustworkx hands freed
            # slots back last-freed first): alternate which form goes first, so each sees both cases
            for suffix, doc in forms if rep % 2 == 0 else forms[::-1]:
                ACC.clear()
                c = time.thread_time()
                if suffix:
                    d = time.thread_time()
                    doc = _wire.decode(doc)
                    ACC["decode"] = time.thread_time() - d
                new = child.attach(doc, allocate_to=cjob, at=0, duration=3600)
                total = time.thread_time() - c
                g = child.graph
                n = len(new) + sum(1 for v in new if g.parent(v) is not None)
                for k, x in (("attach", total), *ACC.items()):
                    key = k if k == "decode" else k + suffix
                    best[key] = min(best.get(key, x), x)
                tops = [g.path(v) for v in new if g.parent(v) not in set(new)]
                child.shrink(cjob, paths=tops)
                for p in tops:
                    child.remove_subgraph(path=p)
            parent.cancel(r.jobid)
        # the parent's side of the answer: its match writing JGF text (what main sends), and, with
        # the columns form, its match only recording what it emits (``lazy``) and then the encode
        for _ in range(reps):
            c = time.thread_time()
            r = parent.allocate(spec[req], fmt="jgf")
            best["match"] = min(best.get("match", 9.0), time.thread_time() - c)
            parent.cancel(r.jobid)
            if _wire is not None and hasattr(writer, "lazy"):
                writer.lazy = True
                c = time.thread_time()
                r = parent.allocate(spec[req], fmt="jgf")
                _wire.encode(parent.graph, writer.emitted)
                best["match+c"] = min(best.get("match+c", 9.0), time.thread_time() - c)
                writer.lazy = False
                parent.cancel(r.jobid)
        nv, ne = len(new), n - len(new)
        c = time.thread_time()
        d = rx.PyDiGraph()
        ids = d.add_nodes_from(range(nv))
        d.add_edges_from([(ids[0], ids[k % nv], k) for k in range(ne)])
        best["bulk"] = time.thread_time() - c
        for k, x in best.items():
            rows.setdefault(k, []).append(x * 1e3)
    print(f"child with 8 nodes attaches L0's {req} ({nv} new vertices, {ne} new edges: n = {n}),")
    print(f"{rounds} rounds of {reps}; thread CPU ms, best of each round:")
    for k, xs in rows.items():
        print(f"  {k:7s} " + "  ".join(f"{x:6.2f}" for x in xs))
    per = min(rows["attach"]) * 1e3 / n
    print(f"attach per new vertex+edge: {per:.2f} us (best round)")
    if "attach+c" in rows:
        per = min(rows["attach+c"]) * 1e3 / n
        print(f"attach from the columns form (decode included) per new vertex+edge: {per:.2f} us (best round)")
    print("medians of the rounds (ms): " + ", ".join(f"{k} {sorted(xs)[len(xs) // 2]:.3f}" for k, xs in rows.items()))


if __name__ == "__main__":
    main()
