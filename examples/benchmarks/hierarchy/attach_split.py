"""A level's attach inside the running tree, step by step: what the per-level intercept is made of.

    python examples/benchmarks/hierarchy/attach_split.py [--bench-dir ../shared/bench] [--request T8]
        [--reps 30] [--no-upkeep] [--deferred]

Starts the five levels of ``fluxlite bench hierarchy`` with every level attaching before it answers
(``--sync-attach``, the run whose fits give the attach+update intercept), as ``hop_stamps.py`` does
(through ``_stamped_tree.py``, a ``sitecustomize`` module in each instance process).  That module
wraps the steps of ``Instance._attach_for`` and records each call's thread CPU and wall time:
``decode`` (the columns payload, ``hierarchy._wire.decode``), ``create``
(``readers.jgf.attach_columns``), ``prime`` (``Traverser.attach_update``), ``alloc``
(``Engine._allocate_items``), ``engine`` (all of ``Engine.attach``) and ``total`` (all of
``_attach_for``: decode, the engine's attach and the level's origin records).  The leaf grows its job
by REQUEST ``--reps`` times (3 more unmeasured first, each grow shrunk back); per level L1..L4 the
medians are printed.  ``attach_steps.py`` gives the same steps in one process, warm: the two side
by side say how much of a level's attach is the cost of running among the other processes (their
work between two grows evicts this one's code and data from the CPU caches) rather than of the
instructions.  ``--no-upkeep``: no level runs its garbage-collector upkeep thread (collections are off
altogether), to see whether that thread, which runs beside the grow on the other CPU, slows it.
``--deferred``: the default mode instead, where every level answers before it attaches; the leaf's
row is then the attach that "leaf ready again" waits for, and L1..L3's rows are their idle-priority
attaches of the child's subgraph.
Loopback only; the run directory is a temporary one.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from _stamped_tree import stamped_tree  # (beside this script)

from hierarchy.bench import FILLER, LEVELS

#: written as sitecustomize.py into the instances' first PYTHONPATH entry
STEPPER = r"""
import functools, json, os, signal, sys, time
REC = []
def _wrap(owner, name, tag):
    f = getattr(owner, name)
    @functools.wraps(f)
    def w(*a, **k):
        c, t = time.thread_time(), time.perf_counter()
        try:
            return f(*a, **k)
        finally:
            REC.append((tag, time.thread_time() - c, time.perf_counter() - t))
    setattr(owner, name, w)
if "--name" in sys.argv:
    if os.environ.get("ATTACH_SPLIT_NO_UPKEEP"):
        import gc
        import fluxlite.gcpolicy
        fluxlite.gcpolicy.BackgroundUpkeep.poke = lambda self: None
        gc.disable()
        gc.enable = lambda: None
    import fluxlite.api
    import fluxlite.readers.jgf
    import hierarchy.instance.origins
    from fluxlite.match import Traverser
    from hierarchy.instance import Instance
    _wrap(hierarchy.instance.origins, "decode", "decode")
    _wrap(fluxlite.readers.jgf, "attach_columns", "create")
    _wrap(Traverser, "attach_update", "prime")
    _wrap(fluxlite.api.Engine, "_allocate_items", "alloc")
    _wrap(fluxlite.api.Engine, "attach", "engine")
    _wrap(Instance, "_attach_for", "total")
    def _dump(*_):
        name = sys.argv[sys.argv.index("--name") + 1]
        with open(os.path.join(os.environ["ATTACH_SPLIT_OUT"], name + ".json"), "w") as f:
            json.dump(REC, f)
    signal.signal(signal.SIGUSR1, _dump)
"""

STEPS = ("decode", "create", "prime", "alloc", "engine", "total")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bench-dir", type=Path, default=Path("../shared/bench"))
    ap.add_argument("--request", default="T8")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--no-upkeep", action="store_true", help="no garbage-collector upkeep in any level")
    ap.add_argument("--deferred", action="store_true", help="the default mode: levels answer, then attach")
    a = ap.parse_args()
    if a.no_upkeep:
        os.environ["ATTACH_SPLIT_NO_UPKEEP"] = "1"
    jobspecs = a.bench_dir / "jobspecs"
    js = {n: (jobspecs / f"{n}.yaml").read_bytes() for n in {a.request, *FILLER.values()}}
    root = Path(__file__).resolve().parents[3]
    with stamped_tree(
        STEPPER, "ATTACH_SPLIT_OUT", a.bench_dir, root, js, sync_attach=not a.deferred, prefix="split-"
    ) as (
        clients,
        job,
        collect,
    ):
        for _ in range(3 + a.reps):  # (the first 3 unmeasured: only the last reps records are read)
            clients["L4"].shrink(job, jgf=clients["L4"].match_grow(job, js[a.request]).jgf)
        recs = collect()
    print(
        f"{a.request}: a level's {'deferred' if a.deferred else 'sync'} attach inside the tree, {a.reps} grows"
        f"{', no upkeep' if a.no_upkeep else ''}; medians, thread CPU / wall ms"
    )
    print(f"  {'level':<6}" + "".join(f"{s:>16}" for s in STEPS))
    for lv in LEVELS[1:]:
        by: dict[str, list[tuple[float, float]]] = {}
        for tag, cpu, wall in recs[lv]:
            by.setdefault(tag, []).append((cpu, wall))
        cells = []
        for s in STEPS:
            # (once per grow at each level: the last ones are the measured grows)
            xs = by.get(s, [])[-a.reps :]
            cells.append(
                f"{statistics.median(c for c, _ in xs) * 1e3:7.3f}/{statistics.median(w for _, w in xs) * 1e3:.3f}"
                if xs
                else "-"
            )
        print(f"  {lv:<6}" + "".join(f"{c:>16}" for c in cells))


if __name__ == "__main__":
    main()
