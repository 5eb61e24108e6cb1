"""Paired in-process timing of the busy L0 session of ``fluxlite bench match --against``, two trees in turns.

    python examples/benchmarks/match/busy_ab.py --bench-dir ../shared/bench --a BASE_TREE --b TREE [--pairs 8]

The session's command stream is the bench's own (``_busy_session``: ``allocate_orelse_reserve`` of a
seeded T3..T8 mix until the graph is full and reservations stand, then cancels and new matches).  Each
pair runs tree A then tree B (the order alternating between pairs) in fresh processes with the tree on
``PYTHONPATH``; each process replays the session ``--rounds`` times and times every ``Engine.match``
with ``time.perf_counter`` (the garbage-collector upkeep ``fluxlite query`` does runs between matches,
untimed).  Printed per pair: the medians of allocations and of reservations (ms) and B/A; then the
median of the pairs' ratios and their range.  Pairs cancel most of this machine's drift, which moves
separate runs by more than 10 %; a ratio whose range spans 1.00 is not resolved.  Each tree must be
built as it is to be measured (``python setup.py build_ext --inplace`` in it, or not).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import json, statistics, sys, time
from pathlib import Path
from fluxlite.api import Engine
from fluxlite.cli.bench_fluxion import _busy_session, busy_files
from fluxlite.gcpolicy import OperationGC
from fluxlite.jobspec import parse_jobspec
bench, work, policy, rounds = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
graph = str(bench / "graphs" / "L0.graphml")
cmds, _ = _busy_session(graph, busy_files(bench, work), policy, "ALL:core", 1, 60, 60)
gc = OperationGC()
eng = Engine.from_file(graph, format="grug", policy=policy)
gc.settle()
specs, alloc, resv = {}, [], []
for _ in range(rounds):
    ids, k = {}, 0
    for line in cmds.splitlines():
        p = line.split()
        if p and p[0] == "match":
            k += 1
            js = specs.get(p[2]) or specs.setdefault(p[2], parse_jobspec(Path(p[2]).read_text()))
            t = time.perf_counter()
            r = eng.match(js, p[1])
            dt = time.perf_counter() - t
            gc.after()
            if r.ok:
                ids[k] = r.jobid
                (resv if r.reserved else alloc).append(dt * 1e3)
        elif p and p[0] == "cancel" and int(p[1]) in ids:
            eng.cancel(ids.pop(int(p[1])))
    for j in ids.values():
        eng.cancel(j)
print(json.dumps([statistics.median(alloc), statistics.median(resv), len(alloc), len(resv)]))
"""


def _run(tree: str, bench: str, work: str, policy: str, rounds: int) -> list[float]:
    env = {k: v for k, v in os.environ.items() if k != "FLUXLITE_PURE"}
    env["PYTHONPATH"] = str(Path(tree).resolve())
    out = subprocess.run(
        [sys.executable, "-c", CHILD, bench, work, policy, str(rounds)],
        capture_output=True, text=True, env=env, cwd=work, check=False,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"tree {tree} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="holds graphs/L0.graphml and jobspecs/")
    ap.add_argument("--a", required=True, help="the first source tree (e.g. a baseline)")
    ap.add_argument("--b", required=True, help="the second source tree")
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=6, help="session replays per process")
    ap.add_argument("--policy", default="first")
    a = ap.parse_args(argv)
    if a.pairs < 1 or a.rounds < 1:
        ap.error("--pairs and --rounds must be at least 1")
    bench = str(Path(a.bench_dir).resolve())
    print(f"a = {a.a}\nb = {a.b}\nbusy L0 {a.policy}, {a.rounds} replays per process; medians of Engine.match (ms)")
    ra: list[float] = []
    rr: list[float] = []
    with tempfile.TemporaryDirectory(prefix="busyab-") as work:
        for i in range(a.pairs):
            order = [("a", a.a), ("b", a.b)] if i % 2 == 0 else [("b", a.b), ("a", a.a)]
            got = {side: _run(tree, bench, work, a.policy, a.rounds) for side, tree in order}
            ra.append(got["b"][0] / got["a"][0])
            rr.append(got["b"][1] / got["a"][1])
            print(
                f"  pair {i + 1:2d}  alloc a {got['a'][0]:.3f} b {got['b'][0]:.3f} b/a {ra[-1]:.3f}   "
                f"reserve a {got['a'][1]:.3f} b {got['b'][1]:.3f} b/a {rr[-1]:.3f}",
                flush=True,
            )
    print(
        f"allocation b/a: median {statistics.median(ra):.3f} (range {min(ra):.3f}-{max(ra):.3f}); "
        f"reservation b/a: median {statistics.median(rr):.3f} (range {min(rr):.3f}-{max(rr):.3f})"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
