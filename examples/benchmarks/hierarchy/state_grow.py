"""Grows and shrinks through the five levels with state files on, this tree against another.

    python examples/benchmarks/hierarchy/state_grow.py [--bench-dir ../shared/bench] [--tree DIR]
        [--rounds 3] [--reps 10] [--requests T8,T1]

The tree of ``fluxlite bench hierarchy`` (L0 on ``graphs/L0.graphml``, L1..L4 leasing 8, 4, 2 and 1
nodes, each filled) as real instance processes on Unix sockets, every instance with a state file
(``--state``, what an instance that must survive a restart runs with); the leaf's job grows by each
request and shrinks back, ``--reps`` times (2 more unmeasured first).  Per request, the medians of:
the leaf's grow as its client sees it, the time until every level is done with it (``Info`` waits
for a level's deferred attach), and the shrink.  Then the size of each level's state file and of its
payload directory (where one exists).  With ``--tree DIR`` (a source tree built in place, e.g. an
older commit from ``git archive``) the two trees take turns, ``--rounds`` each, the order
alternating, and the ratios this/other are printed; ``--no-state`` runs the same without state files
(the figure the state files are measured against).  Loopback only; the run directories are temporary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

#: run in a fresh process with the tree to measure first on PYTHONPATH; prints one JSON line
CHILD = r"""
import json, sys, tempfile, time
from pathlib import Path
from hierarchy import InstanceClient, read_secret_file
from hierarchy._launch import TreeSpec, owner_credential, start_tree
from hierarchy.bench import FILLER, LEVELS, fill_levels, nested_nodes
bench, reps, reqs, state = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(","), sys.argv[4] == "1"
js = {n: (bench / "jobspecs" / f"{n}.yaml").read_bytes() for n in {*reqs, *FILLER.values()}}
out = {"requests": {}, "files": {}}
with tempfile.TemporaryDirectory(prefix="stg-", dir="/tmp") as tmp:
    run_dir = Path(tmp) / "run"
    run_dir.mkdir()
    spec = TreeSpec(nodes=nested_nodes(bench), transport="unix", policy="first", child_grace=600.0,
                    rpc_timeout=120.0, state=state)
    tree = start_tree(spec, run_dir)
    secret, cred = read_secret_file(run_dir / "secret"), owner_credential(run_dir)
    clients = {r["name"]: InstanceClient(r["address"], secret, timeout=120.0, credential=cred) for r in tree.records}
    try:
        job = fill_levels(clients, js)
        for name in reqs:
            rows = {"grow": [], "settled": [], "shrink": []}
            for rep in range(2 + reps):
                t0 = time.perf_counter()
                g = clients["L4"].match_grow(job, js[name])
                t1 = time.perf_counter()
                for lv in LEVELS:
                    clients[lv].info()
                t2 = time.perf_counter()
                clients["L4"].shrink(job, jgf=g.jgf)
                t3 = time.perf_counter()
                for lv in LEVELS:
                    clients[lv].info()
                if rep >= 2:
                    rows["grow"].append(t1 - t0)
                    rows["settled"].append(t2 - t0)
                    rows["shrink"].append(t3 - t2)
            out["requests"][name] = rows
        for r in tree.records:
            if r.get("state"):
                p = Path(r["state"])
                d = p.with_name(p.name + ".payloads")
                out["files"][r["name"]] = [p.stat().st_size, sum(f.stat().st_size for f in d.iterdir()) if d.exists() else 0]
    finally:
        for c in clients.values():
            c.close()
        tree.teardown()
print(json.dumps(out))
"""


def _run(tree: Path, bench: Path, reps: int, reqs: str, state: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [sys.executable, "-c", CHILD, str(bench), str(reps), reqs, "1" if state else "0"]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, cwd="/tmp")
    if r.returncode != 0:
        raise SystemExit(f"run of {tree} failed: {r.stderr.strip().splitlines()[-3:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--tree", type=Path, help="another source tree to measure in turn (built in place)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--requests", default="T8,T1")
    ap.add_argument("--no-state", action="store_true", help="instances without state files")
    a = ap.parse_args()
    bench = a.bench_dir.resolve()
    here = Path(__file__).resolve().parents[3]
    trees = {"this": here, **({"other": a.tree.resolve()} if a.tree else {})}
    runs: dict[str, list[dict]] = {k: [] for k in trees}
    for r in range(a.rounds):
        order = list(trees) if r % 2 == 0 else list(trees)[::-1]
        for name in order:
            runs[name].append(_run(trees[name], bench, a.reps, a.requests, not a.no_state))
            print(f"  round {r + 1}: {name} done", file=sys.stderr)
    print(
        f"state files {'off' if a.no_state else 'on'}; {a.rounds} rounds x {a.reps} grows per request; medians in ms"
    )
    for name, tree in trees.items():
        print(f"{name}: {tree}")
    for req in a.requests.split(","):
        for q in ("grow", "settled", "shrink"):
            med = {
                k: statistics.median(x for run in v for x in run["requests"][req][q]) * 1e3
                for k, v in runs.items()
            }
            line = f"  {req} {q:<8} " + "  ".join(f"{k} {v:8.1f}" for k, v in med.items())
            if "other" in med:
                line += f"   ratio {med['this'] / med['other']:.3f}"
            print(line)
    for name, v in runs.items():
        files = v[-1]["files"]
        if files:
            print(f"{name}: state file / payload bytes per level after the run: "
                  + ", ".join(f"{lv} {s[0]:,} / {s[1]:,}" for lv, s in files.items()))  # fmt: skip


if __name__ == "__main__":
    main()
