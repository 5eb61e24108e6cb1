"""Pictures and tables of deadline sweeps, and grid occupancy pictures of single runs.

* :func:`summarize` reads a sweep CSV and gives, per (strategy, load, type,
  comm), the number of traces and the mean and 95 % confidence half-width
  (Student t) of accepted, cancelled, completed, utilization, compactness.
* :func:`plot_sweep` draws, per communication style, a grid of bar charts:
  one row per metric (accepted / cancelled / completed), one column per
  load, the workload types on the x axis and one bar per strategy, with
  the confidence intervals as error bars.
* :func:`plot_occupancy` draws the machine at chosen times of one run: one
  tile per node, split into its cores, one colour per job (white: free),
  like the study's tiles.

matplotlib with the Agg backend (files only, no display).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from pathlib import Path
from typing import Any

from fluxlite.errors import InputError

__all__ = ["markdown_table", "plot_occupancy", "plot_sweep", "summarize"]

METRICS = ("accepted", "cancelled", "completed")
EXTRA = ("utilization", "compactness")
LOAD_ORDER = ("normal", "heavy", "very-heavy")
TYPE_ORDER = ("0", "1", "2", "3", "uniform")
STRATEGY_ORDER = ("count", "hilbert", "manhattan", "leak", "leak-noncontig")


def _order(values: set[str], pref: tuple[str, ...]) -> list[str]:
    return [v for v in pref if v in values] + sorted(values - set(pref))


def _ci(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    mean = sum(xs) / n
    if n < 2:
        return mean, 0.0
    from scipy.stats import t

    var = sum((x - mean) ** 2 for x in xs) / (n - 1)
    return mean, float(t.ppf(0.975, n - 1)) * math.sqrt(var / n)


def summarize(path: Path) -> list[dict[str, Any]]:
    """Per configuration: traces, mean and 95 % CI half-width of each metric."""
    try:
        fh = path.open(newline="")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror}", path=str(path)) from exc
    groups: dict[tuple[str, str, str, str], list[dict[str, str]]] = defaultdict(list)
    with fh:
        reader = csv.DictReader(fh)
        for col in ("strategy", "load", "type", "comm", *METRICS):
            if col not in (reader.fieldnames or []):
                raise InputError(f"{path}: not a sweep CSV (no column {col!r})", path=str(path))
        for row in reader:
            groups[(row["strategy"], row["load"], row["type"], row["comm"])].append(row)
    out = []
    for (s, load, jt, comm), rows in groups.items():
        d: dict[str, Any] = {"strategy": s, "load": load, "type": jt, "comm": comm, "traces": len(rows)}
        for m in (*METRICS, *EXTRA):
            if m in rows[0]:
                mean, half = _ci([float(r[m]) for r in rows])
                d[m] = mean
                d[m + "_ci"] = half
        out.append(d)
    key_s = {v: i for i, v in enumerate(STRATEGY_ORDER)}
    key_l = {v: i for i, v in enumerate(LOAD_ORDER)}
    key_t = {v: i for i, v in enumerate(TYPE_ORDER)}
    out.sort(
        key=lambda d: (
            d["comm"],
            key_l.get(d["load"], 9),
            key_t.get(d["type"], 9),
            key_s.get(d["strategy"], 9),
        )
    )
    return out


def markdown_table(summary: list[dict[str, Any]]) -> str:
    """The mean accepted / cancelled / completed (+- 95 % CI) per strategy, load, type and style."""
    lines = [
        "| comm | load | type | strategy | traces | accepted | cancelled | completed | utilization | compactness |",
        "|---|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for d in summary:
        cells = [d["comm"], d["load"], d["type"], d["strategy"], str(d["traces"])]
        for m in METRICS:
            cells.append(f"{d[m]:.1f} ± {d[m + '_ci']:.1f}")
        cells.append(f"{d.get('utilization', float('nan')):.3f}")
        cells.append(f"{d.get('compactness', float('nan')):.0f}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_sweep(path: Path, outdir: Path) -> list[Path]:
    """Bar charts with 95 % confidence intervals, one PNG per communication style."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    summary = summarize(path)
    if not summary:
        raise InputError(f"{path}: no runs to plot", path=str(path))
    outdir.mkdir(parents=True, exist_ok=True)
    files = []
    for comm in _order({d["comm"] for d in summary}, ("async", "sync")):
        rows = [d for d in summary if d["comm"] == comm]
        loads = _order({d["load"] for d in rows}, LOAD_ORDER)
        types = _order({d["type"] for d in rows}, TYPE_ORDER)
        strategies = _order({d["strategy"] for d in rows}, STRATEGY_ORDER)
        idx = {(d["strategy"], d["load"], d["type"]): d for d in rows}
        fig, axes = plt.subplots(
            len(METRICS),
            len(loads),
            figsize=(4.2 * len(loads), 2.8 * len(METRICS)),
            squeeze=False,
            sharex=True,
        )
        width = 0.8 / max(1, len(strategies))
        colors = plt.get_cmap("tab10")
        for i, metric in enumerate(METRICS):
            for j, load in enumerate(loads):
                ax = axes[i][j]
                for k, s in enumerate(strategies):
                    xs, ys, es = [], [], []
                    for ti, jt in enumerate(types):
                        d = idx.get((s, load, jt))
                        if d is None:
                            continue
                        xs.append(ti + (k - (len(strategies) - 1) / 2) * width)
                        ys.append(d[metric])
                        es.append(d[metric + "_ci"])
                    ax.bar(xs, ys, width, yerr=es, capsize=2, color=colors(k), label=s)
                ax.set_xticks(range(len(types)))
                ax.set_xticklabels([f"type {t}" if t != "uniform" else "mix" for t in types], fontsize=8)
                if i == 0:
                    ax.set_title(f"load {load}")
                if j == 0:
                    ax.set_ylabel(f"jobs {metric}")
                ax.grid(axis="y", alpha=0.3)
                ax.set_ylim(bottom=0)
        n = max(d["traces"] for d in rows)
        fig.suptitle(f"Deadline jobs per 1,000-job trace, comm {comm} (mean, 95 % CI over up to {n} traces)")
        handles, labels = axes[0][0].get_legend_handles_labels()
        fig.legend(handles, labels, loc="lower center", ncol=len(strategies), fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.04, 1, 1))
        f = outdir / f"deadline-{comm}.png"
        fig.savefig(f, dpi=110)
        plt.close(fig)
        files.append(f)
    return files


def plot_occupancy(
    snapshots: list[tuple[float, list[int]]],
    coords: list[tuple[int, int]],
    cpn: int,
    out: Path,
    title: str = "",
) -> Path:
    """One panel per snapshot: nodes as tiles split into cores, one colour per job."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    if not snapshots:
        raise InputError("no snapshot times inside the run")
    width = max(x for x, _ in coords) + 1
    height = max(y for _, y in coords) + 1
    n = len(snapshots)
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(
        rows, cols, figsize=(0.45 * width * cols + 1, 0.45 * height * rows + 1), squeeze=False
    )
    cmap = plt.get_cmap("tab20")
    sub = math.ceil(math.sqrt(cpn))
    for idx, (t, owner) in enumerate(snapshots):
        ax = axes[idx // cols][idx % cols]
        for node, (x, y) in enumerate(coords):
            for c in range(cpn):
                job = owner[node * cpn + c]
                cx, cy = c % sub, c // sub
                color = "white" if job == 0 else cmap((job * 7) % 20)
                ax.add_patch(
                    Rectangle(
                        (x + cx / sub, y + cy / sub),
                        1 / sub,
                        1 / sub,
                        facecolor=color,
                        edgecolor="0.85",
                        lw=0.3,
                    )
                )
            ax.add_patch(Rectangle((x, y), 1, 1, fill=False, edgecolor="0.3", lw=0.6))
        busy = sum(1 for o in owner if o)
        ax.set_xlim(0, width)
        ax.set_ylim(height, 0)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"t = {t:,.0f} s: {len({o for o in owner if o})} jobs, {busy} cores busy", fontsize=8)
    for idx in range(n, rows * cols):
        axes[idx // cols][idx % cols].axis("off")
    if title:
        fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out
