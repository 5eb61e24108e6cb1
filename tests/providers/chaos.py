"""Chaos runs of EC2 bursting: random fault schedules (seeded) over the EC2 actions, kill -9, restart.

One schedule: a fresh instance process (state file + EC2 provider, through
the fault proxy to moto's server) runs a seeded sequence of operations -
allocate local jobs, grow them by cloud nodes, shrink whole nodes, release
jobs, watch for dead instances, retry hand-backs - while the proxy applies
the schedule's faults to RunInstances / CreateFleet / DescribeInstances /
TerminateInstances (delay, 500, throttling, capacity error, lost answer) and
SIGKILLs the process at chosen points (when it sends the n-th call of an
action, before or after EC2 carried it out, or between two operations).
Then a new process restores the instance from its state file and opens the
provider (as ``instance serve`` does on a restart), reconciles with EC2 and
retries its hand-backs, faults cleared; and checks:

* no instance tagged with the schedule's owner runs that no job holds (leaked),
* no job holds a node whose instance does not run (dead held),
* the graph's aggregates equal a recount.

Everything is a function of the seed (the kill points are call counts and
operation indexes, never timers), so a failing schedule replays with
``--seed S --first N --schedules 1``.  Processes come from a forkserver
(started once, modules preloaded), so a schedule costs well under a second.

    python -m tests.providers.chaos --schedules 200 --out examples/benchmarks/burst/chaos.txt
"""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing as mp
import os
import random
import signal
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ACTIONS = ("RunInstances", "CreateFleet", "DescribeInstances", "TerminateInstances")
KINDS = ("delay", "500", "throttle", "capacity", "lost", "kill-before", "kill-after")
OPS = ("alloc", "grow", "grow", "grow", "shrink", "release", "watch", "tick", "kill")


@dataclass
class Schedule:
    index: int
    seed: int
    mode: str
    ops: list[tuple[str, int]]
    faults: list[tuple[str, str, int, int, float]]  # action, kind, after, times, delay
    kill_at: int | None  # op index for a kill between operations

    def describe(self) -> str:
        f = ", ".join(f"{a}:{k}@{n}x{t}" for a, k, n, t, _ in self.faults) or "none"
        return f"#{self.index} {self.mode} ops={len(self.ops)} faults=[{f}] kill_at={self.kill_at}"


def make_schedule(seed: int, index: int) -> Schedule:
    rng = random.Random(seed * 1_000_003 + index)
    mode = "fleet" if rng.random() < 0.25 else "types"
    ops = [("alloc", 0)] + [(rng.choice(OPS[:-1]), rng.randrange(1 << 30)) for _ in range(rng.randint(4, 9))]
    faults = []
    for _ in range(rng.randint(1, 4)):
        action = rng.choice(ACTIONS if mode == "fleet" else ACTIONS[:1] + ACTIONS[2:])
        kind = rng.choice(KINDS)
        faults.append((action, kind, rng.randint(0, 3), rng.randint(1, 2), rng.uniform(0.01, 0.1)))
    kill_at = rng.randrange(len(ops)) if rng.random() < 0.3 else None
    return Schedule(index, seed, mode, ops, faults, kill_at)


# ====================================================================== the instance process
def _config(url: str, state_dir: Path, owner: str, mode: str) -> Any:
    from providers.ec2 import Ec2Config

    return Ec2Config.from_dict(
        {
            "region": "us-east-1",
            "endpoint_url": url,
            "image_id": "ami-12c6146b",
            "state_dir": str(state_dir / "ec2"),
            "owner": owner,
            "allowed_types": ["t2.micro", "t2.small", "t2.medium"],
            # (moto's DescribeInstanceTypes costs seconds per process; these are its shapes)
            "shapes": {
                "t2.micro": {"vcpus": 1, "memory_gb": 1},
                "t2.small": {"vcpus": 1, "memory_gb": 2},
                "t2.medium": {"vcpus": 2, "memory_gb": 4},
            },
            "mode": mode,
            "max_instances": 6,
            "max_retries": 1,
            "timeout": 10,
        },
        source="chaos.yaml",
    )


def _open(url: str, state_dir: Path, owner: str, mode: str) -> Any:
    """The instance as ``instance serve`` builds it: restored from its state file if there is one."""
    from botocore.retries import standard

    from fluxlite.api import Engine
    from fluxlite.readers.generate import generate_graph
    from hierarchy import Instance
    from providers.ec2 import Ec2Provider
    from tests.providers import _chaos_warm

    standard.ExponentialBackoff.delay_amount = lambda self, context: 0.005  # type: ignore[method-assign]
    prov = Ec2Provider(_config(url, state_dir, owner, mode), session=_chaos_warm.SESSION)
    state = state_dir / "instance.state"
    if state.exists():
        return Instance.restore(state, provider=prov)
    eng = Engine(generate_graph(nodes=1, sockets=1, cores=2))
    inst = Instance(eng, name="root", provider=prov, state_path=state)
    inst.save()
    return inst


def run_ops(url: str, state_dir: str, owner: str, mode: str, ops: list[tuple[str, int]], kill_at: int | None) -> None:
    """The instance process of one schedule (SIGKILLed by the proxy or by itself, or it ends)."""
    from fluxlite.errors import FluxliteError
    from tests.providers.ec2_helpers import cores_jobspec, node_jobspec

    inst = _open(url, Path(state_dir), owner, mode)
    for k, (op, r) in enumerate(ops):
        if kill_at == k:
            os.kill(os.getpid(), signal.SIGKILL)
        jobs = sorted(inst.engine.jobs)
        try:
            if op == "alloc" or not jobs:
                inst.match_allocate(cores_jobspec(1))
            elif op == "grow":
                j = jobs[r % len(jobs)]
                inst.match_grow(j, node_jobspec(1 + r % 2, cores=1 + (r >> 3) % 2), request_id=f"g{k}")
            elif op == "shrink":
                nodes = _cloud_nodes(inst, jobs[r % len(jobs)])
                if nodes:
                    inst.shrink(jobs[r % len(jobs)], paths=[nodes[r % len(nodes)]])
            elif op == "release":
                inst.release(jobs[r % len(jobs)])
            elif op == "watch":
                lost = inst.provider.watch()
                if lost:
                    inst.nodes_down(lost)
            elif op == "tick":
                inst.retry_returns(force=True)
        except FluxliteError:
            pass  # busy, unreachable, ...: the schedule goes on
    inst.provider.close()


def _cloud_nodes(inst: Any, jobid: int) -> list[str]:
    g = inst.engine.graph
    return sorted(
        g.path(v)
        for v in inst.engine.traverser.job_vertices(jobid)
        if g.v_type[v] == "node" and g.properties(v).get("instance_type")
    )


def recover_and_check(url: str, moto_url: str, state_dir: str, owner: str, mode: str, out: Any) -> None:
    """The restarted instance: reconcile, retry hand-backs, then report what the invariants need."""
    from fluxlite.check import recount_errors
    from fluxlite.errors import FluxliteError
    from tests.providers._chaos_warm import SESSION

    try:
        inst = _open(url, Path(state_dir), owner, mode)
        prov = inst.provider
        for _ in range(5):
            try:
                prov.reconcile(lambda path: inst.engine.graph.vertex_by_path(path) is not None)
                lost = prov.watch()
                if lost:
                    inst.nodes_down(lost)
                inst.retry_returns(force=True)
            except FluxliteError:
                continue
            if not inst.returning:
                break
        held: set[str] = set()
        g = inst.engine.graph
        for j in inst.engine.jobs:
            held |= {p.rsplit("/", 1)[1] for p in _cloud_nodes(inst, j)}
        draining = {p.rsplit("/", 1)[1] for it in inst.returning for p in it["roots"]}
        c = SESSION.client("ec2", endpoint_url=moto_url, region_name="us-east-1")
        pages = c.get_paginator("describe_instances").paginate(
            Filters=[
                {"Name": "tag:fluxlite:owner", "Values": [owner]},
                {"Name": "instance-state-name", "Values": ["pending", "running"]},
            ]
        )
        running = {i["InstanceId"] for pg in pages for r in pg["Reservations"] for i in r["Instances"]}
        report = {
            "held": sorted(held),
            "running": sorted(running),
            "draining": sorted(draining),
            "recount": [str(e) for e in recount_errors(inst.engine, [0])],
            "cloud_vertices": sum(1 for v, pr in g.v_props.items() if g.is_live(v) and pr.get("instance_type")),
        }
        # leave nothing behind in moto for the next schedule
        for j in list(inst.engine.jobs):
            inst.release(j)
        inst.retry_returns(force=True)
        prov.close()
        out.send(report)
    except BaseException as exc:  # report, never hang the parent
        out.send({"error": f"{type(exc).__name__}: {exc}"})


# ====================================================================== the parent
@dataclass
class Result:
    schedule: Schedule
    killed: bool
    leaked: list[str] = field(default_factory=list)
    dead_held: list[str] = field(default_factory=list)
    recount: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.leaked or self.dead_held or self.recount or self.error)


class ChaosRunner:
    """Runs schedules against one moto server and one fault proxy (both on loopback)."""

    def __init__(self, moto_url: str, workdir: Path) -> None:
        from tests.providers.faultproxy import FaultProxy

        self.moto_url = moto_url
        self.workdir = workdir
        self.proxy = FaultProxy(moto_url).start()
        self.ctx = mp.get_context("forkserver")
        self.ctx.set_forkserver_preload(["tests.providers.chaos", "tests.providers._chaos_warm", "hierarchy"])
        self._child: Any = None
        self.proxy.on_kill = self._kill

    def _kill(self) -> None:
        c = self._child
        if c is not None and c.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(c.pid, signal.SIGKILL)

    def run(self, sch: Schedule, timeout: float = 120.0) -> Result:
        t0 = time.perf_counter()
        owner = f"chaos-{sch.seed}-{sch.index}-{os.getpid()}"
        d = self.workdir / f"s{sch.index}"
        d.mkdir(parents=True, exist_ok=True)
        self.proxy.clear()
        for action, kind, after, times, delay in sch.faults:
            self.proxy.fail(action, kind, times=times, after=after, delay=delay)
        p = self.ctx.Process(target=run_ops, args=(self.proxy.url, str(d), owner, sch.mode, sch.ops, sch.kill_at))
        self._child = p
        p.start()
        p.join(timeout)
        if p.is_alive():
            self._kill()
            p.join(10)
        killed = p.exitcode == -signal.SIGKILL
        self._child = None
        self.proxy.clear()
        rx, tx = self.ctx.Pipe(duplex=False)
        q = self.ctx.Process(target=recover_and_check, args=(self.proxy.url, self.moto_url, str(d), owner, sch.mode, tx))
        q.start()
        report = rx.recv() if rx.poll(timeout) else {"error": "the restarted instance did not report"}
        q.join(10)
        if q.is_alive():
            q.kill()
            q.join()
        res = Result(sch, killed, seconds=time.perf_counter() - t0)
        if "error" in report:
            res.error = report["error"]
            return res
        held, running = set(report["held"]), set(report["running"])
        res.leaked = sorted(running - held)
        res.dead_held = sorted(held - running)
        res.recount = report["recount"]
        return res

    def close(self) -> None:
        self.proxy.stop()


def run_chaos(schedules: int, seed: int = 0, first: int = 0, progress: bool = False) -> list[Result]:
    from providers._moto import moto_server

    with moto_server() as moto, tempfile.TemporaryDirectory(prefix="fluxlite-chaos-") as tmp:
        runner = ChaosRunner(moto.url, Path(tmp))
        try:
            it: Any = range(first, first + schedules)
            if progress:
                from tqdm import tqdm

                it = tqdm(it, desc="chaos schedules", unit="schedule", file=sys.stderr)
            return [runner.run(make_schedule(seed, i)) for i in it]
        finally:
            runner.close()


def summary(results: list[Result], seed: int) -> str:
    faults = Counter(k for r in results for _, k, _, _, _ in r.schedule.faults)
    actions = Counter(a for r in results for a, _, _, _, _ in r.schedule.faults)
    bad = [r for r in results if not r.ok]
    secs = sorted(r.seconds for r in results)
    lines = [
        f"EC2 chaos: {len(results)} schedules (seed {seed}), moto {_moto_version()} behind the fault proxy",
        f"faults scheduled: {dict(sorted(faults.items()))}",
        f"  on actions: {dict(sorted(actions.items()))}",
        f"instance processes killed (SIGKILL) mid-schedule: {sum(r.killed for r in results)}",
        f"leaked instances (running, tagged, no job holds them): {sum(len(r.leaked) for r in results)}",
        f"nodes held by a job without a running instance: {sum(len(r.dead_held) for r in results)}",
        f"schedules whose graph differs from a recount: {sum(bool(r.recount) for r in results)}",
        f"schedules that failed to recover: {sum(bool(r.error) for r in results)}",
        f"seconds per schedule: median {secs[len(secs) // 2]:.2f}, max {secs[-1]:.2f}" if secs else "",
    ]
    for r in bad[:20]:
        lines.append(
            f"FAILED {r.schedule.describe()}: leaked={r.leaked} dead_held={r.dead_held} "
            f"recount={r.recount[:2]} error={r.error}"
        )
    lines.append("OK" if not bad else f"{len(bad)} schedules FAILED")
    return "\n".join(x for x in lines if x) + "\n"


def _moto_version() -> str:
    import moto

    return str(moto.__version__)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.providers.chaos", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    ap.add_argument("--schedules", type=int, default=200, help="how many schedules (default 200)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the schedules (default 0)")
    ap.add_argument("--first", type=int, default=0, help="index of the first schedule (replay one)")
    ap.add_argument("--out", type=Path, help="also write the summary to this file")
    a = ap.parse_args(argv)
    if a.schedules < 1:
        ap.error("--schedules must be at least 1")
    results = run_chaos(a.schedules, a.seed, a.first, progress=True)
    cmd = f"python -m tests.providers.chaos --schedules {a.schedules} --seed {a.seed}"
    text = f"command: {cmd}" + (f" --first {a.first}" if a.first else "") + "\n" + summary(results, a.seed)
    sys.stdout.write(text)
    if a.out is not None:
        a.out.write_text(text)
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
