"""`fluxlite query` options and commands of Fluxion v0.54's resource-query (OPTIONS "L:f:W:S:P:T:F:g:o:p:t:r:edh")."""

from __future__ import annotations

import inspect
import io
from pathlib import Path

import pytest

from fluxlite.api import Engine
from fluxlite.cli import query
from tests.conftest import RESOURCE, need
from tests.fluxlite.repl_helpers import write_jobspec

DATA = RESOURCE
TINY = DATA / "grugs" / "tiny.graphml"

SOCKET = """  - type: node
    count: 1
    with:
      - type: slot
        count: 1
        label: default
        with:
          - type: socket
            count: 1
            with:
              - type: core
                count: 2"""


def run_main(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], stdin: str
) -> tuple[int, str, str]:
    """Run `fluxlite query ARGS` in this process with STDIN; return (exit code, stdout, stderr)."""
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    rc = query.main(args)
    got = capsys.readouterr()
    return rc, got.out, got.err


def test_help_lists_every_v054_option(capsys: pytest.CaptureFixture[str]) -> None:
    """--help names each long option of resource-query v0.54 and the new values."""
    with pytest.raises(SystemExit) as ex:
        query.main(["--help"])
    assert ex.value.code == 0
    text = capsys.readouterr().out
    for opt in (
        "--load-file",
        "--load-format",
        "--load-allowlist",
        "--match-subsystems",
        "--match-policy",
        "--match-format",
        "--traverser-policy",
        "--graph-format",
        "--graph-output",
        "--prune-filters",
        "--test-output",
        "--reserve-vtx-vec",
        "--elapse-time",
        "--disable-prompt",
        "--help",
    ):
        assert opt in text, opt
    for short in ("-L", "-f", "-W", "-S", "-P", "-T", "-F", "-g", "-o", "-p", "-t", "-r", "-e", "-d", "-h"):
        assert f"{short} " in text or f"{short}," in text, short
    for word in ("simple | flexible", "rv1exec_force", "jgf_shorthand", "without_allocating_future"):
        assert word in text, word


def test_traverser_policy_simple_is_the_default(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """-T simple gives exactly the output of no -T at all."""
    need(DATA)
    js = write_jobspec(tmp_path / "s.yaml", SOCKET)
    cmds = f"match allocate {js}\nmatch allocate_orelse_reserve {js}\nquit\n"
    a = run_main(monkeypatch, capsys, ["-L", str(TINY), "-P", "high"], cmds)
    b = run_main(monkeypatch, capsys, ["-L", str(TINY), "-P", "high", "-T", "simple"], cmds)
    assert a[0] == b[0] == 0
    assert a[1] == b[1] and "RESOURCES=ALLOCATED" in a[1]


def test_traverser_policy_flexible(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """-T flexible builds the flexible traverser; a jobspec without alternatives matches as with -T simple."""
    need(DATA)
    js = write_jobspec(tmp_path / "s.yaml", SOCKET)
    cmds = f"match allocate {js}\nmatch allocate {js}\nquit\n"
    rc, out, err = run_main(monkeypatch, capsys, ["-L", str(TINY), "--traverser-policy", "flexible"], cmds)
    assert rc == 0 and out.count("RESOURCES=ALLOCATED") == 2, err
    simple = run_main(monkeypatch, capsys, ["-L", str(TINY)], cmds)
    assert simple[1] == out


def test_traverser_policy_unknown_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown -T value is one line on stderr and a non-zero exit, before any loading."""
    rc, out, err = run_main(monkeypatch, capsys, ["-T", "sideways"], "quit\n")
    assert rc != 0 and out == ""
    assert "unknown traverser policy for --traverser-policy: sideways" in err
    assert "simple, flexible" in err and len(err.splitlines()) == 1


def test_traverser_kwargs_only_for_non_default() -> None:
    """The engine is given traverser_policy only when it is not 'simple'."""
    assert query.traverser_kwargs("simple") == {}
    assert query.traverser_kwargs("flexible") == {"traverser_policy": "flexible"}
    assert "traverser_policy" in inspect.signature(Engine).parameters


@pytest.mark.parametrize(
    ("fmt", "alias", "file"),
    [("rv1exec", "rv1exec_force", "rv1exec/tiny_rv1exec.json"), ("jgf", "jgf_shorthand", "jgfs/tiny.json")],
)
def test_load_format_aliases(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], fmt: str, alias: str, file: str
) -> None:
    """-f rv1exec_force / jgf_shorthand load the very graph -f rv1exec / jgf loads."""
    need(DATA)
    path = str(DATA / file)
    a = run_main(monkeypatch, capsys, ["-L", path, "-f", fmt, "-e"], "find status=up\nquit\n")
    b = run_main(monkeypatch, capsys, ["-L", path, "-f", alias, "-e"], "find status=up\nquit\n")
    assert a[0] == b[0] == 0, b[2]
    strip = [ln for ln in a[1].splitlines() if "Load Time" not in ln]
    assert strip == [ln for ln in b[1].splitlines() if "Load Time" not in ln]
    assert "Vertex Count:" in a[1]


def test_unknown_load_format(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """-f with a reader Fluxion does not know is refused in one line."""
    need(DATA)
    rc, _, err = run_main(monkeypatch, capsys, ["-L", str(TINY), "-f", "yaml"], "quit\n")
    assert rc == 1 and err == "ERROR: unknown format for --load-format: yaml\n"  # resource-query: usage (1)


def test_elapse_time_prints_graph_metadata(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-e prints Fluxion's start-up block: sizes, by_type/by_name/by_path counts, vertices per rank."""
    need(DATA)
    rc, out, _ = run_main(monkeypatch, capsys, ["-L", str(TINY), "-e"], "quit\n")
    assert rc == 0
    lines = out.splitlines()
    assert lines[0].startswith("INFO: Graph Load Time: ")
    eng = Engine.from_file(TINY)
    g = eng.graph
    types = {g.v_type[v] for v in g.vertices()}
    names = {g.v_name[v] for v in g.vertices()}
    assert lines[1:6] == [
        f"INFO: Vertex Count: {len(g)}",
        f"INFO: Edge Count: {g.num_edges}",
        f"INFO: by_type Key-Value Pairs: {len(types)}",
        f"INFO: by_name Key-Value Pairs: {len(names)}",
        f"INFO: by_path Key-Value Pairs: {len(g)}",
    ]
    ranks = sorted(g.by_rank)
    assert lines[6:] == [f"INFO: number of vertices with rank {r}: {len(g.by_rank[r])}" for r in ranks]
    assert sum(len(g.by_rank[r]) for r in ranks) == len(g) and ranks[0] == -1
    assert types == {"cluster", "rack", "node", "socket", "core", "gpu", "memory"}


@pytest.mark.parametrize(
    ("value", "warns"), [("100", False), ("2000001", True), ("-3", True), ("abc", False)]
)
def test_reserve_vtx_vec_reads_like_atoi(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], value: str, warns: bool
) -> None:
    """-r takes what C's atoi takes; out of 0..2000000 warns (and goes on), as Fluxion does."""
    rc, _, err = run_main(monkeypatch, capsys, ["-r", value], "quit\n")
    assert rc == 0
    assert (err == f"WARN: out of range specified for --reserve-vtx-vec: {value}\n") is warns
    if not warns:
        assert err == ""


def test_graph_format_any_case(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """-g GraphML is accepted (Fluxion compares case-insensitively) and writes BASENAME.graphml."""
    base = tmp_path / "g"
    rc, out, _ = run_main(monkeypatch, capsys, ["-g", "GraphML", "-o", str(base)], "quit\n")
    assert rc == 0 and "Write the target graph" in out
    assert (tmp_path / "g.graphml").read_text().startswith("<?xml")


def test_allowlist_on_a_reader_without_one_warns_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """-W with a GRUG file loads everything and says so in one WARN line, not a Python warning."""
    need(DATA)
    rc, out, err = run_main(monkeypatch, capsys, ["-L", str(TINY), "-W", "node,core", "-e"], "quit\n")
    assert rc == 0
    assert err.startswith("WARN: allowlist unsupported") and len(err.splitlines()) == 1
    assert "by_type Key-Value Pairs: 7" in out


def test_update_with_jgf_shorthand_takes_the_exclusive_subtrees(tmp_path: Path) -> None:
    """update allocate jgf_shorthand: an exclusive vertex brings its whole containment subtree."""
    need(DATA)
    from tests.fluxlite.repl_helpers import Session, outcome

    sess = Session(Engine.from_file(TINY, policy="high"), match_format="jgf_shorthand")
    js = write_jobspec(tmp_path / "s.yaml", SOCKET.replace("count: 2", "count: 18"))
    out, _, _ = sess.run(f"match allocate {js}")
    assert outcome(out) == ("ALLOCATED", 1, "Now")
    shorthand = tmp_path / "r.json"
    shorthand.write_text(out.split("INFO:")[0])
    sess.run("cancel 1")
    out, _, err = sess.run(f"update allocate jgf_shorthand {shorthand} 7 0 3600")
    assert err == "" and outcome(out) == ("ALLOCATED", 7, "Now")
    g = sess.engine.graph
    held = set(sess.engine.traverser.job_vertices(7))
    sockets = [v for v in held if g.v_type[v] == "socket"]
    assert len(sockets) == 1
    # all of the socket's subtree (cores, gpu, memory), not only the cores the jobspec named
    assert set(g.subtree(sockets[0])) <= held
    assert {g.v_type[v] for v in g.subtree(sockets[0])} == {"socket", "core", "gpu", "memory"}
    _, _, err = sess.run(f"update allocate yaml {shorthand} 8 0 3600")
    assert err == "ERROR: unsupported reader yaml\n"


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--bogus"], "unrecognized arguments: --bogus"),
        (["-Z"], "unrecognized arguments: -Z"),
        (["-L"], "argument -L/--load-file: expected one argument"),
        (["stray"], "unrecognized arguments: stray"),
    ],
)
def test_bad_command_line_exits_1(capsys: pytest.CaptureFixture[str], args: list[str], says: str) -> None:
    """resource-query v0.54 sends every getopt error (unknown option, missing value, operand left
    over: optind != argc) to usage (1): exit status 1, usage on stderr; argparse's would be 2."""
    with pytest.raises(SystemExit) as ex:
        query.main(args)
    assert ex.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("usage: fluxlite query") and says in err and "Traceback" not in err
