"""Allocate, reserve and cancel on the bundled default cluster with the Python API.

Run:  python examples/allocate_and_cancel.py
"""

from pathlib import Path

from fluxlite import BusyError
from fluxlite.api import Engine
from fluxlite.cli.query import default_graph_path
from fluxlite.jobspec import load_jobspec

HERE = Path(__file__).resolve().parent

eng = Engine.from_file(default_graph_path(), policy="lonode")
node = load_jobspec(HERE / "jobspecs" / "node-2sockets.yaml")

jobs = []
while True:
    try:
        jobs.append(eng.allocate(node, fmt="rv1_nosched"))
    except BusyError:
        break
print(f"allocated {len(jobs)} whole nodes; first R: {jobs[0].text.strip()[:120]}...")

later = eng.allocate_orelse_reserve(node)
print(f"the next node-sized job is reserved at t={later.at}s (job {later.jobid})")

eng.cancel(jobs[0].jobid)
print("after cancelling job", jobs[0].jobid, "a node is free again:", eng.allocate(node).ok)
