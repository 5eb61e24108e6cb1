"""The documentation's runnable blocks run as written.

Every block of README.md and docs/*.md fenced as ```` ```sh runnable ```` (run with bash under
``set -euo pipefail``) or ```` ```python runnable ```` (run with the venv's python) is one test,
its id ``FILE:LINE``.  Each runs the way a reader would run it from the repository root, but in a
fresh temporary directory: the directory holds only a link ``examples`` to the repository's
examples, the venv's ``bin`` is first on PATH, and HOME, TMPDIR and XDG_RUNTIME_DIR are private
directories of the test.  A block passes when it exits 0 within its timeout, leaves nothing behind
in that directory or in TMPDIR (whatever it writes goes to a ``mktemp -d`` directory it removes),
and leaves no process running (every process it started carries a marker in its environment; the
test looks for survivors and kills them).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DOC_FILES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w+)((?:\s+[\w=-]+)*)\s*$")
TIMEOUT = 120.0
MARKER = "FLUXLITE_DOCS_TEST"


@dataclass(frozen=True)
class Block:
    path: Path
    line: int  # 1-based line of the opening fence
    lang: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line}"


def extract_blocks(path: Path) -> list[Block]:
    """Every fenced block of ``path`` whose info string is ``sh runnable`` or ``python runnable``."""
    blocks: list[Block] = []
    lines = path.read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m is None:
            i += 1
            continue
        start, lang, words = i, m.group(1), m.group(2).split()
        i += 1
        body: list[str] = []
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        if i == len(lines):
            raise ValueError(f"{path}:{start + 1}: unclosed code block")
        i += 1
        if "runnable" in words:
            if lang not in ("sh", "python"):
                raise ValueError(f"{path}:{start + 1}: only sh and python blocks can be runnable")
            blocks.append(Block(path, start + 1, lang, "\n".join(body) + "\n"))
    return blocks


BLOCKS = [b for f in DOC_FILES for b in extract_blocks(f)]


def _marked_pids(tag: str) -> list[int]:
    """Processes whose environment carries ``MARKER=tag`` (started by the block, detached or not)."""
    needle = f"{MARKER}={tag}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = (entry / "environ").read_bytes()
        except OSError:
            continue
        if needle in env.split(b"\0"):
            found.append(int(entry.name))
    return found


def _kill_all(tag: str) -> list[int]:
    pids = _marked_pids(tag)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


def run_block(block: Block, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir()
    (work / "examples").symlink_to(REPO / "examples")
    for name in ("home", "tmp", "run"):
        (tmp_path / name).mkdir(mode=0o700)
    tag = uuid.uuid4().hex
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("FLUXLITE_", "AWS_", "KUBECONFIG"))
    }
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        HOME=str(tmp_path / "home"),
        TMPDIR=str(tmp_path / "tmp"),
        XDG_RUNTIME_DIR=str(tmp_path / "run"),
        PYTHONDONTWRITEBYTECODE="1",
        **{MARKER: tag},
    )
    if block.lang == "sh":
        argv = ["bash", "-c", "set -euo pipefail\n" + block.text]
    else:
        argv = [sys.executable, "-c", block.text]
    # Output goes to files, not pipes: a process the block leaves behind keeps a pipe open.
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    with out_path.open("w") as out_f, err_path.open("w") as err_f:
        proc = subprocess.Popen(
            argv, cwd=work, env=env, text=True, start_new_session=True, stdout=out_f, stderr=err_f
        )
        timed_out = False
        try:
            proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            timed_out = True
            _kill_all(tag)
            proc.wait()
        finally:
            # A teardown may still be finishing in a process the block detached: a moment's grace.
            deadline = time.monotonic() + 1.0
            while _marked_pids(tag) and time.monotonic() < deadline:
                time.sleep(0.05)
            survivors = _kill_all(tag)
    out, err = out_path.read_text(), err_path.read_text()
    if timed_out:
        pytest.fail(f"{block.id}: no exit within {TIMEOUT:.0f} s\n--- stdout\n{out}\n--- stderr\n{err}")
    result = subprocess.CompletedProcess(argv, proc.returncode, out, err)
    assert proc.returncode == 0, (
        f"{block.id} exited {proc.returncode}\n--- stdout\n{out}\n--- stderr\n{err}"
    )
    assert not survivors, f"{block.id} left processes running: {survivors}"
    errors = [ln for ln in err.splitlines() if ln.startswith(("ERROR", "Traceback"))]
    assert not errors, f"{block.id} reported errors:\n{err}"
    left = sorted(p.name for p in work.iterdir() if p.name != "examples")
    assert not left, f"{block.id} wrote into the directory it runs in: {left}"
    left_tmp = sorted(p.name for p in (tmp_path / "tmp").iterdir())
    assert not left_tmp, f"{block.id} left temporary files: {left_tmp}"
    return result


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_runnable_block(block: Block, tmp_path: Path) -> None:
    run_block(block, tmp_path)


def test_the_docs_have_runnable_blocks() -> None:
    """The pages the tour and the walkthroughs live in have blocks this test runs."""
    files = {b.path.name for b in BLOCKS}
    assert {"README.md", "hierarchy.md", "grid-deadline.md", "batch.md"} <= files


def test_extract_blocks(tmp_path: Path) -> None:
    """Only blocks marked runnable are taken, with the line of their fence; others are ignored."""
    page = tmp_path / "page.md"
    page.write_text(
        "text\n```sh\nnot run\n```\n\n```sh runnable\necho one\necho two\n```\n"
        "```python runnable\nprint(1)\n```\n```\nplain\n```\n"
    )
    blocks = extract_blocks(page)
    assert [(b.line, b.lang, b.text) for b in blocks] == [
        (6, "sh", "echo one\necho two\n"),
        (10, "python", "print(1)\n"),
    ]
    page.write_text("```sh runnable\necho never closed\n")
    with pytest.raises(ValueError, match="unclosed"):
        extract_blocks(page)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("false\necho after\n", "exited 1"),
        ("touch litter\n", "wrote into the directory"),
        ("mktemp -d >/dev/null\n", "left temporary files"),
        ("sleep 300 &\n", "left processes running"),
        ("echo 'ERROR: no such job' >&2\n", "reported errors"),
    ],
    ids=["fails", "litters", "leaves-temp", "leaves-process", "error-message"],
)
def test_a_bad_block_fails(text: str, why: str, tmp_path: Path) -> None:
    """The runner catches a failing command, litter in the directory or TMPDIR, and survivors."""
    with pytest.raises(AssertionError, match=why):
        run_block(Block(REPO / "README.md", 1, "sh", text), tmp_path)
