"""Byte-for-byte check of two fluxlite trees on L0 busy sessions (visit counts included).

For seeds 1-3 and the policies first, low, high, lonode and locality, the busy
session of ``fluxlite bench match --against`` (``allocate_orelse_reserve``
until 60 reservations stand, then 60 rounds of cancel + match) is run through
``fluxlite query -e`` of each tree; the outputs, less the ELAPSE and load-time
figures, must be identical.

    python examples/benchmarks/match/busyres_same.py --bench-dir ../shared/bench --tree /tmp/main --tree .

``--empty`` adds, for each of T1..T8 and the same policies, ``match allocate``
of the request from the empty graph until it is full, then 3 failing matches
and a cancel of every job (then one more match of each).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="the directory holding graphs/L0.graphml")
    ap.add_argument("--tree", action="append", required=True, help="a fluxlite source tree (give two)")
    ap.add_argument("--empty", action="store_true", help="also the empty-graph sessions of T1..T8")
    a = ap.parse_args(argv)
    if len(a.tree) != 2:
        ap.error("give --tree twice")
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files

    graph = str(Path(a.bench_dir) / "graphs" / "L0.graphml")
    differ = 0
    with tempfile.TemporaryDirectory(prefix="busyres-same-") as td:
        files = busy_files(Path(a.bench_dir), Path(td))
        sessions = []
        for seed in (1, 2, 3):
            for pol in ("first", "low", "high", "lonode", "locality"):
                cmds, n = _busy_session(graph, files, pol, "ALL:core", seed, 60, 60)
                sessions.append((f"seed {seed}", pol, cmds, n))
        if a.empty:
            from fluxlite.cli._bench_inputs import request_files
            from fluxlite.cli.bench_fluxion import _capacity

            reqs = [f"T{i}" for i in range(1, 9)]
            for req, path in request_files(reqs, Path(a.bench_dir), Path(td)):
                n = _capacity(128, req)
                cmds = f"match allocate {path}\n" * (n + 3)
                cmds += "".join(f"cancel {j}\n" for j in range(1, n + 1)) + f"match allocate {path}\n"
                for pol in ("first", "low", "high", "lonode", "locality"):
                    sessions.append((f"empty {req}", pol, cmds, n + 4))
        for name, pol, cmds, n in sessions:
            outs = []
            for tree in a.tree:
                env = dict(os.environ, PYTHONPATH=str(Path(tree).resolve()))
                argv2 = [sys.executable, "-m", "fluxlite.cli.main", "query", "-L", graph, "-f", "grug"]
                argv2 += ["-S", "CA", "-P", pol, "-p", "ALL:core", "-e"]
                r = subprocess.run(argv2, input=cmds + "quit\n", capture_output=True, text=True, env=env,
                                   cwd=td, check=True)  # fmt: skip
                outs.append(re.sub(r"(ELAPSE|Graph Load Time)[=:] ?[\d.]+", "", r.stdout))
            same = outs[0] == outs[1]
            differ += not same
            print(f"{name:8s} {pol:9s} {n:4d} matches  {'identical' if same else 'DIFFER'}")
    print(f"differing sessions: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
