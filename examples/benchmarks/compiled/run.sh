#!/usr/bin/env bash
# The compiled (Cython) build against main's pure tree, same machine, same run (see README.md here).
#   bash examples/benchmarks/compiled/run.sh MAIN_TREE [OUT]
# MAIN_TREE: `git archive main | tar -x -C MAIN_TREE` (pure: no extension modules); this checkout must be
# built in place (`pip install -e .`; `fluxlite info` says compiled N/N).
set -euo pipefail
main=$(cd "$1" && pwd); here=$(cd "$(dirname "$0")/../../.." && pwd)
out=${2:-$here/examples/benchmarks/compiled}
mkdir -p "$out"
cd "$here"
PY=${PY:-$here/.venv/bin/python}
check() { (cd "$1" && PYTHONPATH="$1" "$PY" -c "import fluxlite.match.update as u; print('$2', u.__file__)"); }
check "$main" baseline | tee "$out/trees.txt"
check "$here" compiled | tee -a "$out/trees.txt"
# 1. the deadline sweep sample (150 runs per tree, loads in turns)
"$PY" examples/experiments/deadline/sweep-cpu/sample.py examples/experiments/deadline/sweep-cpu/sample-cython \
    pure="$main" cy="$here" | tee "$out/sweep-sample.txt"
# 2. the deadline bench against main (a pure checkout of main, fresh processes)
"$PY" -m fluxlite.cli.main sim deadline bench --baseline main --repeat 3 --json "$out/deadline-bench.json" \
    > "$out/deadline-bench.txt" 2>&1
# 3. busy L0 and empty T8 against Fluxion and main's tree
"$PY" -m fluxlite.cli.main bench match --against /root/.cache/fluxlite/flux-0.88.0/bin/resource-query \
    --graphs L0 --requests T8 --policies first,low --matches 100 --repeat "${REPEAT:-3}" \
    --baseline-tree "$main" --bench-dir /work/shared/bench \
    --txt "$out/match-L0.txt" --json "$out/match-L0.json" > "$out/match-L0.log" 2>&1
# 4. the in-process 64-node attach, trees alternating
for r in 1 2; do
  for t in "$main" "$here"; do
    echo "== tree $t round $r"; (cd "$t" && PYTHONPATH="$t" "$PY" "$here/examples/benchmarks/hierarchy/attach_steps.py" /work/shared/bench 1 10)
  done
done > "$out/attach-steps.txt" 2>&1
