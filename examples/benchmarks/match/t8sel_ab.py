"""Paired A/B timing of two fluxlite trees through ``fluxlite query -e`` on L0 (``first``).

    python examples/benchmarks/match/t8sel_ab.py --bench-dir ../shared/bench \\
        --base /tmp/main --new /tmp/branch --pairs 12 > t8sel-ab.txt

For each pair, the two trees run the same command stream in fresh processes,
one after the other (the order alternates between pairs); each run's figure
is its median ``ELAPSE`` over the matches of a kind.  Sessions: ``empty``, 100
``match allocate`` of T8 from the empty graph; ``busy``, the bench's busy
session (``fluxlite bench match --against``, seed 1).  Printed per figure:
both trees' medians over the pairs, their ratio, and the median of the
pairs' own ratios with their range (the load changes between pairs, less
within one; a range that spans 1.00 is not resolved).  Run it with the same
tree twice to see what this machine resolves.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path


def _run(tree: str, graph: str, cmds: str, cwd: str) -> list[dict]:
    from fluxlite.cli.bench_fluxion import parse_session

    env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
    argv = [sys.executable, "-m", "fluxlite.cli.main", "query", "-L", graph, "-f", "grug", "-S", "CA"]
    argv += ["-P", "first", "-p", "ALL:core", "-e"]
    out = subprocess.run(
        argv, input=cmds + "quit\n", capture_output=True, text=True, env=env, cwd=cwd, check=True
    )
    return parse_session(out.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="the directory holding graphs/L0.graphml")
    ap.add_argument("--base", required=True, help="the baseline source tree")
    ap.add_argument("--new", required=True, help="the source tree measured against it")
    ap.add_argument("--pairs", type=int, default=12)
    ap.add_argument("--sessions", default="empty,busy")
    a = ap.parse_args(argv)
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files

    graph = str(Path(a.bench_dir) / "graphs" / "L0.graphml")
    with tempfile.TemporaryDirectory(prefix="t8sel-ab-") as td:
        t8 = str(Path(a.bench_dir) / "jobspecs" / "T8.yaml")
        sessions = {"empty": (f"match allocate {t8}\n" * 100, ("allocated",))}
        busy, _n = _busy_session(
            graph, busy_files(Path(a.bench_dir), Path(td)), "first", "ALL:core", 1, 60, 60
        )
        sessions["busy"] = (busy, ("allocated", "reserved"))
        print(f"base {a.base}\nnew  {a.new}\nL0, policy first, {a.pairs} pairs, alternating order")
        for name in a.sessions.split(","):
            cmds, kinds = sessions[name]
            figs: dict[str, dict[str, list[float]]] = {k: {"base": [], "new": []} for k in kinds}
            for i in range(a.pairs):
                for who in ("base", "new") if i % 2 == 0 else ("new", "base"):
                    recs = _run(a.base if who == "base" else a.new, graph, cmds, td)
                    for k in kinds:
                        figs[k][who].append(statistics.median(r["ms"] for r in recs if r["status"] == k))
            for k, f in figs.items():
                b, n = f["base"], f["new"]
                ratios = [y / x for x, y in zip(b, n, strict=True)]
                paired = statistics.median(ratios)
                mb, mn = statistics.median(b), statistics.median(n)
                print(
                    f"{name:5s} {k:9s} base {mb:.3f} ms  new {mn:.3f} ms  ratio {mn / mb:.3f}  paired {paired:.3f}"
                    f" (range {min(ratios):.3f}-{max(ratios):.3f})"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
