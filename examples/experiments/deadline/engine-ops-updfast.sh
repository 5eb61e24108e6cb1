#!/bin/bash
# one replay's instruction count (repeat 2 minus repeat 1) with engine_ops.py, for base and branch
. /work/wt-updfast/.venv/bin/activate
cd /tmp/updfast
unset PYTHONDONTWRITEBYTECODE
EO=/work/wt-updfast/examples/experiments/deadline/engine_ops.py
for s in count hilbert leak; do
  python $EO record $s /tmp/updfast/eo-$s.pkl >/dev/null
  for t in /tmp/updfast/main-now /work/wt-updfast; do
    export PYTHONPYCACHEPREFIX=/tmp/updfast/pyc-eo-$(echo $t | tr / _)
    PYTHONPATH=$t python $EO replay /tmp/updfast/eo-$s.pkl --repeat 1 >/dev/null
    r=()
    for n in 1 2; do
      r+=($(PYTHONHASHSEED=0 PYTHONPATH=$t valgrind --tool=callgrind --callgrind-out-file=/dev/null python $EO replay /tmp/updfast/eo-$s.pkl --repeat $n 2>&1 | grep refs | sed 's/.*refs: *//;s/,//g'))
    done
    echo "$s $t $(( (${r[1]} - ${r[0]}) / 1000000 ))M"
  done
done
