"""Profile one ``fluxlite bench match`` cell with cProfile (top-25 cumulative and tottime lines).

    python examples/benchmarks/match/profile_cell.py GRAPH REQUEST POLICY [MAX_MATCHES [WARMUP]] >> out.txt

Loads ``../shared/bench/graphs/GRAPH.graphml``, allocates REQUEST with POLICY
(prune ``ALL:core``, ``simple`` output, jobspec parsed per match as the bench
does) until the graph is full or MAX_MATCHES, profiling only the matches
(after the first WARMUP ones, default 0).
"""

from __future__ import annotations

import cProfile
import gc
import io
import pstats
import statistics
import sys
import time
from pathlib import Path

from fluxlite.api import Engine
from fluxlite.cli.bench import find_bench_dir
from fluxlite.jobspec import load_jobspec
from fluxlite.readers import load_graph


def main(argv: list[str]) -> int:
    gname, req, policy = argv[:3]
    limit = int(argv[3]) if len(argv) > 3 else 10**9
    warmup = int(argv[4]) if len(argv) > 4 else 0
    bench = find_bench_dir(None)
    assert bench is not None, "no ../shared/bench"
    g = load_graph(bench / "graphs" / f"{gname}.graphml", format="grug")
    eng = Engine(g, policy=policy, prune_filters="ALL:core")
    path = Path(bench / "jobspecs" / f"{req}.yaml")
    gc.collect()
    gc.freeze()
    prof = cProfile.Profile()
    times = []
    seen = 0
    while seen < limit:
        t = time.perf_counter()
        on = seen >= warmup
        if on:
            prof.enable()
        r = eng.match(load_jobspec(path), op="allocate", fmt="simple")
        if on:
            prof.disable()
        if not r.ok:
            break
        seen += 1
        if on:
            times.append((time.perf_counter() - t) * 1000.0)
    buf = io.StringIO()
    buf.write(
        f"== {gname} {req} {policy}: {len(times)} matches profiled (after {warmup} unprofiled), "
        f"median {statistics.median(times):.3f} ms under cProfile\n"
    )
    for key in ("cumulative", "tottime"):
        st = pstats.Stats(prof, stream=buf)
        st.strip_dirs().sort_stats(key).print_stats(25)
    sys.stdout.write(buf.getvalue())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
