"""Digests of whole deadline runs, to show two code trees give the same results (``simcpu`` branch).

``PYTHONPATH=TREE python exactness-simcpu.py JOBS [quick] > TREE.jsonl`` runs every strategy x load x
type x style (150 configurations) on the 16x8x4 grid backend with a trace of ``JOBS`` jobs, and
without ``quick`` 16 more: the static shift and Manhattan growth ablations, the leak's empty-node
start and local type-2 forks, and an 8x8x2 torus.  Each line holds the configuration and a SHA-1 of
the run's metrics (all but ``wall_seconds``), every job's (id, outcome, start, end) and an
occupancy snapshot at mid-trace, all as exact reprs (floats to the last bit).  Two trees give the
same results when their files are identical line for line.
"""

import hashlib
import itertools
import json
import sys

from fluxlite.sim.deadline.placement import Machine
from fluxlite.sim.deadline.sim import simulate
from fluxlite.sim.deadline.workload import lublin_trace

n = int(sys.argv[1])
mode = sys.argv[2] if len(sys.argv) > 2 else "full"
strats = ["count", "hilbert", "manhattan", "leak", "leak-noncontig"]
cfgs = [
    (s, ld, t, c, {}, (16, 8, 4, False))
    for s, ld, t, c in itertools.product(
        strats, ["normal", "heavy", "very-heavy"], ["uniform", "0", "1", "2", "3"], ["async", "sync"]
    )
]
if mode == "full":
    for s in ["count", "hilbert", "manhattan"]:
        cfgs.append((s, "heavy", "uniform", "async", {"static_shift": "none"}, (16, 8, 4, False)))
        cfgs.append((s, "very-heavy", "2", "sync", {}, (8, 8, 2, True)))
    for g in ["strict", "first-seed", "strict-first-seed", "no-polish"]:
        cfgs.append(("manhattan", "heavy", "uniform", "async", {"manhattan_growth": g}, (16, 8, 4, False)))
    for s in ["leak", "leak-noncontig"]:
        cfgs.append((s, "heavy", "uniform", "async", {"leak_start": "empty"}, (16, 8, 4, False)))
        cfgs.append((s, "heavy", "2", "sync", {"type2_forks": "local"}, (16, 8, 4, False)))
        cfgs.append((s, "very-heavy", "3", "async", {}, (8, 8, 2, True)))
for s, ld, t, c, kw, (w, h, cpn, torus) in cfgs:
    trace = lublin_trace(n, ld, t, seed=len(ld) * 7 + len(t), cores=w * h * cpn)
    m = Machine(w, h, cpn, torus, strategy=s, backend="grid")
    r = simulate(trace, s, c, machine=m, snapshots=[trace[len(trace) // 2].submit + 0.5], **kw)
    d = r.summary()
    d.pop("wall_seconds")
    blob = repr((sorted(d.items()), r.outcomes, r.snapshots)).encode()
    row = {"cfg": [s, ld, t, c, kw, [w, h, cpn, torus]], "digest": hashlib.sha1(blob).hexdigest()}
    print(json.dumps(row | {"acc": r.accepted, "done": r.completed}), flush=True)
