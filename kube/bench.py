"""``fluxlite bench kube``: a ReplicaSet scaled 1 -> 100 -> 0 through the scheduler shim.

The published experiment: a graph of about 4,344 vertices and a ReplicaSet
grown from 1 to 100 pods, each new pod a MatchGrow of the same job.  Here:

* the cluster is ``--nodes`` (26) Nodes of 32 CPUs, 128 GiB and 6 GPUs in one
  zone, i.e. ``cluster + zone + 26 x (node + 32 core + 128 memory + 6 gpu)``
  = 4,344 vertices and 4,343 containment edges (the published graph had
  4,344 vertices and 8,686 edges: the same tree with edges both ways);
* the Nodes live in the API-compatible test server (``python -m
  kube.testing`` in its own process - ``--in-process`` for a thread of this
  one -, real HTTP on loopback, with its ReplicaSet controller), and the shim
  (form A, :class:`kube.scheduler.KubeScheduler`) talks to it with the
  official ``kubernetes`` client;
* a ReplicaSet of 1-CPU, 1-GiB pods is created with 1 replica and scaled
  up by ``--step`` replicas at a time to ``--replicas`` (each step waits
  until the new pods are bound), then down to 0; ``--repeat`` times.

Per pod it records the MatchAllocate (replica 1) or MatchGrow (replicas
2..N) time inside the shim's core, and the end-to-end latency from the
moment the shim sees the pod pending to the Binding's success.  Extra bare
pods (``--bare``, one group each) add MatchAllocate samples.  After each
scale-down it checks that every aggregate equals a fresh recount and no job
is left.  Outputs: a table on stdout, ``--json FILE`` (``ma_median_ms``,
``mg_median_ms``, ``bind_median_ms`` and the rest), ``--csv`` per replica
index and ``--plot`` (latency per replica index).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["main", "run"]


def _ms(xs: list[float]) -> float | None:
    return round(statistics.median(xs) * 1e3, 4) if xs else None


def _wait(pred: Any, timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.005)
    raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")


def run(
    nodes: int = 26,
    replicas: int = 100,
    step: int = 1,
    repeat: int = 3,
    bare: int = 20,
    progress: bool = True,
    bind_workers: int = 8,
    in_process: bool = False,
) -> dict[str, Any]:
    """Run the experiment; returns the results document (see the module docstring)."""
    import gc
    import logging

    from kubernetes import client

    from fluxlite.check import recount_errors
    from kube.config import KubeConfig
    from kube.objects import node_object, pod_object, replicaset_object
    from kube.scheduler import KubeScheduler
    from kube.testing import ApiServer, ApiServerProcess

    logging.getLogger("fluxlite.kube").setLevel(logging.WARNING)
    # in its own process by default: in-process, the server's threads would share the GIL with the shim
    srv: Any = (ApiServer if in_process else ApiServerProcess)(host="127.0.0.1", port=0, controllers=True)
    srv.start()
    sched = None
    try:
        api = srv.api_client()
        v1 = client.CoreV1Api(api)
        apps = client.AppsV1Api(api)
        for i in range(nodes):
            v1.create_node(node_object(f"node{i:02d}", cpu="32", memory="128Gi", gpus=6, zone="zone-a"))
        cfg = KubeConfig()
        sched = KubeScheduler(
            srv.api_client(), cfg, backoff_initial=0.2, backoff_max=2.0, bind_workers=bind_workers
        ).start()
        vertices = len(sched.core.engine.graph)
        edges = vertices - 1  # a tree: every vertex but the root has one containment parent
        gc.collect()
        gc.freeze()
        per_index_match: dict[int, list[float]] = {}
        per_index_cpu: dict[int, list[float]] = {}
        per_index_bind: dict[int, list[float]] = {}
        ma: list[float] = []
        mg: list[float] = []
        ma_cpu: list[float] = []
        mg_cpu: list[float] = []
        bind: list[float] = []
        queue: list[float] = []
        recount_ok = True
        scale_up_s: list[float] = []
        scale_down_s: list[float] = []
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=repeat * replicas + bare, desc="pods bound", unit="pod", file=sys.stderr)
        m = sched.metrics
        for r in range(repeat):
            name = f"web{r}"
            rs = replicaset_object(name, replicas=1, cpu="1", memory="1Gi", scheduler=cfg.scheduler_name)
            apps.create_namespaced_replica_set("default", rs)

            def bound_of_rs(_name: str = name) -> list[str]:
                with sched.lock:
                    return [k for k in m.bound_at if k.startswith(f"default/{_name}-")]

            _wait(lambda: len(bound_of_rs()) >= 1, 30, f"{name}: first pod bound")
            t0 = time.perf_counter()
            n = 1
            while n < replicas:
                n = min(replicas, n + step)
                apps.patch_namespaced_replica_set_scale(name, "default", {"spec": {"replicas": n}})
                _wait(lambda n=n: len(bound_of_rs()) >= n, 60, f"{name}: {n} pods bound")
            scale_up_s.append(time.perf_counter() - t0)
            with sched.lock:
                keys = sorted(bound_of_rs(), key=lambda k: m.bound_at[k])
            order = keys
            for idx, k in enumerate(order, start=1):
                per_index_match.setdefault(idx, []).append(m.match_s[k])
                per_index_cpu.setdefault(idx, []).append(m.match_cpu_s[k])
                per_index_bind.setdefault(idx, []).append(m.bind_s[k])
                (mg if m.grew[k] else ma).append(m.match_s[k])
                (mg_cpu if m.grew[k] else ma_cpu).append(m.match_cpu_s[k])
                bind.append(m.bind_s[k])
                queue.append(m.queue_s[k])
            if bar is not None:
                bar.update(len(order))
            t0 = time.perf_counter()
            apps.patch_namespaced_replica_set_scale(name, "default", {"spec": {"replicas": 0}})
            _wait(lambda: sched.wait_until(lambda: not sched.core.pods, 0.01), 60, f"{name}: scale to 0")
            scale_down_s.append(time.perf_counter() - t0)
            with sched.lock:
                errs = recount_errors(sched.core.engine)
                recount_ok = recount_ok and not errs and not sched.core.engine.jobs
                for k in order:
                    m.bound_at.pop(k, None)
            apps.delete_namespaced_replica_set(name, "default")
        for i in range(bare):
            v1.create_namespaced_pod("default", pod_object(f"bare{i}", cpu="1", memory="1Gi"))
            _wait(lambda i=i: f"default/bare{i}" in m.bound_at, 30, f"bare{i} bound")
            ma.append(m.match_s[f"default/bare{i}"])
            ma_cpu.append(m.match_cpu_s[f"default/bare{i}"])
            bind.append(m.bind_s[f"default/bare{i}"])
            if bar is not None:
                bar.update(1)
        if bar is not None:
            bar.close()
        gc.unfreeze()
    finally:
        if sched is not None:
            sched.stop()
        srv.stop()
    idx = sorted(per_index_match)
    return {
        "experiment": "ReplicaSet 1 -> N -> 0 through fluxlite kube (form A) against kube.testing.ApiServer",
        "nodes": nodes,
        "node_shape": "32 cpu, 128Gi memory (1 GiB per memory vertex), 6 nvidia.com/gpu, zone zone-a",
        "vertices": vertices,
        "containment_edges": edges,
        "replicas": replicas,
        "step": step,
        "repeat": repeat,
        "bare_pods": bare,
        "bind_workers": bind_workers,
        "api_server": "kube.testing.ApiServer in this process"
        if in_process
        else "python -m kube.testing (own process)",
        "ma_samples": len(ma),
        "mg_samples": len(mg),
        "ma_median_ms": _ms(ma),
        "mg_median_ms": _ms(mg),
        "bind_median_ms": _ms(bind),
        "queue_median_ms": _ms(queue),
        "ma_cpu_median_ms": _ms(ma_cpu),
        "mg_cpu_median_ms": _ms(mg_cpu),
        "mg_p90_ms": round(sorted(mg)[int(0.9 * (len(mg) - 1))] * 1e3, 4) if mg else None,
        "bind_p90_ms": round(sorted(bind)[int(0.9 * (len(bind) - 1))] * 1e3, 4) if bind else None,
        "scale_up_s_median": round(statistics.median(scale_up_s), 3) if scale_up_s else None,
        "scale_down_s_median": round(statistics.median(scale_down_s), 3) if scale_down_s else None,
        "recount_after_scale_down_ok": recount_ok,
        "per_index": [
            {
                "replica": i,
                "op": "MatchAllocate" if i == 1 else "MatchGrow",
                "match_ms_median": _ms(per_index_match[i]),
                "match_cpu_ms_median": _ms(per_index_cpu[i]),
                "bind_ms_median": _ms(per_index_bind[i]),
            }
            for i in idx
        ],
    }


def _throughput_run(
    nodes: int, replicas: int, cpu: str, memory: str, progress: bool, timeout: float, bare: int = 0
) -> dict[str, Any]:
    """Pods bound per second, end to end: a ``replicas``-pod ReplicaSet created at once on ``nodes`` Nodes.

    Self-contained (its imports inside, nothing else of this module), so that the same driver
    can run against another checkout's ``kube`` package - the baseline (``--baseline-ref``).
    The clock runs from the ReplicaSet's creation to the last pod's Binding answered.  After
    ``timeout`` seconds the run stops and reports what was bound by then (``finished``
    false).  Then ``bare`` pods without an owner (one group each, so one MatchAllocate each,
    as in kube-scheduler's SchedulingBasic) are created at once, for the MatchAllocate median.
    """
    import gc
    import logging
    import os
    import statistics
    import sys
    import time
    from concurrent.futures import ThreadPoolExecutor

    from kubernetes import client

    from kube.config import KubeConfig
    from kube.objects import node_object, pod_object, replicaset_object
    from kube.scheduler import KubeScheduler
    from kube.testing import ApiServerProcess

    logging.getLogger("fluxlite.kube").setLevel(logging.WARNING)
    srv = ApiServerProcess(
        host="127.0.0.1", port=0, controllers=True, watch_cache_size=max(1000, 4 * (replicas + bare))
    )
    srv.start()
    sched = None
    load = [round(x, 1) for x in os.getloadavg()]
    try:
        api = srv.api_client()
        v1 = client.CoreV1Api(api)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda i: v1.create_node(node_object(f"node{i:05d}", cpu=cpu, memory=memory, gpus=0,
                                                                 zone=f"zone-{i % 3}")), range(nodes)))  # fmt: skip
        nodes_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        sched = KubeScheduler(srv.api_client(), KubeConfig(), backoff_initial=0.2, backoff_max=2.0).start()
        start_s = time.perf_counter() - t0
        vertices = len(sched.core.engine.graph)
        gc.collect()
        gc.freeze()
        m = sched.metrics
        bar = None
        if progress:
            from tqdm import tqdm

            bar = tqdm(total=replicas, desc=f"pods bound ({nodes} nodes)", unit="pod", file=sys.stderr)

        def wait_bound(want: int, since: float) -> tuple[int, bool]:
            end, done = since + timeout, 0
            while done < want and time.perf_counter() < end:
                time.sleep(0.05)
                with sched.lock:
                    now = len(m.bound_at)
                if bar is not None:
                    bar.update(now - done)
                done = now
            return done, done >= want

        def cpu_s() -> tuple[float, float, float]:
            """CPU seconds used so far by this process (the scheduler and this driver), by the
            server's process, and by this thread (the driver: it creates the ReplicaSet and polls)."""
            own = os.times()
            proc = getattr(srv, "_proc", None)
            try:
                with open(f"/proc/{proc.pid}/stat") as f:  # type: ignore[union-attr]
                    fields = f.read().rsplit(")", 1)[1].split()
                server = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
            except (AttributeError, OSError, ValueError, IndexError):
                server = float("nan")
            return own.user + own.system, server, time.thread_time()

        rs = replicaset_object("burst", replicas=replicas, cpu="1", memory="1Gi", scheduler="fluxlite")
        load_at_start = [round(x, 1) for x in os.getloadavg()]
        cpu0 = cpu_s()
        t0 = time.perf_counter()
        client.AppsV1Api(api).create_namespaced_replica_set("default", rs)
        done, finished = wait_bound(replicas, t0)
        t_stop = time.perf_counter()
        cpu1 = cpu_s()
        load_at_end = [round(x, 1) for x in os.getloadavg()]
        with sched.lock:
            keys = list(m.bound_at)
            last = max(m.bound_at.values()) if keys else t_stop
            grow = [m.match_s[k] for k in keys if m.grew.get(k)]
            grow_cpu = [m.match_cpu_s[k] for k in keys if m.grew.get(k)]
            alloc = [m.match_s[k] for k in keys if not m.grew.get(k)]
            bind = [m.bind_s[k] for k in keys]
        if bar is not None:
            bar.close()
        bare_alloc: list[float] = []
        bare_cpu: list[float] = []
        if finished and bare:
            with ThreadPoolExecutor(8) as pool:
                list(pool.map(lambda i: v1.create_namespaced_pod("default", pod_object(f"bare{i}", cpu="1",
                                                                                       memory="1Gi")), range(bare)))  # fmt: skip
            wait_bound(replicas + bare, time.perf_counter())
            with sched.lock:
                for k in m.bound_at:
                    if k.startswith("default/bare") and not m.grew.get(k):
                        bare_alloc.append(m.match_s[k])
                        bare_cpu.append(m.match_cpu_s[k])
        gc.unfreeze()
        wall = (last if finished else t_stop) - t0
        med = lambda xs: round(statistics.median(xs) * 1e3, 4) if xs else None  # noqa: E731
        return {
            "nodes": nodes,
            "node_shape": f"{cpu} cpu, {memory} memory, zones zone-0..2",
            "vertices": vertices,
            "replicas": replicas,
            "finished": finished,
            "bound": done,
            "nodes_created_s": round(nodes_s, 2),
            "scheduler_start_s": round(start_s, 2),
            "create_to_last_bound_s": round(wall, 3),
            "pods_per_s": round(done / wall, 1) if wall > 0 else None,
            "ma_samples": len(alloc),
            "mg_samples": len(grow),
            "ma_median_ms": med(alloc),
            "mg_median_ms": med(grow),
            "mg_cpu_median_ms": med(grow_cpu),
            "bare_pods": len(bare_alloc),
            "bare_ma_median_ms": med(bare_alloc),
            "bare_ma_cpu_median_ms": med(bare_cpu),
            "pending_to_bound_median_ms": med(bind),
            # CPU seconds per 1,000 pods bound (= ms per pod), create -> stop: what the run costs
            # whatever else runs; the scheduler's is its process's less the driver thread's
            "scheduler_cpu_s_per_1000": round((cpu1[0] - cpu0[0] - (cpu1[2] - cpu0[2])) * 1000 / max(done, 1), 3),
            "server_cpu_s_per_1000": round((cpu1[1] - cpu0[1]) * 1000 / max(done, 1), 3),
            "driver_cpu_s_per_1000": round((cpu1[2] - cpu0[2]) * 1000 / max(done, 1), 3),
            "loadavg_before_nodes": load,
            "loadavg_at_start": load_at_start,
            "loadavg_at_end": load_at_end,
            "narrowed_full": list(getattr(sched.core, "narrowed", [])),
        }
    finally:
        if sched is not None:
            sched.stop()
        srv.stop()


def throughput(
    nodes: int,
    replicas: int,
    cpu: str,
    memory: str,
    progress: bool,
    timeout: float,
    baseline_ref: str | None,
    bare: int = 0,
    baseline_timeout: float | None = None,
) -> dict[str, Any]:
    """This checkout's throughput and, with ``baseline_ref``, the same driver on that git ref's code
    (extracted with ``git archive`` into a temporary directory, run in a child process) - the
    baseline first, so that both see the machine in the same state as far as possible."""
    doc: dict[str, Any] = {
        "experiment": "pods bound per second end to end: one ReplicaSet created at once, form A against "
        "python -m kube.testing (own process)",
    }
    if baseline_ref:
        doc["baseline"] = _baseline_run(
            baseline_ref, [nodes, replicas, cpu, memory, False, baseline_timeout or timeout, bare]
        )
        doc["baseline_ref"] = baseline_ref
    doc["this"] = _throughput_run(nodes, replicas, cpu, memory, progress, timeout, bare)
    if baseline_ref and doc["baseline"].get("pods_per_s"):
        doc["ratio_pods_per_s"] = round(doc["this"]["pods_per_s"] / doc["baseline"]["pods_per_s"], 3)
    if baseline_ref:
        this, base = doc["this"], doc["baseline"]
        pairs = {
            "scheduler": (this["scheduler_cpu_s_per_1000"], base.get("scheduler_cpu_s_per_1000")),
            "server": (this["server_cpu_s_per_1000"], base.get("server_cpu_s_per_1000")),
            "total": (_cpu_total(this), _cpu_total(base)),
        }
        doc["ratio_cpu_per_pod"] = {k: round(a / b, 3) if a and b else None for k, (a, b) in pairs.items()}
    return doc


def _cpu_total(x: dict[str, Any]) -> float | None:
    """CPU ms per pod of the scheduler, the server and the driver together (None if one is unknown)."""
    parts = [x.get(k) for k in ("scheduler_cpu_s_per_1000", "server_cpu_s_per_1000", "driver_cpu_s_per_1000")]
    if any(v is None or v != v for v in parts):
        return None
    return round(sum(parts), 3)


def _baseline_run(ref: str, args: list[Any]) -> dict[str, Any]:
    import inspect
    import os
    import subprocess
    import tempfile

    from fluxlite.errors import InputError
    from fluxlite.revision import extract_revision

    with tempfile.TemporaryDirectory(prefix="fluxlite-bench-kube-") as d:
        try:
            extract_revision(ref, Path(d, "src"))
        except InputError as exc:
            raise RuntimeError(str(exc)) from None
        code = (
            "from __future__ import annotations\nfrom typing import Any\nimport json, sys\n"
            + inspect.getsource(_throughput_run)
            + "\nprint(json.dumps(_throughput_run(*json.loads(sys.argv[1]))))\n"
        )
        env = {**os.environ, "PYTHONPATH": str(Path(d, "src")), "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            [sys.executable, "-c", code, json.dumps(args)],
            capture_output=True,
            text=True,
            env=env,
            cwd=d,
            check=False,
        )
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
            raise RuntimeError(f"baseline ({ref}) failed: {tail}")
        return json.loads(proc.stdout.strip().splitlines()[-1])


def _plot_throughput(doc: dict[str, Any], path: Path) -> None:
    """Pods bound per second and the MatchGrow / MatchAllocate medians against the node count,
    this checkout and the baseline (a hollow marker: the baseline was stopped unfinished)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for who, colour in (("this", "C0"), ("baseline", "C3")):
        rows = [r[who] for r in doc["runs"] if who in r]
        if not rows:
            continue
        label = "this checkout" if who == "this" else f"baseline ({doc['runs'][0].get('baseline_ref')})"
        x = [r["nodes"] for r in rows]
        ax[0].plot(x, [r["pods_per_s"] for r in rows], "-", color=colour, label=label)
        for r in rows:
            ax[0].plot(r["nodes"], r["pods_per_s"], "o", color=colour, mfc=colour if r["finished"] else "none")
        ax[1].plot(x, [r["mg_cpu_median_ms"] for r in rows], "o-", color=colour, label=f"MatchGrow, {label}")
        ax[1].plot(x, [r["bare_ma_cpu_median_ms"] for r in rows], "s--", color=colour, label=f"MatchAllocate, {label}")
    ax[0].set_xlabel("nodes (ReplicaSet of 2 pods per node)")
    ax[0].set_ylabel("pods bound per second, create -> last bound")
    ax[0].set_yscale("log")
    ax[0].legend()
    ax[1].axhline(2.0, color="k", lw=0.8, ls=":", label="target 2 ms")
    ax[1].set_xlabel("nodes")
    ax[1].set_ylabel("median per pod (ms, scheduling-thread CPU)")
    ax[1].set_yscale("log")
    ax[1].legend(fontsize=7)
    for a in ax:
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _plot(doc: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = doc["per_index"]
    x = [r["replica"] for r in rows]
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    ax[0].plot(x, [r["match_ms_median"] for r in rows], ".", ms=4, label="wall clock")
    ax[0].plot(
        x, [r["match_cpu_ms_median"] for r in rows], "x", ms=3, color="C2", label="scheduling thread CPU"
    )
    ax[0].axhline(2.0, color="r", lw=0.8, ls="--", label="target 2 ms")
    ax[0].set_xlabel("replica index (1 = MatchAllocate, 2.. = MatchGrow)")
    ax[0].set_ylabel("match time in the shim (ms, median of repeats)")
    ax[0].set_title(f"{doc['vertices']}-vertex graph, {doc['nodes']} nodes")
    ax[0].legend()
    ax[1].plot(x, [r["bind_ms_median"] for r in rows], ".", ms=4, color="C1")
    ax[1].set_xlabel("replica index")
    ax[1].set_ylabel("pending -> bound (ms, median of repeats)")
    ax[1].set_title("end to end, against kube.testing over HTTP")
    for a in ax:
        a.set_ylim(bottom=0)
        a.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="fluxlite bench kube",
        description="ReplicaSet 1 -> N -> 0 through the Kubernetes shim against the loopback test API server: "
        "MatchAllocate / MatchGrow time per pod inside the shim and pending -> bound latency.",
    )
    p.add_argument("--nodes", type=int, default=26, help="nodes of 32 CPU/128Gi/6 GPU (26: 4,344 vertices)")
    p.add_argument("--replicas", type=int, default=100, help="scale the ReplicaSet up to this (default 100)")
    p.add_argument("--step", type=int, default=1, help="replicas added per scale call (default 1)")
    p.add_argument("--repeat", type=int, default=3, help="ReplicaSets run one after the other (default 3)")
    p.add_argument(
        "--bare", type=int, default=20, help="extra bare pods: one MatchAllocate each (default 20)"
    )
    p.add_argument("--bind-workers", type=int, default=8, help="bindings under way at once (default 8)")
    p.add_argument("--in-process", action="store_true",
                   help="run the test API server in this process (default: its own process)")  # fmt: skip
    p.add_argument("--throughput", action="store_true",
                   help="instead: one ReplicaSet of --replicas pods created at once on --nodes nodes of "
                        "--node-cpu/--node-memory; pods bound per second, create -> last bound")  # fmt: skip
    p.add_argument("--node-cpu", default="8", help="with --throughput: CPUs per node (default 8)")
    p.add_argument("--node-memory", default="32Gi", help="with --throughput: memory per node (default 32Gi)")
    p.add_argument("--timeout", type=float, default=3600.0, help="with --throughput: give up after (s)")
    p.add_argument("--baseline-ref", metavar="REF",
                   help="with --throughput: also run the same driver on this git ref's code (e.g. main)")  # fmt: skip
    p.add_argument("--sizes", metavar="N:R,...",
                   help="with --throughput: several runs, N nodes and R replicas each (e.g. "
                        "500:1000,1000:2000,5000:10000), instead of --nodes/--replicas")  # fmt: skip
    p.add_argument("--baseline-timeout", type=float, metavar="S",
                   help="with --throughput: stop the baseline after S seconds and report what it bound "
                        "by then (default: --timeout)")  # fmt: skip
    p.add_argument("--json", type=Path, help="write the results here")
    p.add_argument("--csv", type=Path, help="write per replica index medians here")
    p.add_argument("--plot", type=Path, help="write the latency-per-replica plot (PNG) here (with --throughput: "
                   "pods/s and match medians against the node count)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    a = p.parse_args(list(argv) if argv is not None else None)
    for name in ("nodes", "replicas", "step", "repeat", "bind_workers"):
        if getattr(a, name) < 1:
            sys.stderr.write(f"fluxlite bench kube: --{name} must be >= 1\n")
            return 2
    if a.throughput:
        try:
            sizes = [(a.nodes, a.replicas)]
            if a.sizes:
                sizes = [(int(n), int(r)) for n, _, r in (x.partition(":") for x in a.sizes.split(","))]
                if any(n < 1 or r < 1 for n, r in sizes):
                    raise ValueError("sizes must be >= 1")
        except ValueError as exc:
            sys.stderr.write(f"fluxlite bench kube: --sizes {a.sizes[:80]!r}: N:R,... expected ({exc})\n")
            return 2
        runs = []
        try:
            for n, r in sizes:
                one = throughput(n, r, a.node_cpu, a.node_memory, not a.no_progress, a.timeout,
                                 a.baseline_ref, a.bare, a.baseline_timeout)  # fmt: skip
                runs.append(one)
                for who in ("this", "baseline"):
                    if who in one:
                        x = one[who]
                        done = "" if x["finished"] else f", NOT finished: {x['bound']} bound when stopped"
                        print(
                            f"{who}: {x['replicas']} pods on {x['nodes']} nodes ({x['vertices']} vertices): "
                            f"{x['pods_per_s']} pods/s (create -> last bound {x['create_to_last_bound_s']} s"
                            f"{done}); MatchGrow median {x['mg_median_ms']} ms (CPU {x['mg_cpu_median_ms']} ms), "
                            f"MatchAllocate median {x['bare_ma_median_ms']} ms over {x['bare_pods']} bare pods; "
                            f"pending -> bound median {x['pending_to_bound_median_ms']} ms; CPU ms per pod: "
                            f"scheduler {x['scheduler_cpu_s_per_1000']}, server {x['server_cpu_s_per_1000']}, "
                            f"driver {x.get('driver_cpu_s_per_1000')} (total {_cpu_total(x)}); "
                            f"load average {x['loadavg_at_start']} -> {x['loadavg_at_end']}"
                        )
                if "ratio_pods_per_s" in one:
                    print(f"pods/s ratio this / {one['baseline_ref']}: {one['ratio_pods_per_s']}")
                if "ratio_cpu_per_pod" in one:
                    r = one["ratio_cpu_per_pod"]
                    print(f"CPU per pod ratio this / {one['baseline_ref']}: scheduler {r['scheduler']}, "
                          f"server {r['server']}, total {r['total']}")  # fmt: skip
                sys.stdout.flush()
        except RuntimeError as exc:
            sys.stderr.write(f"fluxlite bench kube: {exc}\n")
            return 1
        doc = {
            "experiment": runs[0]["experiment"],
            "command": "fluxlite bench kube " + " ".join(list(argv) if argv is not None else sys.argv[1:]),
            "runs": runs,
        }
        if a.json:
            a.json.write_text(json.dumps(doc, indent=1) + "\n")
        if a.plot:
            _plot_throughput(doc, a.plot)
        return 0
    try:
        doc = run(
            a.nodes,
            a.replicas,
            a.step,
            a.repeat,
            a.bare,
            progress=not a.no_progress,
            bind_workers=a.bind_workers,
        )
    except RuntimeError as exc:
        sys.stderr.write(f"fluxlite bench kube: {exc}\n")
        return 1
    doc["command"] = "fluxlite bench kube " + " ".join(list(argv) if argv is not None else sys.argv[1:])
    print(
        f"graph: {doc['vertices']} vertices ({doc['nodes']} nodes); ReplicaSet 1 -> {doc['replicas']} -> 0, "
        f"step {doc['step']}, x{doc['repeat']}"
    )
    print(f"MatchAllocate median {doc['ma_median_ms']} ms over {doc['ma_samples']} pods (wall clock)")
    print(
        f"MatchGrow     median {doc['mg_median_ms']} ms over {doc['mg_samples']} pods (p90 {doc['mg_p90_ms']} ms)"
    )
    print(
        f"the same in the scheduling thread's CPU time: MatchAllocate {doc['ma_cpu_median_ms']} ms, "
        f"MatchGrow {doc['mg_cpu_median_ms']} ms (what the shim costs, whatever else runs)"
    )
    print(
        f"pending->bound median {doc['bind_median_ms']} ms (p90 {doc['bind_p90_ms']} ms); "
        f"of which pending->placed (waiting for the scheduling thread) median {doc['queue_median_ms']} ms"
    )
    print(f"scale-down leaves aggregates equal to a recount: {doc['recount_after_scale_down_ok']}")
    if a.json:
        a.json.write_text(json.dumps(doc, indent=1) + "\n")
    if a.csv:
        lines = ["replica,op,match_ms_median,match_cpu_ms_median,bind_ms_median"]
        lines += [
            f"{r['replica']},{r['op']},{r['match_ms_median']},{r['match_cpu_ms_median']},{r['bind_ms_median']}"
            for r in doc["per_index"]
        ]
        a.csv.write_text("\n".join(lines) + "\n")
    if a.plot:
        _plot(doc, a.plot)
    return 0 if doc["recount_after_scale_down_ok"] else 1
