"""The Cython-compiled hot modules (setup.py, fluxlite/_compiled.py): same outputs as the .py sources,
never a stale build, never required.

The compiled-build tests skip, saying so, when this checkout has nothing compiled (installed with
``FLUXLITE_PURE_PYTHON=1``, or without Cython or a C compiler); CI's ``pip install -e '.[test]'``
compiles.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fluxlite
from fluxlite import _compiled
from tests.conftest import CONFORMANCE, REPO, need_shared

PKG = Path(fluxlite.__file__).resolve().parent
DRIVER = Path(__file__).resolve().parent / "compiled_driver.py"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FLUXLITE_PURE", "PYTHONPATH")}
    env.update(extra)
    return env


def _need_compiled() -> dict[str, str]:
    st = _compiled.status()
    if not st["compiled"]:
        pytest.skip(
            "nothing compiled in this checkout (installed with FLUXLITE_PURE_PYTHON=1, or without Cython or "
            f"a C compiler; fluxlite info: {_compiled.summary()}): the compiled build is not tested"
        )
    return {m: s for m, s in st["modules"].items() if s == "compiled"}


def test_compiled_and_pure_give_identical_outputs(tmp_path: Path) -> None:
    """Conformance cases through `fluxlite query`, a deadline trace per strategy and a batch sim: byte for
    byte the same compiled (the extension modules loaded) and with FLUXLITE_PURE=1 (every .py loaded)."""
    compiled = _need_compiled()
    need_shared()
    got = {}
    for side, env in (("compiled", _env()), ("pure", _env(FLUXLITE_PURE="1"))):
        out = tmp_path / f"{side}.json"
        p = subprocess.run(
            [sys.executable, str(DRIVER), str(out), str(CONFORMANCE), "12"],
            env={**env, "PYTHONPATH": str(PKG.parent)},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        got[side] = json.loads(out.read_text())
    for m in compiled:
        assert not got["compiled"]["loaded"][m].endswith(".py"), m
        assert got["pure"]["loaded"][m].endswith(".py"), m
    a, b = got["compiled"]["results"], got["pure"]["results"]
    assert sorted(a) == sorted(b)
    assert len(a) > 30
    assert any(k.startswith("deadline leak") for k in a) and any(k.startswith("batch") for k in a)
    differ = [k for k in a if a[k] != b[k]]
    assert differ == [], f"compiled and pure outputs differ: {differ[:5]}"


def _copy_tree(dst: Path) -> Path:
    shutil.copytree(PKG, dst / "fluxlite", ignore=shutil.ignore_patterns("__pycache__", "*.c", "*.html"))
    return dst / "fluxlite"


def test_an_edited_source_loads_instead_of_its_stale_build(tmp_path: Path) -> None:
    """A copied tree where one compiled module's .py is edited: that module loads from the .py (the edit
    takes effect), the others stay compiled, one warning names it and the rebuild command, and
    `fluxlite info --json` lists it as stale."""
    compiled = sorted(_need_compiled())
    edited, other = compiled[0], compiled[-1]
    pkg = _copy_tree(tmp_path)
    src = tmp_path.joinpath(*edited.split(".")).with_suffix(".py")
    src.write_text(src.read_text() + "\nEDITED_SINCE_BUILD = 1\n")
    code = (
        "import importlib, sys, warnings; warnings.simplefilter('default');"
        f"a = importlib.import_module({edited!r}); b = importlib.import_module({other!r});"
        "print(a.__file__); print(b.__file__); print(getattr(a, 'EDITED_SINCE_BUILD', None))"
    )
    env = _env(PYTHONPATH=str(tmp_path))
    p = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    a_file, b_file, mark = p.stdout.split()
    assert a_file == str(src) and mark == "1"
    assert b_file.startswith(str(pkg)) and not b_file.endswith(".py")
    warned = [ln for ln in p.stderr.splitlines() if "compiled build is older" in ln]
    assert len(warned) == 1 and edited in warned[0] and other not in warned[0] and "pip install -e ." in warned[0]
    info = subprocess.run(
        [sys.executable, "-m", "fluxlite.cli.main", "info", "--json"], env=env, cwd=tmp_path, capture_output=True
    )
    st = json.loads(info.stdout)
    assert st["modules"][edited] == "stale" and st["modules"][other] == "compiled" and st["stale"] == 1


def _setup_tree(dst: Path, module: str) -> Path:
    """setup.py, pyproject.toml and README.md with the one package source a build of ``module`` reads."""
    for f in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / f, dst / f)
    src = Path(*module.split(".")).with_suffix(".py")
    (dst / src).parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / src, dst / src)
    for parent in src.parents:
        if parent != Path("."):
            (dst / parent / "__init__.py").touch()
    return dst / src


def _build(tree: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tree,
        env=_env(FLUXLITE_CYTHON_MODULES="fluxlite.match._vplan", **env),
        capture_output=True,
        text=True,
        timeout=300,
    )


def _built(tree: Path) -> list[Path]:
    return sorted(tree.rglob("*.so")) + sorted(tree.rglob("*.pyd"))


def test_pure_python_install_flag_compiles_nothing(tmp_path: Path) -> None:
    """FLUXLITE_PURE_PYTHON=1 at install: no extension, no manifest (an earlier in-place build's are
    removed, so the install really runs pure), and it says so."""
    src = _setup_tree(tmp_path, "fluxlite.match._vplan")
    _setup_tree(tmp_path, "fluxlite.match.update")
    leftover = src.with_name("update.cpython-311-x86_64-linux-gnu.so")
    leftover.write_bytes(b"an earlier build")
    (tmp_path / "fluxlite/_compiled.json").write_text('{"modules": {"fluxlite.match.update": "0"}}')
    p = _build(tmp_path, FLUXLITE_PURE_PYTHON="1")
    assert p.returncode == 0, p.stderr
    assert "FLUXLITE_PURE_PYTHON is set" in p.stderr
    assert _built(tmp_path) == [] and not (tmp_path / "fluxlite/_compiled.json").exists()


def test_without_cython_the_build_stays_pure_with_one_warning(tmp_path: Path) -> None:
    """No Cython importable: the build succeeds, builds nothing, and warns once."""
    _setup_tree(tmp_path, "fluxlite.match._vplan")
    shim = tmp_path / "shim" / "Cython"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("raise ImportError('no Cython here (test shim)')\n")
    p = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tmp_path,
        env=_env(FLUXLITE_CYTHON_MODULES="fluxlite.match._vplan", PYTHONPATH=str(tmp_path / "shim")),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr
    assert p.stderr.count("Cython is not available") == 1
    assert _built(tmp_path) == []


def test_a_module_that_fails_to_compile_stays_pure_with_one_warning(tmp_path: Path) -> None:
    """The C compiler fails (CC=false): the build still succeeds, the manifest lists the module as
    failed and compiled nothing, and one warning names it."""
    pytest.importorskip("Cython", reason="Cython is not installed in this environment (pip install Cython)")
    _setup_tree(tmp_path, "fluxlite.match._vplan")
    p = _build(tmp_path, CC="false", LDSHARED="false")
    assert p.returncode == 0, p.stderr
    warned = [ln for ln in p.stderr.splitlines() if "failed to compile" in ln]
    assert len(warned) == 1 and "fluxlite.match._vplan" in warned[0]
    assert _built(tmp_path) == []
    doc = json.loads((tmp_path / "fluxlite/_compiled.json").read_text())
    assert doc["modules"] == {} and doc["failed"] == ["fluxlite.match._vplan"]


_TYPED_RUN = """
import sys
from pathlib import Path
from fluxlite.api import Engine
from fluxlite.jobspec import parse_jobspec
import fluxlite.match.update as update
print("cython:", getattr(getattr(update, "cython", None), "__name__", None), "compiled:", update.__file__.endswith(".so"))
d = Path(sys.argv[1])
eng = Engine.from_file(str(d / "graphs/L0.graphml"), format="grug", policy="first")
out = []
ids = []
for k in range(40):
    name = ("T2", "T8", "T3", "T7", "T1")[k % 5]
    r = eng.match(parse_jobspec((d / "jobspecs" / f"{name}.yaml").read_text()), "allocate_orelse_reserve")
    out.append(f"{k} {r.ok} {r.reserved} {r.at}\\n{r.text}")
    if r.ok:
        ids.append(r.jobid)
    if k % 5 == 4 and ids:
        eng.cancel(ids.pop(len(ids) // 2))
# an attach of a 64-node grow from the columns wire form to a child's job (the column scans, the
# bulk priming and the fresh allocation walk), then matches on the grown child
from fluxlite.readers import load_graph
from fluxlite.writers.jgf import JgfColumnsWriter
from hierarchy import _wire
spec = {t: parse_jobspec((d / "jobspecs" / f"{t}.yaml").read_text()) for t in ("T1", "T2", "T4")}
parent = Engine.from_file(str(d / "graphs/L0.graphml"), format="grug", policy="first")
child = Engine(load_graph(parent.allocate(spec["T4"], fmt="jgf").text, format="jgf"), policy="first")
job = child.allocate(spec["T4"], fmt="jgf").jobid
writer = JgfColumnsWriter()
parent.set_writer("jgf", writer)
parent.allocate(spec["T1"], fmt="jgf")
new = child.attach(_wire.decode(_wire.encode(parent.graph, writer.emitted)), allocate_to=job, at=0, duration=3600)
out.append(f"attached {len(new)}\\n")
for k in range(3):
    r = child.match(spec["T2"], "allocate_orelse_reserve")
    out.append(f"child {k} {r.ok} {r.reserved} {r.at}\\n{r.text}")
print("".join(out))
"""


def test_cyshim_directives_do_nothing() -> None:
    """fluxlite._cyshim's ``boundscheck`` and ``wraparound`` (what a compiled module's directives are
    where Cython is not installed): as decorators they return the function itself, as ``with``
    blocks they run the block and let its exception through."""
    from fluxlite import _cyshim

    def f(xs: list[int]) -> int:
        return xs[-1]

    assert _cyshim.boundscheck(False)(f) is f and _cyshim.wraparound(False)(f) is f
    assert _cyshim.boundscheck(True)(_cyshim.wraparound(False)(f))([1, 2]) == 2
    with _cyshim.boundscheck(False), _cyshim.wraparound(False):
        got = f([3, 4])
    assert got == 4
    with pytest.raises(IndexError), _cyshim.boundscheck(False):
        f([])


def test_typed_locals_run_pure_without_cython_and_match_the_compiled_run(tmp_path: Path) -> None:
    """The modules that give locals C types (``@cython.locals``) fall back to fluxlite._cyshim where
    Cython is not installed, and a busy session of allocations, reservations and cancels, then a
    grow attached to a child's job, prints the same there (pure, no Cython) as compiled."""
    from hierarchy.bench import generate_inputs

    d = generate_inputs(tmp_path / "in")
    block = tmp_path / "nocython"
    block.mkdir()
    (block / "cython.py").write_text("raise ModuleNotFoundError(\"No module named 'cython'\", name='cython')\n")
    runs = {}
    sides = [("pure", _env(FLUXLITE_PURE="1", PYTHONPATH=f"{block}:{PKG.parent}"))]
    if _compiled.status()["compiled"]:
        sides.append(("compiled", _env(PYTHONPATH=str(PKG.parent))))
    for side, env in sides:
        p = subprocess.run(
            [sys.executable, "-c", _TYPED_RUN, str(d)], env=env, cwd=tmp_path, capture_output=True, text=True,
            timeout=300,
        )
        assert p.returncode == 0, p.stderr[-3000:]
        head, _, body = p.stdout.partition("\n")
        runs[side] = (head, body)
    assert runs["pure"][0] == "cython: fluxlite._cyshim compiled: False"
    assert "[1:x]" in runs["pure"][1] and "True True" in runs["pure"][1]  # allocations and reservations
    assert "attached " in runs["pure"][1] and "attached 0" not in runs["pure"][1]
    if "compiled" in runs:
        assert runs["compiled"][0].endswith("compiled: True")
        assert runs["compiled"][1] == runs["pure"][1]
