"""Representative work for tests/fluxlite/test_compiled.py, run in one process: pure or compiled.

``python compiled_driver.py OUT.json CONFORMANCE_DIR STEP`` runs every STEP-th case of Fluxion's
resource-query suite through ``fluxlite query`` (in process, each in its own directory), one
shortened deadline-sim trace per strategy and a small batch simulation, and writes every output
(stdout, stderr, written files; wall-clock fields dropped) plus where each hot module was loaded
from (its ``__file__``) to OUT.json.
"""

from __future__ import annotations

import io
import json
import os
import sys
import tempfile
from pathlib import Path

if __name__ == "__main__":
    del sys.path[0]  # this script's folder (tests/fluxlite/queue would shadow the standard library's queue)

WALL_KEYS = {"wall_seconds", "wall_s", "sched_s", "sched_ms_per_queued_job"}


def _run(argv: list[str], stdin: Path | None = None) -> dict[str, str]:
    from fluxlite.cli.main import main

    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    saved = sys.stdin, sys.stdout, sys.stderr
    fin = stdin.open() if stdin is not None else open(os.devnull)  # noqa: SIM115 (closed below)
    sys.stdin, sys.stdout, sys.stderr = fin, out, err
    try:
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        fin.close()
    out.flush()
    err.flush()
    return {"rc": str(rc), "stdout": out.buffer.getvalue().decode(), "stderr": err.buffer.getvalue().decode()}


def _files(d: Path) -> dict[str, str]:
    got = {}
    for p in sorted(d.iterdir()):
        text = p.read_text()
        if p.suffix == ".json":
            doc = json.loads(text)
            text = json.dumps({k: v for k, v in doc.items() if k not in WALL_KEYS}, sort_keys=True)
        got[p.name] = text
    return got


def main() -> None:
    outpath, conf, step = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
    results: dict[str, object] = {}
    cases = json.loads((conf / "manifest.json").read_text())["cases"][::step]
    with tempfile.TemporaryDirectory() as tmp:
        for i, case in enumerate(cases):
            d = Path(tmp) / f"case{i}"
            d.mkdir()
            os.chdir(d)
            runs = []
            for r in case["runs"]:
                args = [a.replace("@SRC@", str(conf)) for a in r["args"]]
                runs.append(_run(["query", *args], Path(r["cmds"].replace("@SRC@", str(conf)))))
            results[f"query {case['category']}/{case['script']}: {case['desc']}"] = {"runs": runs, "files": _files(d)}
        for s in ("count", "hilbert", "manhattan", "leak", "leak-noncontig"):
            d = Path(tmp) / f"deadline-{s}"
            d.mkdir()
            run = _run(["sim", "deadline", "run", "-s", s, "--jobs", "120", "--load", "heavy", "--json",
                        str(d / "m.json"), "--outcomes", str(d / "o.csv")])
            results[f"deadline {s}"] = {"rc": run["rc"], "files": _files(d)}
        for q in ("easy",):
            d = Path(tmp) / f"batch-{q}"
            d.mkdir()
            run = _run(["sim", "batch", "run", "--workload", "esp", "--queue", q, "--json", str(d / "m.json")])
            results[f"batch esp {q}"] = {"rc": run["rc"], "files": _files(d)}
        os.chdir(tmp)
    from fluxlite._compiled import _read_manifest

    loaded = {m: getattr(sys.modules.get(m), "__file__", None) for m in sorted(_read_manifest())}
    outpath.write_text(json.dumps({"loaded": loaded, "results": results}, sort_keys=True))


if __name__ == "__main__":
    main()
