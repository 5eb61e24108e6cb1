"""Outputs of a batch run: per-job CSV, summary JSON, plots (matplotlib, Agg)."""

from __future__ import annotations

import csv
import itertools
import json
from pathlib import Path
from typing import Any

__all__ = ["plot", "write_csv", "write_json"]


def write_json(summary: dict[str, Any], path: str | Path) -> None:
    Path(path).write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")


def write_csv(jobs: list[Any], path: str | Path) -> None:
    """One row per job: submit, start, end, wait, size history ("t:size;..."), grants, refusals."""
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["jobid", "kind", "user", "unit", "submit", "start", "end", "wait", "response",
                    "size_start", "size_history", "malleable", "evolving", "dyn_requests", "grants", "refusals"])  # fmt: skip
        for j in sorted(jobs, key=lambda j: j.jobid):
            hist = ";".join(f"{t}:{n}" for t, n in j.history)
            wait = "" if j.start is None else j.start - j.submit
            resp = "" if j.end is None else j.end - j.submit
            first = j.history[0][1] if j.history else j.size
            w.writerow([j.jobid, j.kind, j.user, j.unit, j.submit, j.start, j.end, wait, resp, first, hist,
                        int(j.malleable), int(j.evolving), j.dyn_requests, j.grants, j.refusals])  # fmt: skip


def plot(result: Any, outdir: str | Path, title: str = "") -> list[Path]:
    """waiting time per job id, utilisation over time, Gantt chart, power with the corridor."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(outdir)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    jobs = sorted((j for j in result.jobs if j.start is not None), key=lambda j: j.jobid)
    fig, ax = plt.subplots(figsize=(8, 3))
    ax.bar([j.jobid for j in jobs], [j.start - j.submit for j in jobs], width=1.0)
    ax.set(xlabel="job id", ylabel="waiting time (s)", title=f"{title} waiting time per job")
    files.append(_save(fig, out / "wait.png"))
    fig, ax = plt.subplots(figsize=(8, 3))
    ts = [t for t, _ in result.util]
    us = [u / result.capacity for _, u in result.util]
    ax.step(ts, us, where="post")
    ax.set(xlabel="time (s)", ylabel="utilisation", ylim=(0, 1.05), title=f"{title} utilisation")
    files.append(_save(fig, out / "utilization.png"))
    fig, ax = plt.subplots(figsize=(9, 4))
    for j in jobs:
        hist = [*j.history, (j.end, 0)]
        for (t0, n), (t1, _n) in itertools.pairwise(hist):
            ax.broken_barh(
                [(t0, t1 - t0)],
                (j.jobid - 0.4, 0.8),
                color="tab:red" if j.malleable or j.grants else "tab:blue",
                alpha=0.35 + 0.6 * n / max(1, result.capacity),
            )
    ax.set(xlabel="time (s)", ylabel="job id", title=f"{title} Gantt (shade: size; red: resized)")
    files.append(_save(fig, out / "gantt.png"))
    if result.power:
        fig, ax = plt.subplots(figsize=(8, 3))
        t = [p[0] for p in result.power]
        ax.step(t, [p[1] for p in result.power], where="post", label="power")
        ax.step(t, [p[2] for p in result.power], where="post", ls="--", c="k", label="corridor")
        ax.step(t, [p[3] for p in result.power], where="post", ls="--", c="k")
        ax.set(xlabel="time (s)", ylabel="W", title=f"{title} power")
        ax.legend()
        files.append(_save(fig, out / "power.png"))
    return files


def _save(fig: Any, path: Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
