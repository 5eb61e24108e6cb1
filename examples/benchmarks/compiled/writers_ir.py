"""Instruction counts (callgrind) of the matches alone, for two source trees: what compiling a module buys.

    python examples/benchmarks/compiled/writers_ir.py --bench-dir ../shared/bench --a TREE_A --b TREE_B

Each tree must be built as it is to be measured (``python setup.py build_ext --inplace`` in it, or
not).  For each scenario the tree runs in its own process under ``valgrind --tool=callgrind``
with collection switched on only inside ``Traverser.run`` (the matches: loading, parsing and
output joining are not counted), a fixed hash seed, one BLAS thread and address randomisation off
(``../callgrind_ir.py``; the last two since the thirteenth session), so the figures are deterministic
where this machine's timings move 2x within minutes.  One part of them is not the code's own: CPython's
type-attribute cache (4,096 slots) is indexed by the address of the attribute's name, so which hot
names collide, and walk the traverser's nine classes on every lookup, changes with any edit that
moves the module's strings.  The second column (``mro``) gives those walks' instructions
(``find_name_in_mro``, inclusive; 5-30 M on the busy session in the eleventh session's builds);
compare the totals less that column to see the change itself.  Scenarios on L0 (128 nodes), a job holding 8 nodes:

* ``jgf``     - five grows of 64 nodes (T1) written as JGF text (``-F jgf``), each shrunk back;
* ``columns`` - the same grows recorded for the hierarchy's columns wire form (lazy JGF writer);
* ``rv1``     - five allocations of 64 nodes written as R (rv1), each cancelled;
* ``busy``    - the busy ``first`` session of ``fluxlite bench match --against`` (simple writer).

Needs valgrind (Debian package).  About a minute per scenario and tree.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from callgrind_ir import collected

#: the compiled ``Traverser.run`` (its number in the symbol follows the class's methods before it)
TOGGLE = "__pyx_pw_8fluxlite_5match_10_traverser_9Traverser_??run"

CHILD = r"""
import sys
from pathlib import Path
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.match import Traverser
from fluxlite.writers.jgf import JgfColumnsWriter
bench, scenario, work = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
spec = {t: parse_jobspec((bench / "jobspecs" / f"{t}.yaml").read_text()) for t in ("T1", "T4")}
eng = Engine.from_file(bench / "graphs" / "L0.graphml", format="grug", policy="first")
if scenario == "busy":
    from busy_replay import replay
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files
    cmds, _ = _busy_session(str(bench / "graphs" / "L0.graphml"), busy_files(bench, work), "first", "ALL:core", 1, 60, 60)
    replay(eng, cmds)
    sys.exit(0)
job = eng.allocate(spec["T4"], fmt="jgf").jobid
w = JgfColumnsWriter()
eng.set_writer("jgf", w)
for _ in range(5):
    if scenario == "rv1":
        eng.cancel(eng.allocate(spec["T1"], fmt="rv1").jobid)
        continue
    w.lazy = scenario == "columns"
    eng.grow(job, spec["T1"], fmt="jgf")
    w.lazy = False
    g = eng.graph
    eng.shrink(job, paths=[g.path(v) for v in w.emitted[0] if g.v_type[v] == "node"])
"""


def count(tree: str, bench: str, scenario: str, work: str) -> tuple[int, int]:
    """(instructions inside Traverser.run, of which type-cache misses' MRO walks)."""
    return collected(tree, CHILD, [bench, scenario, work], toggle=TOGGLE, work=work, what=scenario)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="holds graphs/L0.graphml and jobspecs/")
    ap.add_argument("--a", required=True, help="the first source tree (e.g. a baseline)")
    ap.add_argument("--b", required=True, help="the second source tree")
    ap.add_argument("--scenarios", default="jgf,columns,rv1,busy")
    a = ap.parse_args(argv)
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    bench = str(Path(a.bench_dir).resolve())
    print(f"a = {a.a}\nb = {a.b}\ninstructions inside Traverser.run (callgrind Ir; mro: of which type-cache misses)")
    for sc in a.scenarios.split(","):
        with tempfile.TemporaryDirectory(prefix="wir-") as work:
            ia, ma = count(a.a, bench, sc, work)
            ib, mb = count(a.b, bench, sc, work)
        print(
            f"  {sc:8s} a {ia / 1e6:8.1f} M (mro {ma / 1e6:5.1f})   b {ib / 1e6:8.1f} M (mro {mb / 1e6:5.1f})   "
            f"b/a {ib / ia:.3f}   less mro {(ib - mb) / (ia - ma):.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
