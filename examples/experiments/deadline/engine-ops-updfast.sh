#!/bin/bash
# One replay's instruction count (valgrind; --repeat 2 minus --repeat 1) with engine_ops.py, per strategy,
# for a baseline tree and a branch tree:  engine-ops-updfast.sh BASE_TREE BRANCH_TREE [WORKDIR]
# (a tree: a checkout, or `git archive REV | tar -x -C DIR`).  Bytecode is cached per tree.
BASE=${1:?baseline tree}; BRANCH=${2:?branch tree}; W=${3:-$(mktemp -d)}
EO=$(cd "$(dirname "$0")" && pwd)/engine_ops.py
cd "$W"
unset PYTHONDONTWRITEBYTECODE
for s in count hilbert leak; do
  python $EO record $s $W/eo-$s.pkl >/dev/null
  for t in $BASE $BRANCH; do
    export PYTHONPYCACHEPREFIX=$W/pyc-$(echo $t | tr / _)
    PYTHONPATH=$t python $EO replay $W/eo-$s.pkl --repeat 1 >/dev/null
    r=()
    for n in 1 2; do
      r+=($(PYTHONHASHSEED=0 PYTHONPATH=$t valgrind --tool=callgrind --callgrind-out-file=/dev/null python $EO replay $W/eo-$s.pkl --repeat $n 2>&1 | grep refs | sed 's/.*refs: *//;s/,//g'))
    done
    echo "$s $t $(( (${r[1]} - ${r[0]}) / 1000000 ))M"
  done
done
