"""Instruction counts (callgrind) of one kind of match at a time, for two trees, as ``bench match --against`` runs them.

    python examples/benchmarks/match/match_ir.py --bench-dir ../shared/bench --a TREE_A --b TREE_B \\
        [--kinds reserve,alloc,empty] [--request T8] [--matches 100]

Kinds, on ``--graph`` (default L0) with ``first`` and prune ``ALL:core``:

* ``reserve`` - the busy session of ``fluxlite bench match --against`` (seed 1, 60 reservations
  standing, 60 cancel + match rounds): only its matches that end in a reservation are counted;
* ``alloc``   - the same session, only its matches that allocate now;
* ``empty``   - ``--matches`` allocations of ``--request`` from the empty graph (the bench's empty cell).

Each tree runs in its own process under ``valgrind --tool=callgrind`` with a fixed hash seed,
address randomisation off (``setarch -R``) and one BLAS thread.  The counted matches are called
through ``itertools.starmap`` and collection is switched on inside ``starmap_next`` only (nothing
else in the engine uses it), so which kind of match a busy-session command is gets decided first by
a ``without_allocating_future`` probe that is not counted.  Printed per kind: both totals, the
instructions of CPython's type-attribute cache misses (``find_name_in_mro``: which hot names collide
depends on where the module's strings land, so it moves with unrelated edits), and the ratio b/a
with and without them.  Deterministic where this machine's timings move 2x within minutes; each
tree must be built as it is to be measured (``python setup.py build_ext --inplace`` in it).  Needs
valgrind.  About a minute per kind and tree.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from callgrind_ir import collected

CHILD = r"""
import gc, itertools, sys
from pathlib import Path
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
bench, kind, work, req, n = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]), sys.argv[4], int(sys.argv[5])
graph = bench / "graphs" / f"{sys.argv[6]}.graphml"
eng = Engine.from_file(graph, format="grug", policy="first", prune_filters="ALL:core")
counted = lambda js, op: list(itertools.starmap(eng.match, [(js, op)]))[0]
gc.collect(); gc.freeze()
if kind == "empty":
    js = parse_jobspec((bench / "jobspecs" / f"{req}.yaml").read_text())
    for _ in range(n):
        counted(js, "allocate")
        gc.collect(1)
    sys.exit(0)
from busy_replay import replay
from fluxlite.cli.bench_fluxion import _busy_session, busy_files
cmds, _ = _busy_session(str(graph), busy_files(bench, work), "first", "ALL:core", 1, 60, 60)
hits = 0
def match(js, op):
    global hits
    probe = eng.match(js, "without_allocating_future", fmt="simple")
    later = probe.ok and probe.at != 0
    if (kind == "reserve") == later and probe.ok:
        hits += 1
        r = counted(js, op)
    else:
        r = eng.match(js, op)
    gc.collect(1)
    return r
replay(eng, cmds, match)
print("counted", hits, file=sys.stderr)
"""


def count(tree: str, bench: str, kind: str, req: str, n: int, graph: str, work: str) -> tuple[int, int]:
    """(instructions of the counted matches, of which type-cache misses' MRO walks)."""
    return collected(
        tree, CHILD, [bench, kind, work, req, str(n), graph], toggle="starmap_next", work=work, what=kind
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="holds graphs/L0.graphml and jobspecs/")
    ap.add_argument("--a", required=True, help="the first source tree (e.g. a baseline), built")
    ap.add_argument("--b", required=True, help="the second source tree, built")
    ap.add_argument("--kinds", default="reserve,alloc,empty", help="comma-separated: reserve, alloc, empty")
    ap.add_argument("--request", default="T8", help="the empty kind's jobspec (default T8)")
    ap.add_argument("--matches", type=int, default=100, help="the empty kind's allocations (default 100)")
    ap.add_argument("--graph", default="L0", help="graphs/GRAPH.graphml of the bench directory (default L0)")
    a = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    kinds = a.kinds.split(",")
    bad = [k for k in kinds if k not in ("reserve", "alloc", "empty")]
    if bad:
        raise SystemExit(f"unknown kind(s): {', '.join(bad)} (reserve, alloc, empty)")
    bench = str(Path(a.bench_dir).resolve())
    print(f"a = {a.a}\nb = {a.b}\n{a.graph}: instructions of the counted matches (callgrind Ir; mro: of which type-cache misses)")
    for kind in kinds:
        what = f"empty {a.request} x{a.matches}" if kind == "empty" else f"busy {kind}"
        with tempfile.TemporaryDirectory(prefix="mir-") as work:
            ia, ma = count(a.a, bench, kind, a.request, a.matches, a.graph, work)
            ib, mb = count(a.b, bench, kind, a.request, a.matches, a.graph, work)
        print(
            f"  {what:16s} a {ia / 1e6:8.1f} M (mro {ma / 1e6:5.1f})   b {ib / 1e6:8.1f} M (mro {mb / 1e6:5.1f})   "
            f"b/a {ib / ia:.3f}   less mro {(ib - mb) / (ia - ma):.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
