"""Instructions executed by one deadline-bench run, counted by valgrind: a CPU figure that load does not move.

On a machine shared with other work, ``fluxlite sim deadline bench``'s wall
and CPU seconds of the same code move by 30 % or more between runs.  This
counts the instructions one run of the bench's trace executes (``_one``:
trace, machine and simulation, in a fresh interpreter) with valgrind's
callgrind tool, for this checkout and, with ``--baseline-tree``, for another
checkout of fluxlite (e.g. ``git archive main | tar -x -C DIR``), and prints
both and their ratio.  It also checks that both runs accepted and completed
the same jobs.  Slow: about 50x a plain run per tree.

    python examples/experiments/deadline/instructions.py count --baseline-tree /tmp/main
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

_CODE = (
    "import json, sys\n"
    "from fluxlite.sim.deadline.bench import _one\n"
    "r = _one(sys.argv[1], 'normal', 'uniform', 'async', int(sys.argv[2]), 'auto')\n"
    "print(json.dumps({k: r[k] for k in ('accepted', 'completed', 'events')}))\n"
)


def count(strategy: str, jobs: int, tree: str | None) -> tuple[int, dict[str, int]]:
    """(instructions, the run's accepted/completed/events) of one run of ``tree``'s fluxlite (None: this one)."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(Path(tree).resolve())
    p = subprocess.run(
        ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c", _CODE, strategy, str(jobs)],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        check=False,
    )
    m = re.search(r"Collected : (\d+)", p.stderr)
    if p.returncode != 0 or m is None:
        raise SystemExit(f"valgrind run failed: {p.stderr[-500:]}")
    return int(m.group(1)), json.loads(p.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("strategy")
    ap.add_argument("--jobs", type=int, default=1000)
    ap.add_argument("--baseline-tree", metavar="DIR", help="a checkout of another revision")
    a = ap.parse_args(argv)
    n, res = count(a.strategy, a.jobs, None)
    line = f"{a.strategy}: {n / 1e9:.3f} G instructions {res}"
    if a.baseline_tree:
        b, bres = count(a.strategy, a.jobs, a.baseline_tree)
        line += f"; baseline {b / 1e9:.3f} G {bres}; ratio {n / b:.3f}; same result: {res == bres}"
    print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
