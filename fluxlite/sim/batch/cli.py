"""``fluxlite sim batch``: run, bench and reproduce the batch-queue experiments.

``fluxlite sim batch run --workload esp --queue easy --json out.json``
``fluxlite sim batch run --workload esp-malleable --share 0.5 --malleable perf --plots plots/``
``fluxlite sim batch run --workload esp-dynamic --dynamic --dfs fairness.cfg``
``fluxlite sim batch run --workload power20 --malleable power --power-scope waiting``
``fluxlite sim batch run --workload swf --swf trace.swf --nodes 1024``
``fluxlite sim batch run --config run.yaml``     (keys: the long options, e.g. ``queue: easy``, ``json: out.json``)
``fluxlite sim batch bench``                      ESP/easy time and a 10,000-job SWF on 1,024 nodes
``fluxlite sim batch bench-pass``                 cost of one scheduling pass at queue depths 100 and 10,000
``fluxlite sim batch experiments --out DIR``      every configuration of examples/experiments/batch
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.cli._help import plain
from fluxlite.errors import FluxliteError, InputError

__all__ = ["main"]

_DEFAULTS = {
    "workload": "esp", "swf": None, "nodes": None, "cores_per_node": 1, "queue": "easy",
    "reservation_depth": None, "malleable": None, "share": 0.5, "power_scope": "waiting",
    "dynamic": False, "dfs": None, "dfs_text": None, "seed": 1, "adapt_s": 5, "limit": None,
    "corridor": None, "idle_w": None, "arrival": None, "walltime_factor": None, "sigma_scale": None,
    "dyn_model": None, "runtime_factor": None, "placement": None, "sched_interval": None,
}  # fmt: skip
#: what to write: options a config file may hold as well (paths are relative to the working directory)
_OUTPUTS: dict[str, Any] = {"json": None, "csv": None, "plots": None, "progress": False}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluxlite sim batch", description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="simulate one configuration")
    r.add_argument("--config", help="YAML file with any of the options below (flags override it)")
    r.add_argument(
        "--workload", choices=("esp", "esp-dynamic", "esp-malleable", "power20", "swf"), help="workload (esp)"
    )
    r.add_argument("--swf", help="SWF trace (workload swf)")
    r.add_argument("--nodes", type=int, help="machine size (esp; swf without MaxNodes)")
    r.add_argument("--cores-per-node", type=int, help="swf: processors per node")
    r.add_argument("--limit", type=int, help="swf: first N jobs only")
    r.add_argument("--queue", help="fcfs, easy, conservative, hybrid")
    r.add_argument("--reservation-depth", type=int, help="hybrid: reservations held")
    r.add_argument(
        "--malleable", choices=("fpsma", "perf", "power"), help="malleable strategy (default: static)"
    )
    r.add_argument("--share", type=float, help="esp-malleable: share of malleable jobs (0..1)")
    r.add_argument(
        "--power-scope", choices=("running", "waiting"), help="power strategy: jobs in the program"
    )
    r.add_argument(
        "--dynamic", action="store_true", default=None, help="esp-dynamic: evolving jobs ask for more"
    )
    r.add_argument("--dfs", help="Maui-style fairness config (DFSPOLICY ...); none = no fairness")
    r.add_argument(
        "--corridor",
        help="power corridor schedule FROM:LOW:HIGH,... in s and W (power20's default: 0:1700:2500,200:1000:1700,500:2500:3500)",
    )
    r.add_argument("--idle-w", type=float, help="watts of an idle node (power20: 71)")
    r.add_argument("--arrival", choices=("esp", "fixed"),
                   help="ESP submissions: esp = first 50 at once then every 30 s (default); fixed = every 30 s")  # fmt: skip
    r.add_argument("--walltime-factor", type=float,
                   help="requested walltime / run time (esp-malleable: 1.5, esp-dynamic: 1.0)")  # fmt: skip
    r.add_argument("--sigma-scale", type=float, help="esp-malleable: scale the communication shares (default 1)")
    r.add_argument("--dyn-model", choices=("linear", "det-total"),
                   help="esp-dynamic: after a grant the rest runs at DET speed (linear) or the run ends at start+DET")  # fmt: skip
    r.add_argument("--runtime-factor", type=float, help="esp-dynamic: scale every run time (default 1)")
    r.add_argument("--placement", choices=("core", "node"),
                   help="esp-dynamic: cores anywhere (core, default) or whole nodes, ceil(cores/8) (node)")
    r.add_argument("--sched-interval", type=int, metavar="SECONDS",
                   help="scheduling passes only every N s (a polling scheduler; default 0: at every event)")
    r.add_argument("--seed", type=int, help="seed of the workload's random draws (1)")
    r.add_argument("--adapt-s", type=int, help="seconds an expand/shrink takes")
    r.add_argument("--json", help="write the summary here")
    r.add_argument("--csv", help="write the per-job table here")
    r.add_argument("--plots", help="write PNG plots into this directory")
    r.add_argument("--progress", action="store_true", help="progress bar")
    b = sub.add_parser("bench", help="time ESP/easy and a 10,000-job SWF trace on 1,024 nodes")
    b.add_argument("--repeat", type=int, default=3, help="ESP runs timed (median; 3)")
    b.add_argument("--swf", help="trace to use (default: a synthetic one, generated)")
    b.add_argument("--jobs", type=int, default=10000, help="jobs of the generated SWF trace (10000)")
    b.add_argument("--json", help="write the figures here")
    bp = sub.add_parser("bench-pass", help="seconds per scheduling pass at queue depths 100 and 10,000")
    bp.add_argument("--depths", default="100,10000", help="comma-separated queue depths (default 100,10000)")
    bp.add_argument("--policies", default="easy,conservative", help="comma-separated queue policies")
    bp.add_argument("--nodes", type=int, default=1024, help="machine size in whole nodes (default 1024)")
    bp.add_argument("--passes", type=int, default=3, help="timed passes per cell; the median is reported")
    bp.add_argument("--json", help="write the rows here")
    bp.add_argument("--baseline", metavar="REF",
                    help="also run each cell with git revision REF's code (e.g. main), right after this code's")
    bp.add_argument("--baseline-limit", type=float, default=900.0, metavar="SECONDS",
                    help="stop a baseline cell after this long and report that it did not finish (900)")
    e = sub.add_parser("experiments", help="run every committed experiment configuration")
    e.add_argument("--out", default="examples/experiments/batch", help="where the results go (examples/experiments/batch)")
    e.add_argument("--only", help="substring of the configuration names to run")
    return p


def _options(ns: argparse.Namespace) -> dict[str, Any]:
    opts = dict(_DEFAULTS) | _OUTPUTS
    if ns.config:
        import yaml

        try:
            doc = yaml.safe_load(Path(ns.config).read_text()) or {}
        except OSError as exc:
            raise InputError(f"cannot read {ns.config}: {exc.strerror}") from exc
        except yaml.YAMLError as exc:
            raise InputError(f"{ns.config}: not YAML: {exc}") from exc
        if not isinstance(doc, dict):
            raise InputError(f"{ns.config}: expected a mapping of options")
        for k, v in doc.items():
            key = str(k).replace("-", "_")
            if key not in opts:
                raise InputError(f"{ns.config}: unknown option {k!r} (known: {', '.join(opts)})")
            opts[key] = v
    for k in opts:
        v = getattr(ns, k, None)
        if v is not None and v is not False:
            opts[k] = v
    return opts


def build(opts: dict[str, Any]) -> Any:
    """(workload, BatchConfig) from a dict of options."""
    from fluxlite.queue.fairness import DfsConfig, load_dfs_config, parse_dfs_config
    from fluxlite.sim.batch import workloads as W
    from fluxlite.sim.batch.sim import BatchConfig

    name = opts["workload"]
    if name == "esp":
        wl = W.esp(nodes=opts["nodes"] or 32, seed=opts["seed"])
    elif name == "esp-dynamic":
        wl = W.esp_dynamic(
            seed=opts["seed"], evolving=bool(opts["dynamic"]), dyn_model=opts["dyn_model"] or "linear",
            walltime_factor=float(opts["walltime_factor"] or 1.0), runtime_factor=float(opts["runtime_factor"] or 1.0),
            placement=opts["placement"] or "core",
        )  # fmt: skip
    elif name == "esp-malleable":
        wl = W.esp_malleable(
            share=float(opts["share"]), seed=opts["seed"], arrival=opts["arrival"] or "esp",
            walltime_factor=float(opts["walltime_factor"] or 1.5), sigma_scale=1.0 if opts["sigma_scale"] is None else float(opts["sigma_scale"]),
        )  # fmt: skip
    elif name == "power20":
        wl = W.power20(seed=opts["seed"])
    elif name == "swf":
        if not opts["swf"]:
            raise InputError("workload swf needs --swf FILE")
        wl = W.swf_workload(
            opts["swf"], nodes=opts["nodes"], cores_per_node=opts["cores_per_node"], limit=opts["limit"]
        )
    else:
        raise InputError(f"unknown workload {name!r}")
    if opts["corridor"] is not None:
        from fluxlite.queue.malleable import PowerCorridor

        wl.corridor = PowerCorridor(
            _corridor(opts["corridor"]), idle_w=wl.corridor.idle_w if wl.corridor else 71.0
        )
    if opts["idle_w"] is not None:
        if wl.corridor is None:
            raise InputError("--idle-w needs a power corridor (power20 or --corridor)")
        wl.corridor.idle_w = float(opts["idle_w"])
    dfs = None
    if opts["dynamic"]:
        if opts["dfs_text"]:
            dfs = parse_dfs_config(opts["dfs_text"], source="<config>")
        elif opts["dfs"]:
            dfs = load_dfs_config(opts["dfs"])
        else:
            dfs = DfsConfig()
    if opts["sched_interval"] is not None and int(opts["sched_interval"]) < 0:
        raise InputError(f"--sched-interval must be >= 0, got {opts['sched_interval']}")
    depth = opts["reservation_depth"]
    if dfs is not None and depth is None:
        depth = dfs.reservation_depth
    if opts["malleable"] == "power" and wl.corridor is None:
        raise InputError("the power strategy needs a workload with a power corridor (power20)")
    cfg = BatchConfig(
        queue=opts["queue"], reservation_depth=depth, malleable=opts["malleable"],
        power_waiting=opts["power_scope"] == "waiting", adapt_s=int(opts["adapt_s"]), dfs=dfs,
        sched_interval=int(opts["sched_interval"] or 0),
    )  # fmt: skip
    return wl, cfg


def _corridor(spec: Any) -> list[tuple[int, float, float]]:
    """``"0:1700:2500,200:1000:1700"`` or a YAML list of [from, low, high] -> sorted steps."""
    items = spec if isinstance(spec, list) else [p.split(":") for p in str(spec).split(",") if p.strip()]
    steps = []
    for it in items:
        try:
            t, lo, hi = (float(x) for x in it)
        except (TypeError, ValueError):
            raise InputError(f"corridor step {it!r}: expected FROM:LOW:HIGH (seconds, watts)") from None
        if lo > hi or t < 0:
            raise InputError(f"corridor step {it!r}: need FROM >= 0 and LOW <= HIGH")
        steps.append((int(t), lo, hi))
    if not steps:
        raise InputError("empty power corridor")
    return sorted(steps)


def _run(ns: argparse.Namespace) -> int:
    from fluxlite.sim.batch.report import plot, write_csv, write_json
    from fluxlite.sim.batch.sim import BatchSim

    opts = _options(ns)
    wl, cfg = build(opts)
    res = BatchSim(wl, cfg).run(progress=bool(opts["progress"]))
    if res.recount:
        sys.stderr.write(
            "aggregates differ from a recount after the run:\n" + "\n".join(res.recount[:5]) + "\n"
        )
        return 1
    s = res.summary
    keys = ("makespan_s", "utilization", "throughput_per_min", "avg_wait_s", "avg_response_s",
            "dyn_requests", "dyn_satisfied_jobs", "corridor_violations", "adaptations", "wall_s")  # fmt: skip
    print(f"{s['workload']} queue={s['queue']} malleable={s['malleable']} jobs={s['completed']}/{s['jobs']}")
    for k in keys:
        v = s[k]
        print(f"  {k:<22} {v:.3f}" if isinstance(v, float) else f"  {k:<22} {v}")
    if opts["json"]:
        write_json(s, opts["json"])
    if opts["csv"]:
        write_csv(res.jobs, opts["csv"])
    if opts["plots"]:
        plot(res, opts["plots"], title=s["workload"])
    return 0


def _bench(ns: argparse.Namespace) -> int:
    import json

    from fluxlite.sim.batch import workloads as W
    from fluxlite.sim.batch.sim import BatchConfig, BatchSim

    out: dict[str, Any] = {}
    times = []
    for _ in range(ns.repeat):
        t = time.perf_counter()
        r = BatchSim(W.esp(), BatchConfig(queue="easy", check=False)).run()
        times.append(time.perf_counter() - t)
    out["esp_easy_s_median"] = statistics.median(times)
    out["esp_easy_ms_per_queued_job"] = r.summary["sched_ms_per_queued_job"]
    print(f"esp easy: median {out['esp_easy_s_median']:.3f} s over {ns.repeat} (target <= 1 s); "
          f"{out['esp_easy_ms_per_queued_job']:.4f} ms scheduler time per queued job per pass")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        path = ns.swf
        if path is None:
            path = str(Path(tmp) / "synthetic.swf")
            W.synthetic_swf(path, jobs=ns.jobs, nodes=1024)
        t = time.perf_counter()
        cpu = time.process_time()
        wl = W.swf_workload(path, nodes=1024)
        r = BatchSim(wl, BatchConfig(queue="easy", check=False)).run(progress=True)
        dt = time.perf_counter() - t
        cpu = time.process_time() - cpu
    s = r.summary
    out.update(swf_jobs=len(wl.jobs), swf_nodes=1024, swf_s=dt, swf_cpu_s=cpu,
               swf_ms_per_queued_job=s["sched_ms_per_queued_job"], swf_passes=s["sched_passes"],
               swf_utilization=s["utilization"], load_average=list(os.getloadavg()))  # fmt: skip
    # the CPU time of this process: on a shared, loaded machine the wall time moves with the load
    print(f"swf {len(wl.jobs)} jobs on 1024 nodes (easy): {dt:.1f} s (target <= 30 s), {cpu:.1f} s CPU; "
          f"{s['sched_passes']} passes, {s['sched_ms_per_queued_job']:.4f} ms per queued job per pass, "
          f"utilization {s['utilization']:.3f}")  # fmt: skip
    if ns.json:
        Path(ns.json).write_text(json.dumps(out, indent=2) + "\n")
    return 0


def _bench_pass(ns: argparse.Namespace) -> int:
    import json

    from fluxlite.queue import POLICIES
    from fluxlite.sim.batch.passbench import bench_pass

    try:
        depths = tuple(int(x) for x in ns.depths.split(",") if x.strip())
    except ValueError:
        raise InputError(f"--depths {ns.depths!r}: expected comma-separated integers") from None
    policies = tuple(p.strip() for p in ns.policies.split(",") if p.strip())
    for p in policies:
        if p not in POLICIES:
            raise InputError(f"unknown queue policy {p!r} (known: {', '.join(POLICIES)})")
    if not depths or min(depths) < 1 or ns.nodes < 2 or ns.passes < 1:
        raise InputError("need depths >= 1, --nodes >= 2 and --passes >= 1")
    if ns.baseline_limit <= 0:
        raise InputError("--baseline-limit must be > 0")
    print(f"one scheduling pass after an early end, {ns.nodes} busy nodes (baseline: the first row"
          + (f"; and git revision {ns.baseline} per cell, CPU time" if ns.baseline else "") + ")")
    rows = []
    with tempfile.TemporaryDirectory(prefix="fluxlite-bench-pass-") as tree:
        if ns.baseline:
            from fluxlite.revision import extract_revision
            from fluxlite.sim.batch.passbench import baseline_cell

            extract_revision(ns.baseline, Path(tree), "fluxlite")
        for policy in policies:
            for depth in depths:
                r = bench_pass((depth,), (policy,), nodes=ns.nodes, passes=ns.passes)[0]
                rows.append(r)
                if not ns.baseline:
                    continue
                b = baseline_cell(tree, policy, depth, ns.nodes, ns.passes, ns.baseline_limit)
                r["baseline"] = ns.baseline
                if "timeout_s" in b:
                    r["baseline_timeout_s"] = b["timeout_s"]
                    print(f"  {'':<13} {ns.baseline}: did not finish in {b['timeout_s']:.0f} s "
                          "(setup and first plan included)", flush=True)
                    continue
                r["baseline_cpu_s_per_pass"] = bc = b["median_s_per_pass"]
                mine = r["median_cpu_s_per_pass"]
                r["baseline_over_this"] = bc / mine if mine > 0 else float("nan")
                print(f"  {'':<13} {ns.baseline}: CPU {bc:.4f} s per pass, {1000 * bc / depth:.4f} ms per queued "
                      f"job; {r['baseline_over_this']:.1f}x this code's CPU time", flush=True)
    base = rows[0]["median_s_per_pass"]
    for r in rows:
        r["ratio_to_first"] = r["median_s_per_pass"] / base if base > 0 else float("nan")
        print(f"{r['policy']:<13} depth {r['depth']:>6}: {r['ratio_to_first']:8.1f}x the baseline")
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


def experiment_configs() -> dict[str, dict[str, Any]]:
    """Every committed configuration: name -> options."""
    cfgs: dict[str, dict[str, Any]] = {}
    hp = "DFSPOLICY NONE\nRESERVATIONDEPTH 5\nRESERVATIONDELAYDEPTH 5\n"
    lim = "DFSPOLICY DFSTARGETDELAY\nDFSINTERVAL 01:00:00\nDFSDECAY 0\nDFSTARGETDELAYTIME {}\nRESERVATIONDEPTH 5\nRESERVATIONDELAYDEPTH 5\n"
    base = {"workload": "esp-dynamic", "queue": "hybrid", "reservation_depth": 5}
    cfgs["esp-dynamic-Static"] = {**base, "dynamic": False}
    cfgs["esp-dynamic-Dyn-HP"] = {**base, "dynamic": True, "dfs_text": hp}
    cfgs["esp-dynamic-Dyn-500"] = {**base, "dynamic": True, "dfs_text": lim.format(500)}
    cfgs["esp-dynamic-Dyn-600"] = {**base, "dynamic": True, "dfs_text": lim.format(600)}
    for pct in range(10, 101, 10):
        for strat in ("static", "fpsma", "perf"):
            cfgs[f"esp-malleable-{strat}-{pct}"] = {
                "workload": "esp-malleable", "share": pct / 100, "malleable": None if strat == "static" else strat,
            }  # fmt: skip
    cfgs["power-static"] = {"workload": "power20"}
    cfgs["power-running"] = {"workload": "power20", "malleable": "power", "power_scope": "running"}
    cfgs["power-waiting"] = {"workload": "power20", "malleable": "power", "power_scope": "waiting"}
    return cfgs


def _experiments(ns: argparse.Namespace) -> int:
    from tqdm import tqdm

    from fluxlite.sim.batch.report import write_json
    from fluxlite.sim.batch.sim import BatchSim

    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    cfgs = {k: v for k, v in experiment_configs().items() if not ns.only or ns.only in k}
    for name, c in tqdm(cfgs.items(), unit="config"):
        wl, cfg = build({**_DEFAULTS, **c})
        res = BatchSim(wl, cfg).run()
        if res.recount:
            raise FluxliteError(f"{name}: aggregates differ from a recount: {res.recount[0]}")
        s = {
            k: v for k, v in res.summary.items() if k not in ("wall_s", "sched_s", "sched_ms_per_queued_job")
        }
        s["config"] = name
        if name.startswith("esp-dynamic"):
            s["wait_per_job_s"] = {
                str(j.jobid): j.start - j.submit for j in sorted(res.jobs, key=lambda j: j.jobid)
            }
        write_json(s, out / f"{name}.json")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ns = _parser().parse_args(list(argv) if argv is not None else None)
    try:
        if ns.cmd == "run":
            return _run(ns)
        if ns.cmd == "bench":
            return _bench(ns)
        if ns.cmd == "bench-pass":
            return _bench_pass(ns)
        return _experiments(ns)
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite sim batch: {exc}\n")
        return 2
