"""Per level, round and tree: medians of server, attach+update, deferred CPU, match and comm times (ms).

    python examples/benchmarks/hierarchy/growwire/levels.py examples/benchmarks/hierarchy/growwire/compare_raw.csv

Reads the raw rows ``fluxlite bench hierarchy --baseline`` writes (one per level and repetition);
``t0``/``t1`` are this tree's two rounds, ``b0``/``b1`` the baseline's.
"""

from __future__ import annotations

import csv
import statistics
import sys

with open(sys.argv[1], newline="") as f:
    rows = list(csv.DictReader(f))
for mode in ("sync", "deferred"):
    for req in ("T1", "T8"):
        print(mode, req)
        for lvl in ("L0", "L1", "L2", "L3", "L4"):
            out = []
            for tree in ("this", "baseline"):
                for rnd in ("0", "1"):
                    rs = [
                        r
                        for r in rows
                        if (r["mode"], r["request"], r["level"], r["tree"], r["round"]) == (mode, req, lvl, tree, rnd)
                    ]
                    if not rs:
                        continue

                    def med(k: str, rs: list[dict[str, str]] = rs) -> float:
                        return statistics.median(float(r[k]) for r in rs)

                    out.append(
                        f"{tree[0]}{rnd}: srv {med('server_ms'):6.1f} att {med('attach_update_ms'):5.1f} "
                        f"cpu {med('deferred_cpu_ms'):5.1f} m {med('match_ms'):5.1f} c {med('comm_ms'):4.1f}"
                    )
            print(" ", lvl, " | ".join(out))
