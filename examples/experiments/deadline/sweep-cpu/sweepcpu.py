"""CPU seconds per run of a deadline sweep subset, for one code tree.

``python sweepcpu.py ROOT OUT.csv SWEEP-OPTIONS...`` runs ``fluxlite sim deadline sweep`` with the
code under ``ROOT`` (a checkout, or ``git archive REV | tar -x -C ROOT``) into ``OUT.csv`` and
prints the runs, the CPU seconds of the sweep and its workers (user + system), their mean per run
and the wall time, as JSON.
"""

import json
import os
import resource
import signal
import subprocess
import sys
import time

root, out = sys.argv[1], sys.argv[2]
env = dict(os.environ, PYTHONPATH=root)
code = "import sys; from fluxlite.cli.main import main; sys.exit(main(sys.argv[1:]))"
cmd = [sys.executable, "-c", code, "sim", "deadline", "sweep", *sys.argv[3:], "--out", out, "--quiet"]
t0 = time.perf_counter()
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
child = subprocess.Popen(cmd, env=env, cwd=root)
# Pass SIGTERM/SIGINT on to the sweep, which stops its workers and keeps what it wrote (a rerun resumes);
# without this a signal to this script left the sweep and its workers running.
for sig in (signal.SIGTERM, signal.SIGINT):
    signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
rc = child.wait()
if rc:
    sys.exit(f"sweepcpu: the sweep exited with {rc}")
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
t1 = time.perf_counter()
cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
with open(out) as fh:
    runs = sum(1 for _ in fh) - 1
row = {"root": root, "runs": runs, "cpu_s": round(cpu, 1), "cpu_per_run": round(cpu / runs, 3)}
row["wall_s"] = round(t1 - t0, 1)
print(json.dumps(row))
