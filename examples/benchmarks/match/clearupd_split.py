"""Where the update walk of a busy L0 ``first`` match goes: nodes clear over the window against the rest.

Runs the busy L0 session of ``fluxlite bench match --against`` (the same
command stream as ``busyres_opcodes.py``) in this process and splits the
update walk (``Traverser.update``) by the state of each node it walks:
``clear`` (the select walk found it clear over the match's window: used by
other jobs at other times, see ``FreshStage._window_clear``), ``used`` (not
clear) or ``fresh`` (no state).  It prints, per successful match, the Python
opcodes executed in each kind of node's subtree, the functions and the lines
of ``_upd_dfv_plain`` they run inside the clear nodes, how many prior leaf
states the marked cores of each socket of a clear node hold (one state per
socket would let a replay write the socket's leaves a column at a time), and
in a second, untraced pass the share of the matches' wall time spent in clear
nodes' update walks (``time.perf_counter``).  Exact but for the timing.

    PYTHONPATH=. python examples/benchmarks/match/clearupd_split.py --bench-dir /work/shared/bench
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import tempfile
import time
from pathlib import Path


def leaf_columns(n: int = 16, rounds: int = 20000) -> tuple[float, float, float]:
    """µs per socket of ``n`` marked cores that hold one prior state: the plain walk's leaf loop (the
    memo-hit branch of ``_upd_dfv_plain``'s leaf loop, as written there) against the same writes a
    column at a time (identity checks by ``map(operator.is_)``, slice writes, one ``join`` for the
    lines), and the column path's identity checks alone.  Synthetic; the best of 5 repeats."""
    import timeit
    from itertools import repeat
    from operator import is_

    class _S(dict):
        pass

    olds = [_S({i: (1, 2, 3)}) for i in range(4)]
    new = tuple(_S(x) for x in olds)
    cols = [[olds[c]] * n for c in range(4)]
    names = [f"core{i}" for i in range(n)]
    tok = [7] * n
    prefix = "      " + "---" * 3

    def restore() -> None:
        for c in range(4):
            cols[c][:] = [olds[c]] * n

    def loop() -> None:
        p0 = p1 = p2 = p3 = got = None
        out: list[str] = []
        add = out.append
        jv: list[int] = []
        ja = jv.append
        units = 0
        v0, v1, v2, v3 = cols
        for e in range(n):
            if tok[e] != 7:
                continue
            o0, o1, o2, o3 = v0[e], v1[e], v2[e], v3[e]
            if got is None or o0 is not p0 or o1 is not p1 or o2 is not p2 or o3 is not p3:
                got = new
                p0, p1, p2, p3 = o0, o1, o2, o3
            v0[e], v1[e], v2[e], v3[e] = got
            ja(e)
            units += 1
            add(f"{prefix}{names[e]}[1:x]\n")
        restore()

    def checks() -> bool:
        if tok.count(7) != n:
            return False
        return all(all(map(is_, col, repeat(col[0], n))) for col in cols)

    def columns() -> None:
        if not checks():
            return
        for c in range(4):
            cols[c][0:n] = [new[c]] * n
        jv: list[int] = []
        jv.extend(range(n))
        _text = prefix + ("[1:x]\n" + prefix).join(names) + "[1:x]\n"
        restore()

    def best(f) -> float:  # type: ignore[no-untyped-def]
        return min(timeit.repeat(f, number=rounds, repeat=5)) / rounds * 1e6

    r = best(restore)
    return best(loop) - r, best(columns) - r, best(checks)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-dir", required=True, help="the directory holding graphs/L0.graphml")
    ap.add_argument("--policy", default="first")
    a = ap.parse_args(argv)
    from fluxlite.api import Engine
    from fluxlite.cli.bench_fluxion import _busy_session, busy_files
    from fluxlite.jobspec import load_jobspec
    from fluxlite.match._traverser import Traverser

    graph = str(Path(a.bench_dir) / "graphs" / "L0.graphml")
    with tempfile.TemporaryDirectory(prefix="clearupd-") as td:
        files = busy_files(Path(a.bench_dir), Path(td))
        busy, _n = _busy_session(graph, files, a.policy, "ALL:core", 1, 60, 60)
        cmds = [line.split() for line in busy.splitlines() if line.strip()]
        specs = {p[2]: load_jobspec(p[2]) for p in cmds if p[0] != "cancel"}

    clear: dict[int, int] = {}
    o_sc, o_plain, o_upd = Traverser._sel_clean, Traverser._upd_dfv_plain, Traverser.update

    def sel_clean(self, meta, shape, b, e0, used):  # type: ignore[no-untyped-def]
        r = o_sc(self, meta, shape, b, e0, used)
        if r == 2:
            clear[b] = self.token
        return r

    n = [0]
    inclear = [False]
    fn: collections.Counter[str] = collections.Counter()
    ln: collections.Counter[int] = collections.Counter()
    kinds: collections.Counter[tuple[str, str]] = collections.Counter()
    states: collections.Counter[int] = collections.Counter()
    tm = [0.0]
    timing = [False]

    def trace(frame, event, arg):  # type: ignore[no-untyped-def]
        frame.f_trace_opcodes = True
        if event == "opcode":
            n[0] += 1
            if inclear[0]:
                fn[frame.f_code.co_name] += 1
                if frame.f_code.co_name == "_upd_dfv_plain":
                    ln[frame.f_lineno] += 1
        return trace

    def plain(self, u, *args, **kw):  # type: ignore[no-untyped-def]
        g = self.g
        if g.v_type[u] != "node":
            return o_plain(self, u, *args, **kw)
        kind = "clear" if clear.get(u) == self.token else ("fresh" if self.tags[u] is None else "used")
        if timing[0]:
            t0 = time.perf_counter()
            r = o_plain(self, u, *args, **kw)
            if kind == "clear":
                tm[0] += time.perf_counter() - t0
            return r
        if kind == "clear":
            n_s = n[0]  # the census below is not the walk's work: its opcodes are not counted
            dom, tok = self.dom, self.token
            for e in g.out[dom][u]:
                s = g.e_dst[e]
                if self.e_token[e] != tok:
                    continue
                ids = {
                    (id(self.vspans[c]), id(self.allocs[c]), id(self.resvs[c]), id(self.tags[c]), id(self.xspans[c]))
                    for c in (g.e_dst[f] for f in g.out[dom][s] if self.e_token[f] == tok)
                }
                states[len(ids)] += 1
            n[0] = n_s
        n0 = n[0]
        inclear[0] = kind == "clear"
        r = o_plain(self, u, *args, **kw)
        inclear[0] = False
        kinds[kind, "nodes"] += 1
        kinds[kind, "opcodes"] += n[0] - n0
        return r

    def update(self, *args, **kw):  # type: ignore[no-untyped-def]
        if timing[0]:
            return o_upd(self, *args, **kw)
        sys.settrace(trace)
        try:
            return o_upd(self, *args, **kw)
        finally:
            sys.settrace(None)

    Traverser._sel_clean, Traverser._upd_dfv_plain, Traverser.update = sel_clean, plain, update

    def run() -> tuple[int, float]:
        eng = Engine.from_file(graph, policy=a.policy, prune_filters="ALL:core")
        jobid, ok, wall = 1, 0, 0.0
        for p in cmds:
            if p[0] == "cancel":
                eng.cancel(int(p[1]))
                continue
            js = specs[p[2]]
            t0 = time.perf_counter()
            r = eng.match(js, op=p[1], jobid=jobid)
            wall += time.perf_counter() - t0
            jobid += 1
            ok += r.ok
        return ok, wall

    ok, _w = run()
    total = n[0]
    print(f"L0 busy session, policy {a.policy}: {ok} successful matches; update walk {total / ok:.0f} opcodes per match")
    for kind in ("clear", "used", "fresh"):
        nodes, ops = kinds[kind, "nodes"], kinds[kind, "opcodes"]
        print(f"  nodes {kind:5s}: {nodes / ok:5.2f} per match, {ops / ok:7.0f} opcodes per match ({ops / total:.1%})")
    inside = sum(fn.values())
    print("inside clear nodes, by function (opcodes per match, share):")
    for k, v in fn.most_common(12):
        print(f"  {k:26s} {v / ok:8.0f}  {v / inside:.1%}")
    src = Path(sys.modules[Traverser.__module__].__file__ or "").parent / "update.py"
    lines = src.read_text().splitlines()
    print("inside clear nodes, lines of _upd_dfv_plain (opcodes per match):")
    for k, v in ln.most_common(12):
        print(f"  {k:5d} {v / ok:7.0f}  {lines[k - 1].strip()[:90]}")
    print("sockets of clear nodes by the number of distinct prior states of their marked cores:")
    for k in sorted(states):
        print(f"  {k:3d} state(s): {states[k]} sockets")
    timing[0] = True
    shares = []
    for _ in range(5):
        tm[0] = 0.0
        clear.clear()
        _ok, wall = run()
        shares.append(tm[0] / wall)
    print("share of the matches' wall time in clear nodes' update walks, 5 untraced runs: "
          + " ".join(f"{s:.1%}" for s in shares) + f" (median {statistics.median(shares):.1%})")  # fmt: skip
    lp, cl, ck = leaf_columns()
    print(f"one socket, 16 marked cores with one prior state (synthetic, µs): the plain leaf loop {lp:.2f}, "
          f"a column at a time {cl:.2f} (its identity checks alone {ck:.2f})")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
