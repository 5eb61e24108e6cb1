"""``fluxlite bench burst``: what cloud bursting costs, against a local EC2-compatible endpoint.

For each instance type of the published experiment (t2.micro ... t2.2xlarge,
g2.2xlarge, g3.4xlarge) and 1, 2, 4 and 8 instances, ``--reps`` times: the
provider maps the jobspec to an EC2 request (mapping), creates and describes
the instances (provider call), encodes the reply as a JGF subgraph (JGF), and
a real :class:`fluxlite.api.Engine` attaches that subgraph and allocates it
to a running job (attach+update); then the instances are terminated again.
Plus ``--fleet-reps`` EC2 Fleet requests of 10 instances, timed from the
request to the attached subgraph.

The endpoint is a moto server this command starts on 127.0.0.1 (unless
``--endpoint URL`` names another EC2-compatible one).  Output: a table,
``burst.csv`` (every sample), ``burst-*.png`` box plots per type, and with
``--json FILE`` the per-type medians and the overhead shares ``mapping_pct``
and ``jgf_pct`` (of the provider call time).

``--attach-only [--baseline REV]``: attach+update alone (no EC2 call: the
subgraphs the provider would hand out for 1, 2, 4, 8 instances of each type),
this checkout and the baseline revision (``git archive REV``, default
``main``) measured in turns, ``--rounds`` times each, in fresh processes;
prints the medians in µs per vertex+edge and this/baseline ratios, and
writes ``attach.txt`` in ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.cli._help import plain
from fluxlite.errors import InputError
from fluxlite.revision import extract_revision

__all__ = ["main"]

TYPES = [
    "t2.micro",
    "t2.small",
    "t2.medium",
    "t2.large",
    "t2.xlarge",
    "t2.2xlarge",
    "g2.2xlarge",
    "g3.4xlarge",
]
#: shapes of the published experiment for types a local endpoint may not describe (vCPU, GB, GPUs)
SHAPES = {
    "g2.2xlarge": {"vcpus": 8, "memory_gb": 15, "gpus": 1},
    "g3.4xlarge": {"vcpus": 16, "memory_gb": 122, "gpus": 4},
}
SIZES = [1, 2, 4, 8]
_LOCAL = (
    "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
    "      - type: core\n        count: 1\nattributes:\n  system:\n    duration: 3600\n"
    "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
)


def _jobspec(nodes: int) -> str:
    return (
        f"version: 1\nresources:\n  - type: node\n    count: {nodes}\n    with:\n      - type: slot\n"
        "        count: 1\n        label: default\n        with:\n          - type: core\n            count: 1\n"
        "attributes:\n  system:\n    duration: 3600\ntasks:\n  - command: [app]\n    slot: default\n"
        "    count:\n      per_slot: 1\n"
    )


def _provider(endpoint: str, state: Path, **kw: Any) -> Any:
    from providers.ec2 import Ec2Config, Ec2Provider

    doc = {
        "region": "us-east-1",
        "endpoint_url": endpoint,
        "image_id": "ami-12c6146b",
        "state_dir": str(state),
        "shapes": SHAPES,
        "max_instances": 64,
        "owner": f"fluxlite-bench-{state.name}",
        **kw,
    }
    return Ec2Provider(Ec2Config.from_dict(doc, source="bench"))


def _attach(doc: bytes) -> tuple[float, int, int]:
    """Attach+update ``doc`` into a fresh one-node engine whose job grows; (seconds, vertices, edges)."""
    import orjson

    from fluxlite.api import Engine
    from fluxlite.jobspec import parse_jobspec
    from fluxlite.readers.generate import generate_graph

    eng = Engine(generate_graph(nodes=1, sockets=1, cores=2))
    job = eng.allocate(parse_jobspec(_LOCAL), fmt="jgf").jobid
    g = orjson.loads(doc)["graph"]
    t0 = time.perf_counter()
    eng.attach(doc, source="burst", allocate_to=job)
    return time.perf_counter() - t0, len(g["nodes"]), len(g["edges"])


def run(
    endpoint: str, reps: int, fleet_reps: int, types: list[str], sizes: list[int], progress: bool
) -> list[dict]:
    """The measured rows; the providers' journals live in a temporary directory removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="fluxlite-burst-") as work:
        return _run(work, endpoint, reps, fleet_reps, types, sizes, progress)


def _run(
    work: str, endpoint: str, reps: int, fleet_reps: int, types: list[str], sizes: list[int], progress: bool
) -> list[dict]:
    from tqdm import tqdm

    rows: list[dict] = []
    bar = tqdm(total=len(types) * len(sizes) * reps + fleet_reps, disable=not progress, unit="req")
    for t in types:
        p = _provider(endpoint, Path(work) / t.replace(".", "_"), allowed_types=[t])
        p.grow(_jobspec(1), "warmup")  # shapes, zones and the endpoint's first-call costs, not measured
        p.reconcile(lambda _p: False)
        for n in sizes:
            js = _jobspec(n)
            for r in range(reps):
                rid = f"{t}-{n}-{r}"
                t0 = time.perf_counter()
                doc = p.grow(js, rid)
                total = time.perf_counter() - t0
                att, nv, ne = _attach(doc)
                tm = p.last_timing
                rows.append(
                    {
                        "kind": "types",
                        "type": t,
                        "instances": n,
                        "rep": r,
                        "mapping_ms": tm["mapping_s"] * 1e3,
                        "call_ms": tm["call_s"] * 1e3,
                        "jgf_ms": tm["jgf_s"] * 1e3,
                        "grow_ms": total * 1e3,
                        "attach_ms": att * 1e3,
                        "vertices": nv,
                        "edges": ne,
                        "attach_us_per_elem": att * 1e6 / (nv + ne),
                    }
                )
                p.shrink(doc)
                bar.update()
    fp = _provider(endpoint, Path(work) / "fleet", mode="fleet", allowed_types=TYPES[:6])
    fp.grow(_jobspec(1), "warmup")
    fp.reconcile(lambda _p: False)
    for r in range(fleet_reps):
        t0 = time.perf_counter()
        doc = fp.grow(_jobspec(10), f"fleet-{r}")
        att, nv, ne = _attach(doc)
        total = time.perf_counter() - t0
        tm = fp.last_timing
        rows.append(
            {
                "kind": "fleet",
                "type": "fleet",
                "instances": 10,
                "rep": r,
                "mapping_ms": tm["mapping_s"] * 1e3,
                "call_ms": tm["call_s"] * 1e3,
                "jgf_ms": tm["jgf_s"] * 1e3,
                "grow_ms": total * 1e3,
                "attach_ms": att * 1e3,
                "vertices": nv,
                "edges": ne,
                "attach_us_per_elem": att * 1e6 / (nv + ne),
            }
        )
        fp.shrink(doc)
        bar.update()
    bar.close()
    return rows


def summarize(rows: list[dict]) -> dict[str, Any]:
    out: dict[str, Any] = {"types": {}, "fleet": {}}
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(r["type"], []).append(r)
    for t, rs in by.items():
        med = {
            k: statistics.median(x[k] for x in rs)
            for k in ("mapping_ms", "call_ms", "jgf_ms", "attach_ms", "attach_us_per_elem", "grow_ms")
        }
        med["mapping_pct"] = 100 * med["mapping_ms"] / med["call_ms"]
        med["jgf_pct"] = 100 * med["jgf_ms"] / med["call_ms"]
        med["by_instances"] = {
            str(n): {
                k: statistics.median(x[k] for x in rs if x["instances"] == n)
                for k in ("mapping_ms", "call_ms", "jgf_ms", "attach_ms", "vertices", "edges")
            }
            for n in sorted({x["instances"] for x in rs})
        }
        if t == "fleet":
            total = statistics.median(x["grow_ms"] for x in rs)
            ours = statistics.median(x["grow_ms"] - x["call_ms"] for x in rs)
            med["request_to_attached_ms"] = total
            med["fluxlite_share_pct"] = 100 * ours / total
            out["fleet"] = med
        else:
            out["types"][t] = med
    ty = [r for r in rows if r["kind"] == "types"]
    if ty:
        out["max_mapping_plus_jgf_pct"] = max(
            100 * (x["mapping_ms"] + x["jgf_ms"]) / x["call_ms"]
            for x in [
                {
                    k: statistics.median(r[k] for r in ty if r["type"] == t and r["instances"] == n)
                    for k in ("mapping_ms", "jgf_ms", "call_ms")
                }
                for t in {r["type"] for r in ty}
                for n in {r["instances"] for r in ty}
            ]
        )
        out["attach_us_per_elem_median"] = statistics.median(r["attach_us_per_elem"] for r in ty)
    return out


def _plot(rows: list[dict], out: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    types = [t for t in TYPES if any(r["type"] == t for r in rows)] + (
        ["fleet"] if any(r["type"] == "fleet" for r in rows) else []
    )
    fig, axes = plt.subplots(2, 2, figsize=(13, 8))
    for ax, (key, title) in zip(
        axes.flat,
        [("mapping_ms", "jobspec -> request (ms)"), ("call_ms", "provider call: create + describe (ms)"),
         ("jgf_ms", "reply -> JGF (ms)"), ("attach_us_per_elem", "attach+update (µs per vertex+edge)")],
    ):  # fmt: skip
        data = [[r[key] for r in rows if r["type"] == t] for t in types]
        ax.boxplot(data, tick_labels=types, showfliers=False)
        ax.set_title(title)
        ax.tick_params(axis="x", rotation=45)
        ax.grid(alpha=0.3)
    fig.suptitle("fluxlite bench burst: per type, all sizes (1, 2, 4, 8 instances; fleet: 10)")
    fig.tight_layout()
    f = out / "burst-boxplots.png"
    fig.savefig(f, dpi=110)
    plt.close(fig)
    files.append(f)
    fig, ax = plt.subplots(figsize=(8, 5))
    for t in [t for t in types if t != "fleet"]:
        rs = [r for r in rows if r["type"] == t]
        ns = sorted({r["instances"] for r in rs})
        ax.plot(
            ns,
            [statistics.median(r["call_ms"] for r in rs if r["instances"] == n) for n in ns],
            marker="o",
            label=t,
        )
    ax.set_xlabel("instances per request")
    ax.set_ylabel("provider call (ms, median)")
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    f = out / "burst-call-vs-size.png"
    fig.savefig(f, dpi=110)
    plt.close(fig)
    files.append(f)
    return files


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="fluxlite bench burst",
        description=plain(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--reps", type=int, default=20, help="repetitions per type and size (default 20)")
    ap.add_argument("--fleet-reps", type=int, default=10, help="fleet requests of 10 instances (default 10)")
    ap.add_argument("--types", default=",".join(TYPES), help="comma-separated instance types")
    ap.add_argument("--sizes", default="1,2,4,8", help="instances per request (default 1,2,4,8)")
    ap.add_argument("--endpoint", help="an EC2-compatible endpoint to use instead of a local moto server")
    ap.add_argument("--out", type=Path, default=Path("bench-out/burst"), help="directory for CSV and PNG")
    ap.add_argument("--json", type=Path, help="write the summary (per-type medians, overhead shares) here")
    ap.add_argument("--no-plots", action="store_true", help="write the CSV and summary only")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar")
    ap.add_argument("--attach-only", action="store_true", help="time attach+update alone, against --baseline")
    ap.add_argument("--baseline", default="main", help="git revision measured beside this checkout ('' = none)")
    ap.add_argument("--rounds", type=int, default=5, help="--attach-only: alternating rounds per tree (default 5)")
    a = ap.parse_args(argv)
    types = [t for t in a.types.split(",") if t]
    try:
        sizes = [int(x) for x in a.sizes.split(",") if x]
    except ValueError:
        sys.stderr.write(f"fluxlite bench burst: --sizes: expected numbers, got {a.sizes!r}\n")
        return 2
    if a.reps < 1 or a.fleet_reps < 0 or a.rounds < 1 or not sizes or min(sizes) < 1:
        sys.stderr.write("fluxlite bench burst: --reps, --rounds and --sizes must be positive\n")
        return 2
    if a.attach_only:
        return attach_only(a.baseline, a.rounds, a.reps, sizes, a.out, not a.no_progress)
    from providers._moto import moto_server

    a.out.mkdir(parents=True, exist_ok=True)
    if a.endpoint:
        rows = run(a.endpoint, a.reps, a.fleet_reps, types, sizes, not a.no_progress)
    else:
        with moto_server() as srv:
            sys.stdout.write(f"local moto server on {srv.url}\n")
            rows = run(srv.url, a.reps, a.fleet_reps, types, sizes, not a.no_progress)
    with open(a.out / "burst.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    s = summarize(rows)
    out = sys.stdout
    out.write(
        f"{'type':<11} {'mapping ms':>10} {'call ms':>9} {'JGF ms':>8} {'map %':>6} {'JGF %':>6} "
        f"{'attach ms':>9} {'µs/elem':>8}\n"
    )
    for t, m in list(s["types"].items()) + ([("fleet", s["fleet"])] if s["fleet"] else []):
        out.write(
            f"{t:<11} {m['mapping_ms']:>10.3f} {m['call_ms']:>9.2f} {m['jgf_ms']:>8.3f} {m['mapping_pct']:>6.2f} "
            f"{m['jgf_pct']:>6.2f} {m['attach_ms']:>9.3f} {m['attach_us_per_elem']:>8.2f}\n"
        )
    if s["fleet"]:
        out.write(
            f"fleet of 10: request -> attached {s['fleet']['request_to_attached_ms']:.1f} ms, provider call "
            f"{s['fleet']['call_ms']:.1f} ms, fluxlite's share {s['fleet']['fluxlite_share_pct']:.2f}%\n"
        )
    if "max_mapping_plus_jgf_pct" in s:
        out.write(
            f"targets: mapping+JGF <= 1% of the call for every type and size: worst "
            f"{s['max_mapping_plus_jgf_pct']:.2f}% -> {'met' if s['max_mapping_plus_jgf_pct'] <= 1 else 'NOT met'}; "
            f"attach+update <= 10 µs per element: median {s['attach_us_per_elem_median']:.2f} µs -> "
            f"{'met' if s['attach_us_per_elem_median'] <= 10 else 'NOT met'}"
            + (
                f"; fleet share <= 5%: {s['fleet']['fluxlite_share_pct']:.2f}% -> "
                f"{'met' if s['fleet']['fluxlite_share_pct'] <= 5 else 'NOT met'}"
                if s["fleet"]
                else ""
            )
            + "\n"
        )
    out.write(f"wrote {a.out / 'burst.csv'}\n")
    if not a.no_plots:
        for f in _plot(rows, a.out):
            out.write(f"wrote {f}\n")
    if a.json:
        a.json.write_text(json.dumps(s, indent=2) + "\n")
        out.write(f"wrote {a.json}\n")
    return 0


def attach_only(baseline: str, rounds: int, reps: int, sizes: list[int], out_dir: Path, progress: bool) -> int:
    """See the module docstring (``--attach-only``)."""
    import os
    import subprocess

    repo = Path(__file__).resolve().parent.parent
    probe = Path(__file__).with_name("_attach_probe.py")
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fluxlite-attach-") as tmp:
        trees = {"this": repo}
        label = {"this": _describe_rev(repo, "HEAD") + " (+ work tree)"}
        if baseline:
            base = Path(tmp) / "baseline"
            base.mkdir()
            try:
                extract_revision(baseline, base)
            except InputError as exc:
                sys.stderr.write(f"fluxlite bench burst: --baseline {baseline}: {exc}\n")
                return 2
            trees["baseline"] = base
            label["baseline"] = f"{baseline} = {_describe_rev(repo, baseline)}"
        samples: dict[str, dict[str, list[float]]] = {k: {} for k in trees}
        it: Any = range(rounds)
        if progress:
            from tqdm import tqdm

            it = tqdm(it, desc="attach rounds", unit="round", file=sys.stderr)
        for _ in it:
            for name, tree in trees.items():
                env = {**os.environ, "PYTHONPATH": str(tree)}
                r = subprocess.run(
                    [sys.executable, str(probe), str(reps), ",".join(map(str, sizes))],
                    cwd=tmp, env=env, capture_output=True, text=True, check=False,
                )  # fmt: skip
                if r.returncode != 0:
                    sys.stderr.write(f"fluxlite bench burst: the probe failed on {name}: {r.stderr.strip()[-500:]}\n")
                    return 1
                for t, rows in json.loads(r.stdout).items():
                    samples[name].setdefault(t, []).extend(sec * 1e6 / elems for sec, elems in rows)
    lines = [
        f"attach+update of burst subgraphs (µs per vertex+edge), {rounds} rounds x {reps} reps x sizes {sizes}, "
        "medians; trees measured in turns in fresh processes",
    ]
    for k in trees:
        lines.append(f"  {k}: {label[k]}")
    head = f"{'type':<11} {'this':>8}" + (f" {'baseline':>9} {'ratio':>6}" if baseline else "")
    lines.append(head)
    types = list(samples["this"])
    for t in [*types, "all"]:
        def med(name: str, t: str = t) -> float:
            vals = [v for tt, vs in samples[name].items() if t in ("all", tt) for v in vs]
            return statistics.median(vals)

        row = f"{t:<11} {med('this'):>8.2f}"
        if baseline:
            row += f" {med('baseline'):>9.2f} {med('this') / med('baseline'):>6.2f}"
        lines.append(row)
    allm = statistics.median(v for vs in samples["this"].values() for v in vs)
    lines.append(f"target attach+update <= 10 µs per vertex+edge: median {allm:.2f} µs -> "
                 f"{'met' if allm <= 10 else 'NOT met'}")  # fmt: skip
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    (out_dir / "attach.txt").write_text(text)
    sys.stdout.write(f"wrote {out_dir / 'attach.txt'}\n")
    return 0


def _describe_rev(repo: Path, rev: str) -> str:
    import subprocess

    r = subprocess.run(["git", "-C", str(repo), "log", "-1", "--format=%h %s", rev], capture_output=True, text=True)
    return r.stdout.strip()[:80] or rev


if __name__ == "__main__":
    sys.exit(main())
