"""Shared by the instruction-count scripts (``match/match_ir.py``, ``compiled/writers_ir.py``): one child
program under callgrind, collection switched on inside one function only.

The child runs with the tree on ``PYTHONPATH`` (then this folder, for ``busy_replay``), a fixed hash seed, one BLAS thread (NumPy's OpenBLAS
workers spin while idle, and callgrind counts every thread) and, where ``setarch`` exists, address
randomisation off (CPython's type-attribute cache is indexed by the attribute names' addresses: with
it on, the same tree moved 2 % from run to run).  Returns the instructions collected and, of those, the
type-cache misses' MRO walks (``find_name_in_mro``, inclusive), which move with unrelated edits.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys
from pathlib import Path


def collected(tree: str, program: str, args: list[str], *, toggle: str, work: str, what: str) -> tuple[int, int]:
    """(instructions inside ``toggle``, of which type-cache misses) of ``program args`` run from ``work``."""
    prog = Path(work) / "child.py"
    prog.write_text(program)
    # the tree first, then this folder (the children import busy_replay from it)
    path = os.pathsep.join((str(Path(tree).resolve()), str(Path(__file__).resolve().parent)))
    env = dict(os.environ, PYTHONPATH=path, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1")
    norand = ["setarch", platform.machine(), "-R"] if shutil.which("setarch") else []
    out = subprocess.run(
        [*norand, "valgrind", "--tool=callgrind", f"--toggle-collect={toggle}",
         f"--callgrind-out-file={work}/cg.out", sys.executable, str(prog), *args],
        capture_output=True, text=True, env=env, cwd=work, check=True,
    )  # fmt: skip
    m = re.search(r"Collected : (\d+)", out.stderr)
    if m is None or int(m.group(1)) == 0:
        raise SystemExit(f"no callgrind total for {tree} {what}:\n{out.stderr[-2000:]}")
    ann = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", f"{work}/cg.out"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    mro = re.search(r"^\s*([0-9,]+) .*:find_name_in_mro \[", ann, re.M)
    return int(m.group(1)), int(mro.group(1).replace(",", "")) if mro else 0
