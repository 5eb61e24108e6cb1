"""When the leaf of a nested MatchGrow is ready again, for two source trees in turns, with no JGF memo.

    python examples/benchmarks/hierarchy/leaf_ready.py --bench-dir ../shared/bench --tree OTHER
        [--request T1] [--reps 20] [--rounds 3]

Starts the five levels of ``fluxlite bench hierarchy`` (as ``hop_stamps.py`` does, through
``_stamped_tree.py``) for this checkout and for ``--tree`` (a source tree built as it is to be
measured), one after the other in each round, the order alternating; the leaf grows its job by REQUEST
``--reps`` times after 3 unmeasured grows, each shrunk back.  Per tree and round it prints the medians
of: the client's round trip, the leaf's server time, when the leaf is ready again (its own attach
done, as ``fluxlite bench hierarchy`` reports it), the leaf's attach (wall and thread CPU time) and
when it started (from the client's call).

Up to d0f0d06 an instance kept the JGF text of the last 16 columns payloads it converted, so a grow
answered with the same payload bytes as a recent one (this benchmark's grows: the same subgraph
each time, shrunk back in between) skipped the leaf's JGF rendering.  The memo is switched off in
every tree that has it (a ``sitecustomize`` module replaces ``Instance._remember_jgf``), so both trees
render the JGF of every grow, as a grow of a subgraph not seen before does.  Loopback only.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

NO_MEMO = """
import sys
if "--name" in sys.argv:
    from hierarchy.instance import Instance
    if hasattr(Instance, "_remember_jgf"):  # (a tree before d0f0d06: its memo off)
        Instance._remember_jgf = lambda self, payload, text: text
"""

FIGURES = ("rtt", "server", "ready", "attach", "attach_cpu", "start")


def _one(tree: Path, bench: Path, request: str, reps: int) -> dict[str, float]:
    """One tree's medians (ms) over ``reps`` grows (in a process of its own with the tree first on the
    path: the compiled modules of two trees cannot share one process)."""
    from _stamped_tree import stamped_tree

    from hierarchy.bench import FILLER

    js = {n: (bench / "jobspecs" / f"{n}.yaml").read_bytes() for n in {request, *FILLER.values()}}
    rows: list[dict[str, float]] = []
    with stamped_tree(NO_MEMO, "LEAF_READY_OUT", bench, tree, js, sync_attach=False, prefix="ready-") as (
        clients,
        job,
        _collect,
    ):
        for rep in range(3 + reps):
            called, t0 = time.time(), time.perf_counter()
            g = clients["L4"].match_grow(job, js[request])
            rtt = time.perf_counter() - t0
            late = clients["L4"].info()["last_deferred"]
            for lv in ("L3", "L2", "L1"):
                clients[lv].info()  # (waits for their attach after the answer)
            clients["L4"].shrink(job, jgf=g.jgf)
            if rep < 3:
                continue
            done = late["done_at"] - called
            rows.append(
                {
                    "rtt": rtt,
                    "server": g.timings[0].server_s,
                    "ready": max(rtt, done),
                    "attach": late["attach_update_s"],
                    "attach_cpu": late["cpu_s"],
                    "start": done - late["attach_update_s"],
                }
            )
    return {k: statistics.median(r[k] for r in rows) * 1e3 for k in FIGURES}


def _run(tree: Path, bench: Path, request: str, reps: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    args = [sys.executable, __file__, "--one", str(tree), "--bench-dir", str(bench), "--request", request]
    p = subprocess.run([*args, "--reps", str(reps)], env=env, capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"{tree}: the run failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--tree", type=Path, help="the other source tree (built)")
    ap.add_argument("--one", type=Path, help=argparse.SUPPRESS)  # (one tree's run, in its own process)
    ap.add_argument("--request", default="T1", help="the grow (default T1: 64 nodes)")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    bench = a.bench_dir.resolve()
    if a.one is not None:
        print(json.dumps(_one(a.one, bench, a.request, a.reps)))
        return
    if a.tree is None:
        ap.error("--tree is required")
    trees = {"this": HERE.parents[2], "other": a.tree.resolve()}
    out: dict[str, list[dict[str, float]]] = {k: [] for k in trees}
    print(f"{a.request}, {a.reps} grows per tree and round, medians in ms; other = {trees['other']}")
    print(f"  {'round':<6} {'tree':<6} " + " ".join(f"{k:>10}" for k in FIGURES), flush=True)
    for r in range(a.rounds):
        order = ["this", "other"] if r % 2 == 0 else ["other", "this"]
        for name in order:
            got = _run(trees[name], bench, a.request, a.reps)
            out[name].append(got)
            print(f"  {r + 1:<6} {name:<6} " + " ".join(f"{got[k]:10.3f}" for k in FIGURES), flush=True)
    print("  median of the rounds:")
    for name in trees:
        print(
            f"  {'':<6} {name:<6} "
            + " ".join(f"{statistics.median(x[k] for x in out[name]):10.3f}" for k in FIGURES)
        )
    print(
        "  this / other: "
        + " ".join(
            f"{k} {statistics.median(x[k] for x in out['this']) / statistics.median(x[k] for x in out['other']):.3f}"
            for k in FIGURES
        )
    )


if __name__ == "__main__":
    main()
