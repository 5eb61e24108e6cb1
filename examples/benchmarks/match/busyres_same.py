"""Byte-for-byte check of two fluxlite trees on L0 busy sessions (visit counts included).

For seeds 1-3 and the policies first, low, high, lonode and locality, the busy
session of ``fluxlite bench match --against`` (``allocate_orelse_reserve``
until 60 reservations stand, then 60 rounds of cancel + match) is run through
``fluxlite query -e`` of each tree; the outputs, less the ELAPSE and load-time
figures, must be identical.

    python examples/benchmarks/match/busyres_same.py --bench-dir ../shared/bench --tree /tmp/main --tree .
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
    a = ap.parse_args(argv)
    if len(a.tree) != 2:
        ap.error("give --tree twice")
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files

    graph = str(Path(a.bench_dir) / "graphs" / "L0.graphml")
    differ = 0
    with tempfile.TemporaryDirectory(prefix="busyres-same-") as td:
        files = busy_files(Path(a.bench_dir), Path(td))
        for seed in (1, 2, 3):
            for pol in ("first", "low", "high", "lonode", "locality"):
                cmds, n = _busy_session(graph, files, pol, "ALL:core", seed, 60, 60)
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
                print(f"seed {seed} {pol:9s} {n:4d} matches  {'identical' if same else 'DIFFER'}")
    print(f"differing sessions: {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
