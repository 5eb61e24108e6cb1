"""Where a nested Shrink's time goes at each level: the time of each step, per level.

    python examples/benchmarks/hierarchy/shrink_stamps.py [--bench-dir ../shared/bench] [--requests T1]
        [--reps 10] [--sync-attach] [--tree DIR]

Starts the five levels of ``fluxlite bench hierarchy`` as real instance processes (as
``hop_stamps.py`` does), each with a ``sitecustomize`` module that wraps the steps of
``Instance.shrink`` to record ``time.perf_counter()`` at their entry and exit.  The leaf then grows
its job by each request and shrinks it back ``--reps`` times (3 more unmeasured first), and the
script prints, per level, the median time of each step within one shrink (a step that runs twice,
such as the state file's write, is summed): ``shrink`` is the whole ``Instance.shrink``, ``up`` the
level's call to its parent (which holds the levels above), ``own`` the whole less ``up``.  A level's
own work is what the leaf's answer waits for at that level.  Loopback only; the run directory is a
temporary one.  ``--tree`` runs the instances from another source tree (a baseline) with this
script's harness (set ``SHRINK_STAMPS_TREE`` to the same directory, so that this process imports it
too).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.environ.get("SHRINK_STAMPS_TREE") or str(Path(__file__).resolve().parents[3]))

from _stamped_tree import stamped_tree  # (beside this script)

from hierarchy.bench import FILLER, LEVELS

#: written as sitecustomize.py into the instances' first PYTHONPATH entry
STAMPER = r'''
import functools, json, os, signal, sys, time
REC = []
def _wrap(owner, name, tag):
    f = getattr(owner, name)
    @functools.wraps(f)
    def w(*a, **k):
        t0 = time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            REC.append((tag, t0, time.perf_counter()))
    setattr(owner, name, w)
if "--name" in sys.argv:
    from hierarchy import _client, _service
    from hierarchy.instance import Instance, handback
    _wrap(_service.InstanceServicer, "Shrink", "Shrink")
    _wrap(_service.InstanceServicer, "ShrinkStream", "Shrink")
    _wrap(Instance, "shrink", "shrink")
    _wrap(_client.InstanceClient, "shrink", "up")
    for m in ("_shrink_vertices", "_preflight", "_items_of", "_hand_back", "_free_origin_roots",
              "_persist", "_finish_return", "_remember", "_job_ended", "_send_back"):
        _wrap(Instance, m, m)
    for m in ("release_set", "release_vertices", "subgraph_jgf", "node_vertices"):
        if hasattr(handback, m):
            _wrap(handback, m, m)
    for m in ("refuse_partial",):
        _wrap(handback.cloud, m, m)
    def _dump(*_):
        out = os.environ["SHRINK_STAMPS_OUT"]
        name = sys.argv[sys.argv.index("--name") + 1]
        with open(os.path.join(out, name + ".json"), "w") as f:
            json.dump(REC, f)
    signal.signal(signal.SIGUSR1, _dump)
'''


def _steps(recs: list[tuple[str, float, float]], t0: float, t1: float) -> dict[str, float]:
    """Each step's summed time within the window [t0, t1] (one shrink), and ``own``."""
    out: dict[str, float] = {}
    for tag, a, b in recs:
        if t0 <= a and b <= t1:
            out[tag] = out.get(tag, 0.0) + (b - a)
    if "shrink" in out:
        out["own"] = out["shrink"] - out.get("up", 0.0)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--requests", default="T1")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--sync-attach", action="store_true", help="every level attaches before answering")
    ap.add_argument("--tree", type=Path, help="the source tree the instances run (default: this checkout)")
    a = ap.parse_args()
    jobspecs = a.bench_dir / "jobspecs"
    reqs = a.requests.split(",")
    js = {n: (jobspecs / f"{n}.yaml").read_bytes() for n in {*reqs, *FILLER.values()}}
    shrinks: list[tuple[str, float, float]] = []
    root = a.tree.resolve() if a.tree else Path(__file__).resolve().parents[3]
    with stamped_tree(STAMPER, "SHRINK_STAMPS_OUT", a.bench_dir, root, js, sync_attach=a.sync_attach, prefix="shrinks-") as (
        clients,
        job,
        collect,
    ):
        for name in reqs:
            for rep in range(3 + a.reps):
                g = clients["L4"].match_grow(job, js[name])
                for lv in LEVELS:
                    clients[lv].info()  # (waits for any attach after the answer)
                t0 = time.perf_counter()
                s = clients["L4"].shrink(job, jgf=g.jgf)
                t1 = time.perf_counter()
                if s.pending or not s.returned:
                    raise SystemExit(f"the shrink did not complete: {s}")
                if rep >= 3:
                    shrinks.append((name, t0, t1))
        recs = collect()
    mode = "sync attach" if a.sync_attach else "deferred attach (default)"
    print(f"nested Shrink L4 -> L0, {mode}, {a.reps} shrinks per request, medians in ms")
    for name in reqs:
        wins = [(t0, t1) for n, t0, t1 in shrinks if n == name]
        print(f"{name}: the client's call {statistics.median(t1 - t0 for t0, t1 in wins) * 1e3:.3f}")
        per = {lv: [_steps(recs[lv], t0, t1) for t0, t1 in wins] for lv in LEVELS[::-1]}
        tags = sorted({k for lv in per for s in per[lv] for k in s}, key=lambda k: (k != "Shrink", k != "shrink", k != "own", k != "up", k))
        print(f"  {'step':<20}" + "".join(f"{lv:>9}" for lv in LEVELS[::-1]))
        for tag in tags:
            row = [statistics.median(s.get(tag, 0.0) for s in per[lv]) * 1e3 for lv in LEVELS[::-1]]
            print(f"  {tag:<20}" + "".join(f"{x:9.3f}" for x in row))


if __name__ == "__main__":
    main()
