"""MatchGrow and shrink on one engine, then the receiving end of a grow from a parent.

Run:  python examples/grow_and_shrink.py
"""

from pathlib import Path

from fluxlite.api import Engine
from fluxlite.jobspec import load_jobspec

HERE = Path(__file__).resolve().parent / "hierarchy"

eng = Engine.from_file(HERE / "cluster.graphml", policy="first")
job = eng.allocate(load_jobspec(HERE / "nodes-1.yaml")).jobid
print(f"job {job} runs on one node")

# MatchGrow in place: more resources for the running job, carrying its id
grown = eng.grow(job, load_jobspec(HERE / "socket.yaml"), fmt="jgf")
print(f"job {job} grew by a socket; it now holds {len(eng.job_items(job))} vertices")

# shrink: give part of it back; the rest stays allocated
gone = eng.shrink(job, jgf=grown.text)
print(f"after giving the socket back: job gone = {gone}; holds {len(eng.job_items(job))} vertices")

# the receiving end of a grow from a parent: a child instance owning one node
# attaches the subgraph its parent chose and allocates it to the job in one step
parent = Engine.from_file(HERE / "cluster.graphml", policy="high")
child = Engine.from_file(HERE / "cluster.graphml", policy="first")
for n in range(1, 8):
    child.remove_subgraph(path=f"/cluster0/node{n}")  # the child owns node0 only
cjob = child.allocate(load_jobspec(HERE / "nodes-1.yaml")).jobid
sub = parent.allocate(load_jobspec(HERE / "nodes-2.yaml"), fmt="jgf").text  # two nodes from the parent
new = child.attach(sub, allocate_to=cjob)
print(f"the child attached {len(new)} vertices and gave them to its job {cjob}: {child.jobs}")
