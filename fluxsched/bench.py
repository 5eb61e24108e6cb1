"""``fluxlite-flux bench``: jobs scheduled per second and alloc latency in a real Flux instance.

For each scheduler (fluxlite; flux-core's ``sched-simple``, ``sched-fifo``,
``sched-backfill``; Fluxion's ``sched-fluxion-resource`` +
``sched-fluxion-qmanager`` when installed) a fresh ``flux start
--test-size=4`` instance gets a fake R of 4 nodes with many cores, so every
job fits at once and resources are never what the jobs wait for.

* Throughput: ``flux queue stop``; ``flux submit --cc=1-N -n1 true``;
  ``flux queue start``; jobs scheduled per second = (N - 1) / (last alloc -
  first alloc).  The alloc time of a job is its ``t_run`` (a job enters RUN
  when the scheduler's alloc response arrives).
* Latency at queue depth D: ``flux submit --cc=1-D -n1 true`` to a running
  queue; each job's latency is ``t_run - t_submit`` (submit to alloc, so
  the jobs ahead of it in the burst count); median and p99 over ``--reps``
  rounds.

Execution is simulated by job-exec's test mode
(``--setattr=system.exec.test.run_duration=0.001s``) unless ``--real-exec``:
on a 2-core machine thousands of flux-shell processes would otherwise
compete with the scheduler for the CPU.  Every figure is measured in the
same run on the same machine; ratios are against fluxlite.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from fluxsched.cli import MODULE_NAME, scheduler_modules
from fluxsched.instance import Instance, InstanceError, fake_R

SCHEDULERS = ("fluxlite", "sched-simple", "sched-fifo", "sched-backfill", "fluxion")


def _pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    k = min(len(xs) - 1, max(0, round(p / 100 * (len(xs) - 1))))
    return xs[k]


class _Inst(Instance):
    """A test instance of 4 brokers, a fake R of 4 nodes x ``cores`` cores, and scheduler ``sched``."""

    def __init__(self, flux: str, workdir: Path, cores: int, sched: str, args: list[str]) -> None:
        super().__init__(flux, workdir, R=fake_R(4, cores), args=args, by_config=sched == "fluxlite")
        if sched == "fluxlite":
            want = [MODULE_NAME]
        elif sched == "fluxion":
            want = ["sched-fluxion-resource", "sched-fluxion-feasibility", "sched-fluxion-qmanager"]
        else:
            want = [sched]
        have = scheduler_modules(self.run("module", "list"))
        if sorted(have) != sorted(want):  # the default is sched-simple, or Fluxion where installed
            for name in have:
                self.run("module", "remove", name)
            for name in want:
                extra = ["queue-depth=unlimited"] if name in ("sched-fifo", "sched-backfill") else []
                self.run("module", "load", name, *extra)
        self.scheduler = sorted(scheduler_modules(self.run("module", "list")))
        if self.scheduler != sorted(want):
            raise InstanceError(f"wanted scheduler modules {want}, the instance has {self.scheduler}")

    def run(self, *args: str) -> str:
        return self.flux(*args, timeout=900).stdout

    def _wait_allocated(self, n: int) -> list[tuple[float, float]]:
        deadline = time.monotonic() + 900
        while True:
            pend = self.run("jobs", "-n", "--filter=pending", "-o", "{id}").split()
            if not pend:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"{len(pend)} jobs still pending after 900 s")
            time.sleep(0.2)
        out = self.run("jobs", "-a", "-n", "-c", str(n), "-o", "{t_submit} {t_run}").split()
        pairs = [(float(a), float(b)) for a, b in zip(out[::2], out[1::2])]
        self.run("queue", "drain")
        self.run("job", "purge", "--force", "--num-limit=0")
        return pairs

    def _submit(self, n: int, real_exec: bool) -> None:
        extra = [] if real_exec else ["--setattr=system.exec.test.run_duration=0.001s"]
        self.run("submit", f"--cc=1-{n}", "--quiet", "-n1", *extra, "true")

    def throughput(self, n: int, real_exec: bool) -> float:
        """Jobs scheduled per second: ``n`` jobs wait in a stopped queue, which is then started."""
        self.run("queue", "stop")
        self._submit(n, real_exec)
        self.run("queue", "start")
        runs = sorted(b for _, b in self._wait_allocated(n))
        return (len(runs) - 1) / max(1e-9, runs[-1] - runs[0])

    def latency(self, n: int, real_exec: bool) -> list[float]:
        """Seconds from submit to alloc of each of ``n`` jobs submitted at once to a running queue."""
        self._submit(n, real_exec)
        return [b - a for a, b in self._wait_allocated(n)]


def _available(flux: str, sched: str) -> bool:
    if sched != "fluxion":
        return True
    prefix = Path(flux).resolve().parent.parent
    return any(prefix.glob("lib/flux/modules/sched-fluxion-qmanager*"))


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tqdm import tqdm

    results: dict[str, Any] = {
        "jobs": args.jobs, "cores_per_node": args.cores, "real_exec": args.real_exec,
        "depths": args.depths, "reps": args.reps, "fluxlite_args": args.arg, "schedulers": {},
    }
    scheds = [s for s in args.schedulers if _available(args.flux, s)]
    skipped = sorted(set(args.schedulers) - set(scheds))
    if skipped:
        results["not_installed"] = skipped
    for sched in tqdm(scheds, desc="schedulers", disable=args.quiet):
        with tempfile.TemporaryDirectory(prefix="fluxbench-") as d:
            inst = _Inst(args.flux, Path(d), args.cores, sched, args.arg)
            try:
                rates = []
                for _ in range(args.reps):
                    rates.append(inst.throughput(args.jobs, args.real_exec))
                res: dict[str, Any] = {"jobs_per_s": rates, "jobs_per_s_median": statistics.median(rates)}
                for depth in args.depths:
                    lats: list[float] = []
                    for _ in range(args.reps):
                        lats.extend(inst.latency(depth, args.real_exec))
                    res[f"latency_depth_{depth}"] = {
                        "median_ms": 1000 * statistics.median(lats), "p99_ms": 1000 * _pct(lats, 99),
                        "samples": len(lats),
                    }
                res["modules"] = inst.scheduler
                results["schedulers"][sched] = res
            finally:
                inst.stop()
    base = results["schedulers"].get("fluxlite")
    if base:
        for res in results["schedulers"].values():
            res["throughput_ratio_vs_fluxlite"] = res["jobs_per_s_median"] / base["jobs_per_s_median"]
    return results


def table(results: dict[str, Any]) -> str:
    depths = results["depths"]
    head = ["scheduler", "jobs/s (median)", "ratio vs fluxlite"]
    for d in depths:
        head += [f"alloc latency d={d} median ms", "p99 ms"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for sched, res in results["schedulers"].items():
        row = [sched, f"{res['jobs_per_s_median']:.0f}", f"{res.get('throughput_ratio_vs_fluxlite', 1):.2f}"]
        for d in depths:
            lat = res[f"latency_depth_{d}"]
            row += [f"{lat['median_ms']:.0f}", f"{lat['p99_ms']:.0f}"]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    default_flux = str(Path(os.environ.get("FLUXLITE_FLUX_PREFIX",
                                           str(Path.home() / ".cache/fluxlite/flux-0.88.0"))) / "bin/flux")
    ap = argparse.ArgumentParser(prog="fluxlite-flux bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--flux", default=default_flux, help=f"the flux command (default {default_flux})")
    ap.add_argument("--jobs", type=int, default=2000, help="jobs in the throughput burst (default 2000)")
    ap.add_argument("--cores", type=int, default=1024, help="cores per node of the fake R (default 1024)")
    ap.add_argument("--depths", type=int, nargs="+", default=[10, 1000], help="queue depths for latency")
    ap.add_argument("--reps", type=int, default=3, help="rounds per measurement (default 3)")
    ap.add_argument("--schedulers", nargs="+", default=list(SCHEDULERS), choices=SCHEDULERS)
    ap.add_argument("--arg", action="append", default=[], metavar="KEY=VALUE",
                    help=f"a {MODULE_NAME} setting (repeatable)")
    ap.add_argument("--real-exec", action="store_true", help="really run the jobs (default: job-exec test mode)")
    ap.add_argument("--out", type=Path, default=None, help="write results.json and results.md here")
    ap.add_argument("--json", action="store_true", help="print the results as JSON")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # so the instance is stopped on the way out
    if not Path(args.flux).exists():
        print(f"fluxlite-flux bench: no flux at {args.flux} (set --flux or FLUXLITE_FLUX_PREFIX)", file=sys.stderr)
        return 1
    try:
        results = run(args)
    except (RuntimeError, InstanceError) as exc:
        print(f"fluxlite-flux bench: {exc}", file=sys.stderr)
        return 1
    text = table(results)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
        (args.out / "results.md").write_text(text)
    print(json.dumps(results, indent=2) if args.json else text, end="")
    return 0
