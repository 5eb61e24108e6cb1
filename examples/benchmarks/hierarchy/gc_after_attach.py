"""What the cyclic collector costs after one level's attach of a grow, in process.

    python examples/benchmarks/hierarchy/gc_after_attach.py [BENCH_DIR [REPS [REQUEST]]]

An instance holds its lock with automatic collection paused (``hierarchy.instance.core``,
``_locked``) and re-enables it afterwards; the first allocation after that runs a young
collection over everything the attach created.  This measures that collection: the setup of
``attach_steps.py`` (L0's answer to REQUEST attached by a child holding 8 nodes and
allocated to its job, then undone), the heap frozen after start-up as an instance's is
(``settle_memory``), the collector paused around each attach; then the tracked objects the
attach left in the youngest generation and the thread CPU time of ``gc.collect(0)`` and of the
``gc.collect(1)`` that follows (what the instance's background upkeep does).  Best and
median of REPS.
"""

from __future__ import annotations

import gc
import statistics
import sys
import time
from pathlib import Path

from attach_steps import setup


def main() -> None:
    bench = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/bench")
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    req = sys.argv[3] if len(sys.argv) > 3 else "T1"
    spec, parent, child, cjob = setup(bench, req)  # attach_steps.py's L0 and child
    gc.collect()
    gc.freeze()
    young: list[int] = []
    gen0: list[float] = []
    gen1: list[float] = []
    attach: list[float] = []
    for _ in range(reps + 2):
        r = parent.allocate(spec[req], fmt="jgf")
        gc.collect(1)
        gc.disable()
        c = time.thread_time()
        new = child.attach(r.text, allocate_to=cjob, at=0, duration=3600)
        attach.append(time.thread_time() - c)
        young.append(gc.get_count()[0])
        c = time.thread_time()
        gc.collect(0)
        gen0.append(time.thread_time() - c)
        c = time.thread_time()
        gc.collect(1)
        gen1.append(time.thread_time() - c)
        gc.enable()
        g = child.graph
        newset = set(new)
        tops = [g.path(v) for v in new if g.parent(v) not in newset]
        child.shrink(cjob, paths=tops)
        for p in tops:
            child.remove_subgraph(path=p)
        parent.cancel(r.jobid)
    del young[:2], gen0[:2], gen1[:2], attach[:2]
    print(f"{req}: {len(new)} new vertices; {reps} repetitions; thread CPU ms, best / median")
    print(f"  attach+allocate        {min(attach) * 1e3:7.3f} / {statistics.median(attach) * 1e3:7.3f}")
    print(f"  young objects left     {min(young):7d} / {statistics.median(young):7.0f}")
    print(f"  gc.collect(0) after it {min(gen0) * 1e3:7.3f} / {statistics.median(gen0) * 1e3:7.3f}")
    print(f"  then gc.collect(1)     {min(gen1) * 1e3:7.3f} / {statistics.median(gen1) * 1e3:7.3f}")


if __name__ == "__main__":
    main()
