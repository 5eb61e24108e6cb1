"""Issue 22's targets: hostile load against one instance, and the identity work per hop against main.

Usage (from the repository root; writes ``OUT/targets.txt`` and ``OUT/targets.json``)::

    python examples/security/targets.py [--out examples/security/out] [--seconds 20] \\
        [--main /work/main] [--main-python /work/main/.venv/bin/python]

**Hostile load.**  One ``fluxlite instance serve`` process (8 nodes, user
identities, limits, audit log, state file and the batch queue), and 16
threads for each kind of request the issue's attack used, all in flight at
once for ``--seconds``, each thread sending its kind again as soon as it is
refused: queue calls without a token, as another user and over the limit
(1); wildcard tokens (2); another user's request id and lease heartbeats
(3); jobspecs without a node level over ``max_nodes`` (4); 800-byte YAML
alias bombs (5); 6 MB messages, over the 4 MiB receive limit (6); child
names and paths carrying forged log lines (8).  Meanwhile a legitimate
client (alice) calls Stat every 50 ms; its median and 95th percentile
latency, the instance's largest RSS (sampled every 100 ms from
/proc/PID/status) and ``info --recount`` afterwards are reported.
Targets: median Stat <= 100 ms, RSS < 300 MB, recount clean.

**Identity work per hop.**  What a grow pays per level for identities: the
caller mints a token, the instance verifies it and writes one audit
record.  Measured in-process (``--calls`` of each, 5 rounds alternating
this checkout and ``--main`` run by its own interpreter on the same
machine), median microseconds per hop; target <= 50 µs.  Then
``fluxlite bench hierarchy`` (T8, one socket: the request where fixed costs
dominate; ``--bench-reps`` repetitions, the five-level sync mode) runs on
both checkouts one after the other: the leaf's client-observed grow time
and the per-level server time, medians, and their ratio.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import grpc  # noqa: E402

from tests.security.raw import Raw, Server, jobspec, mint, pb, qpb  # noqa: E402
from tests.security.test_alias_bomb import bomb  # noqa: E402

MICRO = r"""
import json, statistics, sys, tempfile, time
from pathlib import Path
from hierarchy._identity import AuditLog, Credential, Verifier, derive_user_key, new_site_key
site = new_site_key()
cred = Credential("alice", derive_user_key(site, "alice"))
ver = Verifier(site, "root")
d = tempfile.mkdtemp()
audit = AuditLog(Path(d) / "a.jsonl", max_bytes=1 << 30)
try:
    cred.token("root")
    mint = lambda: cred.token("root")
except TypeError:  # main: tokens for "*"
    mint = lambda: cred.token()
n = int(sys.argv[1])
out = {}
for name, fn in (
    ("mint", lambda: mint()),
    ("verify", None),
    ("audit", lambda: audit.write(user="alice", instance="root", op="MatchGrow", job=1, outcome="ok")),
):
    if name == "verify":
        toks = [mint() for _ in range(n)]
        t0 = time.perf_counter()
        for t in toks:
            ver.verify(t)
        out[name] = (time.perf_counter() - t0) / n * 1e6
        continue
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    out[name] = (time.perf_counter() - t0) / n * 1e6
audit.close()
print(json.dumps(out))
"""


def _kinds(setup: dict[str, Any]) -> dict[str, Any]:
    """The hostile requests, by kind (the issue's hole numbers)."""
    no_node = (
        b"version: 1\nresources:\n  - type: slot\n    count: 3\n    label: default\n    with:\n"
        b"      - type: socket\n        count: 2\n        with:\n          - type: core\n            count: 4\n"
        b"attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        b"    count:\n      per_slot: 1\n"
    )
    big = pb.MatchAllocateRequest(jobspec=b"x" * (6 * 1024 * 1024))
    forged = "x\n2026-01-01 00:00:00,000 root[1] WARNING forged"
    lease = pb.HeartbeatRequest(jobid=setup["lease"], lease_token=setup["lease_token"])
    return {
        "1-queue-no-token": lambda r: r.q("Submit", qpb.SubmitRequest(size=1, walltime=60), token=""),
        "1-queue-other-user": lambda r: r.q("Cancel", qpb.JobRef(jobid=setup["qjob"]), "bob"),
        "1-queue-over-limit": lambda r: r.q("Submit", qpb.SubmitRequest(size=7, walltime=60), "bob"),
        "2-wildcard-token": lambda r: r.i("Stat", pb.StatRequest(), token=mint("alice", "*")),
        "3-foreign-request-id": lambda r: r.i(
            "MatchAllocate", pb.MatchAllocateRequest(jobspec=no_node, request_id="a1"), "bob"
        ),
        "3-foreign-heartbeat": lambda r: r.i("Heartbeat", lease, "bob"),
        "4-no-node-level": lambda r: r.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=no_node), "bob"),
        "5-alias-bomb": lambda r: r.i(
            "MatchAllocate", pb.MatchAllocateRequest(jobspec=bomb().encode()), "bob"
        ),
        "6-big-message": lambda r: r.i("MatchAllocate", big, token=""),
        "8-log-injection": lambda r: r.i(
            "Shrink", pb.ShrinkRequest(jobid=setup["alice_job"], paths=[f"/cluster0/{forged}"]), "alice"
        ),
    }


def attack(kind: str, setup_file: Path) -> int:
    """One attacker process: 16 threads sending ``kind`` until the stop file appears; prints the outcomes."""
    setup = json.loads(setup_file.read_text())
    fn = _kinds(setup)[kind]
    stop = setup_file.with_suffix(".stop")
    counts: dict[str, int] = {}
    lock = threading.Lock()

    def run() -> None:
        r = Raw(setup["address"])
        while not stop.exists():
            try:
                fn(r)
                outcome = "accepted"
            except grpc.RpcError as exc:
                outcome = exc.code().name
            with lock:
                counts[f"{kind}:{outcome}"] = counts.get(f"{kind}:{outcome}", 0) + 1
        r.close()

    threads = [threading.Thread(target=run) for _ in range(16)]
    for t in threads:
        t.start()
    setup_file.with_name(f"ready-{kind}").touch()
    for t in threads:
        t.join()
    print(json.dumps(counts))
    return 0


def _stat_latencies(legit: Raw, seconds: float) -> list[float]:
    """Stat by alice every 50 ms for ``seconds``: the latencies in ms, sorted."""
    lat: list[float] = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        legit.i("Stat", pb.StatRequest(), "alice", timeout=30)
        lat.append((time.perf_counter() - t0) * 1e3)
        time.sleep(0.05)
    return sorted(lat)


def hostile_load(seconds: float, tmp: Path) -> dict[str, Any]:
    (tmp / "limits.yaml").write_text("default: {max_nodes: 2}\n")
    s = Server(tmp, nodes=8, args=["--queue", "easy", "--limits", str(tmp / "limits.yaml"),
                                    "--state", str(tmp / "root.state"), "--log-level", "WARNING",
                                    "--child-grace", "3600"])  # fmt: skip
    s.start()
    raw = s.raw()
    alice_job = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1), request_id="a1"), "alice")
    lease = raw.i("MatchAllocate", pb.MatchAllocateRequest(jobspec=jobspec(1), lease=True), "admin")
    qjob = raw.q("Submit", qpb.SubmitRequest(size=1, walltime=3600), "alice")
    setup = {"address": s.address, "alice_job": alice_job.jobid, "lease": lease.jobid,
             "lease_token": lease.lease_token, "qjob": qjob.jobid}  # fmt: skip
    setup_file = tmp / "setup.json"
    setup_file.write_text(json.dumps(setup))
    base_rss = s.rss_mb()
    legit = Raw(s.address)
    quiet = _stat_latencies(legit, min(5.0, seconds))  # the same machine's baseline, no attack
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--attack", k, "--setup", str(setup_file)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for k in _kinds(setup)
    ]
    rss: list[float] = []
    stop = threading.Event()

    def sampler() -> None:
        while not stop.is_set():
            rss.append(s.rss_mb())
            time.sleep(0.1)

    samp = threading.Thread(target=sampler, daemon=True)
    samp.start()
    kinds = list(_kinds(setup))
    deadline = time.monotonic() + 120
    while not all((tmp / f"ready-{k}").exists() for k in kinds):  # every attacker in flight
        if time.monotonic() > deadline or any(pr.poll() is not None for pr in procs):
            raise SystemExit("the attackers did not start")
        time.sleep(0.1)
    time.sleep(1.0)
    lat = _stat_latencies(legit, seconds)
    setup_file.with_suffix(".stop").touch()
    counts: dict[str, int] = {}
    for pr in procs:
        out, _ = pr.communicate(timeout=120)
        counts.update(json.loads(out.strip().splitlines()[-1]))
    stop.set()
    samp.join()
    info = json.loads(legit.i("Info", pb.InfoRequest(recount=True), "admin").json)
    legit.close()
    raw.close()
    s.stop()
    log = s.text_log()
    lat.sort()
    return {
        "seconds": seconds,
        "hostile_threads": 16 * len(procs),
        "stat_calls": len(lat),
        "stat_median_ms": statistics.median(lat),
        "stat_p95_ms": lat[int(0.95 * (len(lat) - 1))],
        "quiet_stat_median_ms": statistics.median(quiet),
        "load_average": os.getloadavg(),
        "rss_before_mb": base_rss,
        "rss_max_mb": max(rss),
        "recount_errors": info["recount_errors"],
        "jobs_after": [(j["jobid"], j["owner"]) for j in info["jobs"]],
        "forged_log_lines": sum(1 for x in log.splitlines() if x.startswith("2026-01-01")),
        "outcomes": dict(sorted(counts.items())),
    }


def micro(python: str, cwd: Path, calls: int) -> dict[str, float]:
    r = subprocess.run([python, "-c", MICRO, str(calls)], cwd=cwd, capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(cwd)})  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"micro benchmark failed in {cwd}: {r.stderr[-2000:]}")
    return json.loads(r.stdout)


def bench(python: str, cwd: Path, out: Path, reps: int) -> dict[str, float]:
    r = subprocess.run([python, "-m", "fluxlite.cli.main", "bench", "hierarchy", "--requests", "T8", "--reps",
                        str(reps), "--modes", "sync", "--skip-single", "--no-plots", "--out", str(out)],
                       cwd=cwd, capture_output=True, text=True, timeout=1800,
                       env={**os.environ, "PYTHONPATH": str(cwd)})  # fmt: skip
    if r.returncode != 0:
        raise SystemExit(f"bench hierarchy failed in {cwd}: {r.stderr[-2000:]}")
    rows = list(csv.DictReader(open(next(out.glob("*raw*.csv")))))  # noqa: SIM115
    return {"rows": len(rows), "csv": str(next(out.glob("*raw*.csv")))}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "examples" / "security" / "out")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--main", type=Path, default=Path("/work/main"))
    p.add_argument("--main-python", default="/work/main/.venv/bin/python")
    p.add_argument("--skip-bench", action="store_true", help="no fluxlite bench hierarchy runs")
    p.add_argument("--bench-reps", type=int, default=30)
    p.add_argument("--attack", help=argparse.SUPPRESS)
    p.add_argument("--setup", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.attack:
        return attack(a.attack, a.setup)
    a.out.mkdir(parents=True, exist_ok=True)
    res: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="flsec-", dir="/tmp") as td:
        res["hostile"] = hostile_load(a.seconds, Path(td))
    rounds: dict[str, list[dict[str, float]]] = {"main": [], "this": []}
    for _ in range(5):
        rounds["main"].append(micro(a.main_python, a.main, a.calls))
        rounds["this"].append(micro(sys.executable, ROOT, a.calls))
    res["per_hop_us"] = {
        who: {k: statistics.median(r[k] for r in rs) for k in ("mint", "verify", "audit")}
        for who, rs in rounds.items()
    }
    for who in rounds:
        res["per_hop_us"][who]["total"] = sum(res["per_hop_us"][who].values())
    res["per_hop_ratio_this_over_main"] = (
        res["per_hop_us"]["this"]["total"] / res["per_hop_us"]["main"]["total"]
    )
    write(a.out, res)
    if not a.skip_bench:
        res["bench"] = bench_pair(a)
        write(a.out, res)
    return 0


def bench_pair(a: argparse.Namespace) -> dict[str, Any]:
    from hierarchy.bench import LEVELS  # noqa: F401 - same checkout's bench module

    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="flsec-bench-", dir="/tmp") as td:
        for who, py, cwd in (("main", a.main_python, a.main), ("this", sys.executable, ROOT)):
            d = Path(td) / who
            out[who] = bench(py, cwd, d, a.bench_reps) | {"summary": (d / "summary.txt").read_text()}
    return out


def write(out: Path, res: dict[str, Any]) -> None:
    (out / "targets.json").write_text(json.dumps(res, indent=2, default=str) + "\n")
    h = res["hostile"]
    ph = res["per_hop_us"]
    lines = [
        "Issue 22 targets (examples/security/targets.py)",
        "",
        f"hostile load: {h['hostile_threads']} threads (16 per kind, {len({k.split(':')[0] for k in h['outcomes']})} kinds) "
        f"for {h['seconds']:.0f} s",
        f"  legitimate Stat: {h['stat_calls']} calls, median {h['stat_median_ms']:.1f} ms, p95 {h['stat_p95_ms']:.1f} ms"
        f"  (target median <= 100 ms: {'met' if h['stat_median_ms'] <= 100 else 'NOT met'})",
        f"  the same Stat before the attack: median {h['quiet_stat_median_ms']:.1f} ms"
        f" (ratio {h['stat_median_ms'] / h['quiet_stat_median_ms']:.1f}); machine load average "
        f"{', '.join(f'{x:.1f}' for x in h['load_average'])} on {os.cpu_count()} cores",
        f"  instance RSS: {h['rss_before_mb']:.0f} MB before, {h['rss_max_mb']:.0f} MB at most"
        f"  (target < 300 MB: {'met' if h['rss_max_mb'] < 300 else 'NOT met'})",
        f"  info --recount afterwards: {h['recount_errors'] or 'clean'}; jobs left: {h['jobs_after']}",
        f"  forged lines in the instance log: {h['forged_log_lines']}",
        "  outcomes (kind:status count):",
        *[f"    {k}: {v}" for k, v in h["outcomes"].items()],
        "",
        "identity work per hop (mint + verify + audit), median of 5 rounds, microseconds:",
        *[
            f"  {who:5s} mint {v['mint']:.1f}  verify {v['verify']:.1f}  audit {v['audit']:.1f}  total {v['total']:.1f}"
            for who, v in ph.items()
        ],
        f"  this / main: {res['per_hop_ratio_this_over_main']:.2f}"
        f"  (target total <= 50 us: {'met' if ph['this']['total'] <= 50 else 'NOT met'})",
    ]
    if "bench" in res:
        for who in ("main", "this"):
            lines += [
                "",
                f"fluxlite bench hierarchy --requests T8 --modes sync ({who}):",
                res["bench"][who]["summary"],
            ]
    (out / "targets.txt").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    raise SystemExit(main())
