"""Load-independent work of the select side of a match: Python opcodes executed, per match kind.

Timings on a shared 2-core machine move with the load, and valgrind's
instruction counts of a whole session moved by 1-2 % between identical runs
here (collector, allocation layout), more than the changes measured.  The
number of bytecode instructions CPython executes inside
``Traverser._schedule`` (the select walks of a match: the walk now, the
reservation's candidate times; not the update walk) is exact and repeatable.
It leaves out what C code does (NumPy in the window index, list slices), so
it is a measure of Python-level work, read together with the timings.

For each source tree (``--tree DIR``, e.g. ``git archive main | tar -x -C DIR``)
this runs, in a fresh process, the L0 busy session of ``fluxlite bench match
--against`` (the same command stream) and 100 ``allocate`` of T8 on the empty
graph, and prints the median and mean opcodes per allocation and per
reservation.  ``--set NAME=0`` turns a traverser switch off (e.g. ``jumps``).
``--scope match`` counts the whole traverser run of a match instead (select
and update walks, the output), ``--sessions`` picks the sessions.

    python examples/benchmarks/match/busyres_opcodes.py --bench-dir ../shared/bench \\
        --tree /tmp/main --tree .
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, statistics, sys
from fluxlite.api import Engine
from fluxlite.jobspec import load_jobspec
from fluxlite.match._traverser import Traverser
graph, policy, cmds_path, sets = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
method = sys.argv[5] if len(sys.argv) > 5 else "_schedule"
eng = Engine.from_file(graph, policy=policy, prune_filters="ALL:core")
for k, v in sets.items():
    setattr(eng.traverser, k, bool(int(v)))
n = [0]
def trace(frame, event, arg):
    frame.f_trace_opcodes = True
    if event == "opcode":
        n[0] += 1
    return trace
name = method
orig = getattr(Traverser, name)
def schedule(self, *a, **k):
    sys.settrace(trace)
    try:
        return orig(self, *a, **k)
    finally:
        sys.settrace(None)
setattr(Traverser, name, schedule)
out = {"allocate": [], "reserve": []}
jobid = 1
for line in open(cmds_path).read().splitlines():
    p = line.split()
    if not p:
        continue
    if p[0] == "cancel":
        eng.cancel(int(p[1]))
        continue
    n0 = n[0]
    r = eng.match(load_jobspec(p[2]), op=p[1], jobid=jobid)
    jobid += 1
    if r.ok:
        out["reserve" if r.reserved else "allocate"].append(n[0] - n0)
print(json.dumps({k: [len(v), statistics.median(v), statistics.mean(v)] for k, v in out.items() if v}))
"""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="the directory holding graphs/L0.graphml")
    ap.add_argument("--tree", action="append", required=True, help="a fluxlite source tree (repeatable)")
    ap.add_argument("--policy", default="first")
    ap.add_argument("--set", action="append", default=[], help="NAME=0|1: a traverser switch (repeatable)")
    ap.add_argument(
        "--scope",
        choices=("select", "match"),
        default="select",
        help="count the select walks (Traverser._schedule, default) or the whole run of a match",
    )
    ap.add_argument(
        "--method",
        default=None,
        help="count the opcodes of this Traverser method instead of --scope's (e.g. update: the update walk "
        "after a select)",
    )
    ap.add_argument("--sessions", default="busy,empty", help="busy, empty or both (default)")
    a = ap.parse_args(argv)
    method = a.method or ("_schedule" if a.scope == "select" else "run")
    from fluxlite.cli._bench_inputs import request_files
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files

    sets = dict(s.split("=", 1) for s in a.set)
    graph = str(Path(a.bench_dir) / "graphs" / "L0.graphml")
    with tempfile.TemporaryDirectory(prefix="busyres-opcodes-") as td:
        files = busy_files(Path(a.bench_dir), Path(td))
        busy, n_busy = _busy_session(graph, files, a.policy, "ALL:core", 1, 60, 60)
        t8 = dict(request_files(["T8"], Path(a.bench_dir), Path(td)))["T8"]
        sessions = {"busy": busy, "empty T8": f"match allocate {t8}\n" * 100}
        want = set(a.sessions.split(","))
        sessions = {k: v for k, v in sessions.items() if k.split()[0] in want}
        print(f"L0, policy {a.policy}, prune ALL:core; busy session: {n_busy} matches; empty: 100 x T8; "
              f"switches {sets or 'default'}; opcodes of Traverser.{method}")  # fmt: skip
        print(
            f"{'tree':24s} {'session':9s} {'kind':9s} {'matches':>7s} {'median':>9s} {'mean':>9s}  median vs first tree"
        )
        base: dict[tuple[str, str], float] = {}
        for tree in a.tree:
            env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()), PYTHONHASHSEED="0")
            for name, cmds in sessions.items():
                path = Path(td) / "cmds"
                path.write_text(cmds)
                r = subprocess.run([sys.executable, "-c", _CHILD, graph, a.policy, str(path), json.dumps(sets), method],
                                   capture_output=True, text=True, env=env, cwd=td, check=True)  # fmt: skip
                for kind, (cnt, med, mean) in json.loads(r.stdout).items():
                    b = base.setdefault((name, kind), med)
                    print(f"{Path(tree).resolve().name:24s} {name:9s} {kind:9s} {cnt:7d} {med:9.0f} {mean:9.0f}"
                          f"  {med / b:.3f}x")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
