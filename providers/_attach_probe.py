"""Attach+update of burst subgraphs, timed alone (run as a script, against whichever tree is on PYTHONPATH).

``fluxlite bench burst --attach-only`` runs this file with this checkout and
with a baseline checkout (``git archive REV``) in turns, so both are measured
in the same run on the same machine.  It uses only what both trees have:
``providers.ec2.build_jgf`` (the subgraph the provider hands out for
described instances, no EC2 call) and ``Engine.attach(..., allocate_to=job)``.
Prints one JSON object: per type, the attach+update seconds and vertex+edge
counts of every sample.
"""

from __future__ import annotations

import json
import sys
import time

SHAPES = {  # vCPUs, memory GB, GPUs (what DescribeInstanceTypes says of these types)
    "t2.micro": (1, 1, 0),
    "t2.small": (1, 2, 0),
    "t2.medium": (2, 4, 0),
    "t2.large": (2, 8, 0),
    "t2.xlarge": (4, 16, 0),
    "t2.2xlarge": (8, 32, 0),
    "g2.2xlarge": (8, 15, 1),
    "g3.4xlarge": (16, 122, 4),
}
LOCAL = (
    "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
    "      - type: core\n        count: 1\nattributes:\n  system:\n    duration: 3600\n"
    "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
)


def main(reps: int, sizes: list[int]) -> dict:
    import gc

    from fluxlite.api import Engine
    from fluxlite.jobspec import parse_jobspec
    from fluxlite.readers.generate import generate_graph
    from providers.ec2 import Shape, _Ids, build_jgf

    shapes = {t: Shape(*s) for t, s in SHAPES.items()}
    out: dict = {}
    serial = 0
    for t in SHAPES:
        samples = []
        for n in sizes:
            for _ in range(reps):
                insts = []
                for _k in range(n):
                    serial += 1
                    insts.append({"id": f"i-{serial:017x}", "type": t, "zone": "us-east-1a",
                                  "lifecycle": "on-demand", "private_ip": "10.0.0.1", "launch_time": "now"})  # fmt: skip
                doc, _ = build_jgf("/cluster0", insts, shapes, _Ids(1_000_000, 2**40), {})
                g = json.loads(doc)["graph"]
                eng = Engine(generate_graph(nodes=1, sockets=1, cores=2))
                job = eng.allocate(parse_jobspec(LOCAL), fmt="jgf").jobid
                gc.collect()
                t0 = time.perf_counter()
                eng.attach(doc, source="burst", allocate_to=job)
                samples.append((time.perf_counter() - t0, len(g["nodes"]) + len(g["edges"])))
        out[t] = samples
    return out


if __name__ == "__main__":
    reps = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    sizes = [int(x) for x in (sys.argv[2] if len(sys.argv) > 2 else "1,2,4,8").split(",")]
    sys.stdout.write(json.dumps(main(reps, sizes)) + "\n")
