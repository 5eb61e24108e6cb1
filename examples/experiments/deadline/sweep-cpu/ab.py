"""CPU seconds of single sweep runs, two code trees alternating in fresh processes (min of 2 each).

``python ab.py BASE_ROOT BRANCH_ROOT STRATEGY:LOAD:TYPE:COMM...`` (trace 0, 1,000 jobs; the CPU
seconds of ``run_one``, its lazy imports included).
"""

import os
import subprocess
import sys

code = """
import sys, time, json
from fluxlite.sim.deadline.sweep import RunSpec, run_one
s, l, t, c = sys.argv[1:5]
t0 = time.process_time(); run_one(RunSpec(s, l, t, c, 0)); print(time.process_time() - t0)
"""
roots = {"base": sys.argv[1], "branch": sys.argv[2]}
cfgs = [a.split(":") for a in sys.argv[3:]]
res = {}
for _rep in range(2):
    for cfg in cfgs:
        for tree in ("base", "branch"):
            env = dict(os.environ, PYTHONPATH=roots[tree])
            out = subprocess.run([sys.executable, "-c", code, *cfg], env=env, capture_output=True, text=True, check=True)
            res.setdefault((":".join(cfg), tree), []).append(float(out.stdout))
for cfg in cfgs:
    k = ":".join(cfg)
    b, n = min(res[(k, "base")]), min(res[(k, "branch")])
    print(f"{k:40s} base {b:.2f} branch {n:.2f} ratio {n / b:.2f}   all {res[(k, 'base')]} {res[(k, 'branch')]}")
