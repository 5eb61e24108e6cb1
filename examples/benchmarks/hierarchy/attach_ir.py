"""Instruction counts (callgrind) of one level's attach of a 64-node grow from the columns wire form, two trees.

    python examples/benchmarks/hierarchy/attach_ir.py --bench-dir ../shared/bench --a TREE_A --b TREE_B [--request T8] [--refill]
    python examples/benchmarks/hierarchy/attach_ir.py --bench-dir ../shared/bench --b TREE --sizes T8,T7,T6,T5,T4,T3 [--refill]

What ``fluxlite bench hierarchy`` calls a level's attach+update, in process and without gRPC:
L0 (``graphs/L0.graphml``) answers REQUEST (default T1, 64 nodes) with the ``jgf`` writer and the
payload is encoded in the columns wire form (``hierarchy._wire``); each of K children (a lease of
8 nodes, T4, holding one job) then decodes it and attaches it to its job
(``Engine.attach(..., allocate_to=job)``), once each.  Each tree runs twice under
``valgrind --tool=callgrind`` with a fixed hash seed, with and without the K attaches (address randomisation off, by ``setarch -R``); the
difference over K is one attach's instructions (decode + create + prime + allocate), free of the
setup's.  Deterministic where this machine's timings move 2x within minutes.

``--sizes T8,T7,...`` instead counts one tree (``--b``) per request size, with collection on only
inside the attach loop (``--toggle-collect`` on the ``itertools.starmap`` that drives it, one run
per size), and fits instructions = fixed + per_element * n (n = vertices + edges): what an attach
costs whatever its size, and what each vertex and edge adds.

Each tree must be built as it is to be measured (``python setup.py build_ext --inplace`` in it).  Needs valgrind.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path

from hierarchy.bench import fit_line

CHILD = r"""
import os, sys
from pathlib import Path
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
from fluxlite.readers import load_graph
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy import _wire
bench, k, do, req, refill = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4], sys.argv[5] == "1"
spec = {t: parse_jobspec((bench / "jobspecs" / f"{t}.yaml").read_text()) for t in {req, "T4"}}
parent = Engine.from_file(bench / "graphs" / "L0.graphml", format="grug", policy="first")
lease = parent.allocate(spec["T4"], fmt="jgf").text
writer = JgfColumnsWriter()
parent.set_writer("jgf", writer)
parent.allocate(spec[req], fmt="jgf")
payload = _wire.encode(parent.graph, writer.emitted)
kids = []
for _ in range(k):
    child = Engine(load_graph(lease, format="jgf"), policy="first")
    kids.append((child, child.allocate(spec["T4"], fmt="jgf").jobid))
    if refill:  # the same subgraph attached, shrunk and removed before: the measured attach refills its holes
        g, dom = child.graph, child.dom
        new = child.attach(_wire.decode(payload), allocate_to=kids[-1][1], at=0, duration=3600)
        inside = set(new)
        roots = [v for v in new if g.parent(v, dom) not in inside]
        child.shrink(kids[-1][1], jgf=_wire.as_jgf(payload))
        child.remove_subgraph(paths=[g.path(r, dom) for r in roots])
cols = _wire.decode(payload)  # (the subgraph's size, read in both runs: not in the difference)
n_el = len(cols) + len(cols.e_src)
import gc
gc.collect()
gc.disable()
if do:
    import itertools
    def one(child, job):  # (driven by starmap: --sizes collects inside starmap_next only)
        return child.attach(_wire.decode(payload), allocate_to=job, at=0, duration=3600)
    for new in itertools.starmap(one, kids):
        pass
    print("new", len(new), "n", n_el)
sys.stdout.flush()
os._exit(0)  # (the interpreter's teardown is not counted)
"""


def _ir(
    tree: Path, bench: Path, k: int, do: bool, req: str, refill: bool, toggle: bool = False
) -> tuple[int, int]:
    """Instructions of the child run, and the subgraph's vertices + edges (0 without the attaches)."""
    # (one BLAS thread: NumPy's OpenBLAS workers spin while idle, and callgrind counts every thread)
    env = {
        **os.environ,
        "PYTHONPATH": str(tree.resolve()),
        "PYTHONHASHSEED": "0",
        "OPENBLAS_NUM_THREADS": "1",
    }
    # address randomisation off where setarch can (CPython's type-attribute cache is indexed by
    # the names' addresses: with it on, the same tree moved 2 % from run to run)
    norand = ["setarch", platform.machine(), "-R"] if shutil.which("setarch") else []
    p = subprocess.run(
        [*norand, "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
         *(["--collect-atstart=no", "--toggle-collect=starmap_next"] if toggle else []), sys.executable, "-c", CHILD,
         str(bench), str(k), "1" if do else "0", req, "1" if refill else "0"],
        capture_output=True, text=True, env=env, cwd=tree, check=True,
    )  # fmt: skip
    m = re.search(r"refs:\s+([0-9,]+)", p.stderr)
    if m is None:
        raise SystemExit(f"no instruction count from callgrind:\n{p.stderr[-2000:]}")
    n = re.search(r"^new \d+ n (\d+)$", p.stdout, re.M)
    return int(m.group(1).replace(",", "")), int(n.group(1)) if n else 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--a", type=Path, help="the baseline tree (built; not with --sizes)")
    ap.add_argument("--b", type=Path, default=Path("."), help="the tree measured against it (built)")
    ap.add_argument("--children", type=int, default=10, help="attaches measured per tree (default 10)")
    ap.add_argument("--request", default="T1", help="the jobspec L0 answers (default T1: 64 nodes)")
    ap.add_argument(
        "--refill",
        action="store_true",
        help="each child attached, shrank and removed the same subgraph first: the measured attach refills "
        "the holes that left (what every grow after the first of `fluxlite bench hierarchy` does)",
    )
    ap.add_argument(
        "--sizes",
        default="",
        help="comma-separated requests (e.g. T8,T7,T6,T5,T4,T3): instructions per attach of tree --b at each, "
        "and the fit fixed + per_element * n",
    )
    a = ap.parse_args()
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian package valgrind)")
    bench = a.bench_dir.resolve()
    if a.sizes:
        _sizes(a.b, bench, a.children, [r.strip() for r in a.sizes.split(",") if r.strip()], a.refill)
        return
    if a.a is None:
        raise SystemExit("--a (the baseline tree) is required, except with --sizes")
    per = {}
    for name, tree in (("a", a.a), ("b", a.b)):
        base, _ = _ir(tree, bench, a.children, False, a.request, a.refill)
        full, _ = _ir(tree, bench, a.children, True, a.request, a.refill)
        per[name] = (full - base) / a.children
        print(f"{name}: {tree}: {per[name] / 1e6:.2f} M instructions per attach", flush=True)
    print(f"b / a: {per['b'] / per['a']:.3f}x")


def _sizes(tree: Path, bench: Path, k: int, reqs: list[str], refill: bool) -> None:
    """Instructions per attach at each request size (collection inside the attach loop only), and
    the least-squares line over them."""
    if len(reqs) < 2:
        raise SystemExit("--sizes needs two requests or more")
    pts = []
    print(f"tree {tree}, {k} attaches per size{', refill' if refill else ''}")
    print(f"{'request':>8} {'n':>6} {'instructions':>13} {'per element':>12}")
    for req in reqs:
        ir, n = _ir(tree, bench, k, True, req, refill, toggle=True)
        pts.append((n, ir / k))
        print(f"{req:>8} {n:6d} {ir / k:13.0f} {ir / k / n:12.0f}", flush=True)
    slope, fixed, _ = fit_line([p[0] for p in pts], [p[1] for p in pts])
    print(f"fit: {fixed / 1e3:.0f} K instructions per attach + {slope / 1e3:.2f} K per vertex+edge")
    for n, y in pts:
        print(f"  n {n:6d}: the fixed part is {fixed / y:.0%} of the attach")


if __name__ == "__main__":
    main()
