"""Time of one window-index query, both paths, on the queries a busy session asks.

    python examples/benchmarks/match/window_time.py --bench-dir ../shared/bench [--graph L0] [--rounds 3]

Replays the busy ``first`` session of ``fluxlite bench match --against`` (seed 1, 60 reservations
standing, 60 cancel + match rounds) on GRAPH, records every ``WindowIndex.alive`` query the
reservation searches ask (the index, the window and the needed counts), then times the same queries
again through ``alive_rows`` (the compiled path: a typed loop over the children, reading their
planners) and ``alive_arrays`` (the pure path: copies side by side, a few NumPy calls); the second
figure for the arrays also marks 8 rows touched before each query, which the arrays copy again and
the rows do not.  Microseconds per query, the best of ROUNDS; in-process, so measure both in the
same run and compare them, not runs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fluxlite.api import Engine
from fluxlite.cli.bench_fluxion import _busy_session, busy_files
from fluxlite.match import _window

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from busy_replay import replay


def _queries(bench: Path, graph: str) -> list[tuple[Any, int, int, list]]:
    path = bench / "graphs" / f"{graph}.graphml"
    with tempfile.TemporaryDirectory(prefix="wt-") as work:
        cmds, _ = _busy_session(str(path), busy_files(bench, Path(work)), "first", "ALL:core", 1, 60, 60)
        eng = Engine.from_file(path, format="grug", policy="first", prune_filters="ALL:core")
        calls: list[tuple[Any, int, int, list]] = []
        real = _window.WindowIndex.alive

        def spy(self: Any, at: int, end: int, need: Any) -> Any:
            calls.append((self, at, end, list(need)))
            return real(self, at, end, need)

        _window.WindowIndex.alive = spy  # type: ignore[method-assign]
        try:
            replay(eng, cmds)
        finally:
            _window.WindowIndex.alive = real  # type: ignore[method-assign]
    return calls


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="holds graphs/ and jobspecs/")
    ap.add_argument("--graph", default="L0", help="graphs/GRAPH.graphml (default L0)")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds; the best is printed (default 3)")
    a = ap.parse_args(argv)
    calls = _queries(Path(a.bench_dir), a.graph)
    if not calls:
        raise SystemExit("the session asked the window index nothing")
    rows = max(len(c[0]._verts) for c in calls)
    W = _window.WindowIndex

    def per_query(fn: Any, touch: int = 0) -> float:
        best = float("inf")
        for _ in range(a.rounds):
            t = time.perf_counter()
            for win, at, end, need in calls:
                for r in range(touch):
                    win.touch(r)
                fn(win, at, end, need)
            best = min(best, (time.perf_counter() - t) / len(calls))
        return best * 1e6

    print(f"{a.graph}: {len(calls)} window queries of the busy session, up to {rows} children each; "
          f"{'compiled' if str(_window.__file__).endswith('.so') else 'pure'} build")  # fmt: skip
    print(f"  alive_rows                   {per_query(W.alive_rows):8.1f} us per query")
    print(f"  alive_arrays                 {per_query(W.alive_arrays):8.1f} us per query")
    print(f"  alive_arrays, 8 rows touched {per_query(W.alive_arrays, 8):8.1f} us per query")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
