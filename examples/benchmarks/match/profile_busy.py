"""Profile the reservation searches of one busy session of ``fluxlite bench match --against`` (cProfile).

    python examples/benchmarks/match/profile_busy.py GRAPH POLICY [SORT] > profile-busy.txt

Builds the busy session's command stream as the bench does (seed 1, 60
reservations standing, 60 cancel + match rounds), replays it on an engine
in this process and profiles only the matches that end in a reservation
(each is first tried with ``without_allocating_future`` to know which, not
profiled).  SORT: ``tottime`` (default) or ``cumulative``.
"""

from __future__ import annotations

import cProfile
import io
import pstats
import sys
import tempfile
from pathlib import Path

from fluxlite.api import Engine
from fluxlite.cli._bench_inputs import _graph_source
from fluxlite.cli.bench import find_bench_dir
from fluxlite.cli.bench_fluxion import _busy_session, busy_files
from fluxlite.jobspec import load_jobspec


def main(argv: list[str]) -> int:
    gname, policy = argv[:2]
    sort = argv[2] if len(argv) > 2 else "tottime"
    bench = find_bench_dir(None)
    assert bench is not None, "no ../shared/bench"
    with tempfile.TemporaryDirectory() as td:
        tmp = Path(td)
        src, _fmt = _graph_source(gname, bench, "grug", tmp)
        files = busy_files(bench, tmp)
        cmds, _n = _busy_session(src, files, policy, "ALL:core", 1, 60, 60)
        eng = Engine.from_file(src, policy=policy, prune_filters="ALL:core")
        prof = cProfile.Profile()
        reserved = 0
        for line in cmds.splitlines():
            parts = line.split()
            if parts[0] == "cancel":
                eng.cancel(int(parts[1]))
                continue
            js = load_jobspec(parts[2])
            probe = eng.match(js, op="without_allocating_future", fmt="simple")
            on = probe.ok and probe.at != 0
            if on:
                reserved += 1
                prof.enable()
            eng.match(js, op="allocate_orelse_reserve", fmt="simple")
            prof.disable()
    buf = io.StringIO()
    buf.write(f"== {gname} {policy}: {reserved} reservation searches profiled, sorted by {sort}\n")
    pstats.Stats(prof, stream=buf).sort_stats(sort).print_stats(30)
    sys.stdout.write(buf.getvalue().replace(str(Path(__file__).resolve().parents[3]) + "/", ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
