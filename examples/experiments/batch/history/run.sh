#!/bin/bash
# The four evolving-ESP configurations (Table II) with the same command at each given revision.
# Usage (from the checkout): examples/experiments/batch/history/run.sh REV...   (OUT, PYTHON optional)
# Prints: revision config makespan_s satisfied_dynamic_jobs utilization
set -u
REPO=$(pwd)
OUT=${OUT:-$(mktemp -d)}
PY=${PYTHON:-python}
printf 'DFSPOLICY NONE\nRESERVATIONDEPTH 5\nRESERVATIONDELAYDEPTH 5\n' > "$OUT/hp.cfg"
for t in 500 600; do
  printf 'DFSPOLICY DFSTARGETDELAY\nDFSINTERVAL 01:00:00\nDFSDECAY 0\nDFSTARGETDELAYTIME %s\nRESERVATIONDEPTH 5\nRESERVATIONDELAYDEPTH 5\n' $t > "$OUT/d$t.cfg"
done
for rev in "$@"; do
  d="$OUT/src-$rev"; mkdir -p "$d"
  git -C "$REPO" archive "$rev" fluxlite | tar -x -C "$d"
  for c in static hp d500 d600; do
    extra=""; [ $c != static ] && extra="--dynamic --dfs $OUT/$c.cfg"
    out="$OUT/$rev-$c.json"
    (cd "$d" && PYTHONPATH="$d" nice "$PY" -c 'import sys; from fluxlite.cli.main import main; sys.exit(main())' \
      sim batch run --workload esp-dynamic --queue hybrid --reservation-depth 5 $extra --json "$out" > "$out.log" 2>&1)
    echo "$rev $c $("$PY" -c "import json,sys; d=json.load(open(sys.argv[1])); print(d['makespan_s'], d['dyn_satisfied_jobs'], round(d['utilization'], 3))" "$out" 2>/dev/null || tail -1 "$out.log")"
  done
done
