"""The busy session of ``fluxlite bench match --against`` split by request size, side by side with Fluxion.

``fluxlite bench match --against`` reports one median per busy session
(``alloc`` and ``reserve`` over a mix of T3..T8); this splits the same
session (the same command stream, built by ``fluxlite.cli.bench_fluxion``)
by request and answer, so that it shows where fluxlite is slower than
Fluxion.  Each run is a fresh process per program, programs in turns
(Fluxion first in the first run); the figure per cell is the median over
runs of the run's median ELAPSE (ms) for that request and answer.  Extra
fluxlite source trees (``--tree DIR``, e.g. ``git archive main | tar -x -C
DIR``) run in the same turns.  Answers (job, allocated/reserved, time) are
compared with Fluxion's; a difference is reported.

    python examples/benchmarks/match/busy_by_request.py --against \\
        /root/.cache/fluxlite/flux-0.88.0/bin/resource-query --bench-dir ../shared/bench \\
        --policy first --runs 9 --tree /tmp/main
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from fluxlite.cli.bench_fluxion import _busy_session, busy_files, parse_session


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", required=True, help="Fluxion's resource-query")
    ap.add_argument("--bench-dir", required=True, help="the directory holding graphs/L0.graphml")
    ap.add_argument("--graph", default="L0")
    ap.add_argument("--policy", default="first")
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--tree", action="append", default=[], help="another fluxlite source tree (repeatable)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    graph = str(Path(a.bench_dir) / "graphs" / f"{a.graph}.graphml")
    args = ["-L", graph, "-f", "grug", "-S", "CA", "-P", a.policy, "-p", "ALL:core", "-e"]
    with tempfile.TemporaryDirectory(prefix="busy-by-request-") as td:
        files = busy_files(Path(a.bench_dir), Path(td))
        cmds, _n = _busy_session(graph, files, a.policy, "ALL:core", a.seed, 60, 60)
        names = {v: k.split("-")[0] for k, v in files.items()}
        reqs = [names[line.split()[-1]] for line in cmds.splitlines() if line.startswith("match ")]
        progs: list[tuple[str, list[str], dict[str, str] | None]] = [
            ("fluxion", [a.against], None),
            ("fluxlite", [sys.executable, "-m", "fluxlite.cli.main", "query"], None),
        ]
        for t in a.tree:
            progs.append((Path(t).name, [sys.executable, "-m", "fluxlite.cli.main", "query"],
                          dict(os.environ, PYTHONPATH=str(Path(t).resolve()))))  # fmt: skip
        cells: dict[str, dict[tuple[str, str], list[float]]] = {w: defaultdict(list) for w, _c, _e in progs}
        whole: dict[str, dict[str, list[float]]] = {w: defaultdict(list) for w, _c, _e in progs}
        answers: dict[str, list] = {}
        for k in range(a.runs):
            for who, argv_, env in progs[k % len(progs) :] + progs[: k % len(progs)]:
                out = subprocess.run(argv_ + args, input=cmds + "quit\n", capture_output=True, text=True,
                                     env=env, cwd=td, check=True).stdout  # fmt: skip
                recs = parse_session(out)
                answers.setdefault(who, [(r.get("jobid"), r["status"], r.get("at")) for r in recs])
                per: dict[tuple[str, str], list[float]] = defaultdict(list)
                for req, r in zip(reqs, recs, strict=True):
                    per[(r["status"], req)].append(r["ms"])
                for key, ms in per.items():
                    cells[who][key].append(statistics.median(ms))
                for st in ("allocated", "reserved"):
                    whole[who][st].append(statistics.median(r["ms"] for r in recs if r["status"] == st))
    names_ = [w for w, _c, _e in progs]
    print(f"{a.graph} busy session, policy {a.policy}, {a.runs} runs per program; ms (median of run medians)")
    print(f"{'answer':10s} {'req':4s} {'n':>3s} " + " ".join(f"{w:>9s}" for w in names_)
          + "  " + " ".join(f"{w + '/fx':>12s}" for w in names_[1:]))  # fmt: skip
    for key in sorted(cells["fluxion"]):
        n = sum(1 for s, r in zip([x[1] for x in answers["fluxion"]], reqs, strict=True) if (s, r) == key)
        row = [statistics.median(cells[w][key]) for w in names_]
        print(f"{key[0]:10s} {key[1]:4s} {n:3d} " + " ".join(f"{x:9.3f}" for x in row)
              + "  " + " ".join(f"{x / row[0]:12.2f}" for x in row[1:]))  # fmt: skip
    for st in ("allocated", "reserved"):
        row = [statistics.median(whole[w][st]) for w in names_]
        print(f"{st:10s} {'all':4s} {'':3s} " + " ".join(f"{x:9.3f}" for x in row)
              + "  " + " ".join(f"{x / row[0]:12.2f}" for x in row[1:]))  # fmt: skip
    same = [w for w in names_[1:] if answers[w] == answers["fluxion"]]
    print("answers identical to Fluxion's:", ", ".join(same) or "none",
          "; differ:", ", ".join(w for w in names_[1:] if w not in same) or "none")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
