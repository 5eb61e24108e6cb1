"""Load-independent figures of the select walk: instructions and visited vertices, per source tree.

Timings on a shared 2-core machine move with the load; the instruction
count of a session (valgrind's cachegrind, ``--cache-sim=no``) and the
number of vertices the select walk visits do not.  For each fluxlite source
tree (``--tree DIR``, e.g. ``git archive main | tar -x -C DIR``) this runs,
in one ``fluxlite query`` process each:

- the L0 busy session of ``fluxlite bench match --against`` (the same
  command stream: ``allocate_orelse_reserve`` until 60 reservations stand,
  then 60 rounds of cancel + match), and 100 ``allocate`` of T8 on the empty
  graph, under cachegrind, less a load-only run (``quit``): instructions
  per match (cancels included in the busy figure);
- the busy session again in process, counting calls of ``select``, the
  vertices it visits through ``_dom_dfv_plain`` by type, and the total
  PREORDER count (which must not change).

    python examples/benchmarks/match/selfirst_counts.py --bench-dir ../shared/bench \\
        --tree /tmp/main --tree .
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

_VISITS = r"""
import collections, contextlib, io, sys
from fluxlite.match._traverser import Traverser
import fluxlite.cli.query as q
c = collections.Counter()
sel, dfv = Traverser.select, Traverser._dom_dfv_plain
def select(self, *a):
    c["selects"] += 1
    return sel(self, *a)
def visit(self, meta, u, *a):
    c["visits " + self.g.v_type[u]] += 1
    return dfv(self, meta, u, *a)
Traverser.select, Traverser._dom_dfv_plain = select, visit
sys.stdin = open(sys.argv[1])
out = io.StringIO()
with contextlib.redirect_stdout(out):
    q.main(sys.argv[2:])
c["preorder total"] = sum(int(x) for x in __import__("re").findall(r"PREORDER VISIT COUNT=(\d+)", out.getvalue()))
print(dict(sorted(c.items())))
"""


def _irefs(tree: str, cmds: str, args: list[str], cwd: str) -> int:
    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()), PYTHONHASHSEED="0")
    argv = ["valgrind", "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    argv += [sys.executable, "-m", "fluxlite.cli.main", "query", *args]
    r = subprocess.run(argv, input=cmds, capture_output=True, text=True, env=env, cwd=cwd, check=True)
    m = re.search(r"I\s+refs:\s+([\d,]+)", r.stderr)
    if m is None:
        raise SystemExit(f"no instruction count from valgrind:\n{r.stderr[-2000:]}")
    return int(m.group(1).replace(",", ""))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="the directory holding graphs/L0.graphml")
    ap.add_argument("--tree", action="append", required=True, help="a fluxlite source tree (repeatable)")
    ap.add_argument("--policy", default="first")
    a = ap.parse_args(argv)
    from fluxlite.cli._bench_inputs import request_files
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files

    graph = str(Path(a.bench_dir) / "graphs" / "L0.graphml")
    args = ["-L", graph, "-f", "grug", "-S", "CA", "-P", a.policy, "-p", "ALL:core", "-e"]
    with tempfile.TemporaryDirectory(prefix="selfirst-counts-") as td:
        files = busy_files(Path(a.bench_dir), Path(td))
        busy, n_busy = _busy_session(graph, files, a.policy, "ALL:core", 1, 60, 60)
        t8 = dict(request_files(["T8"], Path(a.bench_dir), Path(td)))["T8"]
        empty = f"match allocate {t8}\n" * 100
        print(f"L0, policy {a.policy}, prune ALL:core; busy session: {n_busy} matches; empty: 100 x T8")
        print(f"{'tree':24s} {'busy Mi/match':>14s} {'T8 empty Mi/match':>18s}")
        base: list[float] = []
        for tree in a.tree:
            load = _irefs(tree, "quit\n", args, td)
            row = [
                (_irefs(tree, busy + "quit\n", args, td) - load) / n_busy / 1e6,
                (_irefs(tree, empty + "quit\n", args, td) - load) / 100 / 1e6,
            ]
            base = base or row
            ratios = " ".join(f"{x / b:.3f}x" for x, b in zip(row, base, strict=True))
            print(f"{Path(tree).resolve().name:24s} {row[0]:14.3f} {row[1]:18.3f}   vs first tree: {ratios}")
        path = Path(td) / "busy.cmds"
        path.write_text(busy + "quit\n")
        for tree in a.tree:
            env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
            r = subprocess.run([sys.executable, "-c", _VISITS, str(path), *args], capture_output=True,
                               text=True, env=env, cwd=td, check=True)  # fmt: skip
            print(f"{Path(tree).resolve().name:24s} busy session: {r.stdout.strip()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
