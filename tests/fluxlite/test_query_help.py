"""``fluxlite query --help`` names every option, policy and command of Fluxion v0.54's resource-query.

The lists below are read from v0.54's resource-query.cpp (its ``OPTIONS``
getopt string and ``-P`` policies) and command.cpp (its command table).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fluxlite.cli import query as q
from fluxlite.cli._registry import install_query_commands
from fluxlite.match.policies import POLICIES

FLUXION_OPTIONS = "L:f:W:S:P:T:F:g:o:p:t:r:edh"
FLUXION_LONG = [
    "load-file",
    "load-format",
    "load-allowlist",
    "match-subsystems",
    "match-policy",
    "match-format",
    "traverser-policy",
    "graph-format",
    "graph-output",
    "prune-filters",
    "test-output",
    "reserve-vtx-vec",
    "elapse-time",
    "disable-prompt",
    "help",
]
FLUXION_POLICIES = [
    "low",
    "high",
    "lonode",
    "hinode",
    "lonodex",
    "hinodex",
    "first",
    "firstnodex",
    "locality",
    "variation",
]
FLUXION_COMMANDS = {
    "match": "m",
    "multi-match": "M",
    "update": "u",
    "attach": "j",
    "remove": None,  # Fluxion gives it "j" too, so its abbreviation never reaches it
    "find": "f",
    "cancel": "c",
    "partial-cancel": "pc",
    "set-property": "p",
    "get-property": "g",
    "set-status": "t",
    "get-status": "e",
    "list": "l",
    "info": "i",
    "stat": "s",
    "cat": "a",
    "help": "h",
    "quit": "q",
}


def _help() -> str:
    exe = Path(sys.executable).with_name("fluxlite")
    out = subprocess.run([str(exe), "query", "--help"], capture_output=True, text=True, check=True).stdout
    return re.sub(r"\s+", " ", out)


def test_every_option_policy_and_command_is_listed() -> None:
    text = _help()
    for letter in FLUXION_OPTIONS.replace(":", ""):
        assert f"-{letter}" in text, letter
    for name in FLUXION_LONG:
        assert f"--{name}" in text, name
    for policy in FLUXION_POLICIES:
        assert re.search(rf"\b{policy}\b", text.split("--match-policy", 1)[1]), policy
    epilog = text.split("commands (type 'help' in the loop):", 1)[1]
    for cmd in FLUXION_COMMANDS:
        assert re.search(rf"(^|\s){re.escape(cmd)}\s", epilog), cmd


def test_the_repl_has_every_command_with_its_abbreviation() -> None:
    install_query_commands()
    for name, abbr in FLUXION_COMMANDS.items():
        cmd = q.find_command(name)
        assert cmd is not None and cmd.name == name
        if abbr is not None:
            assert q.find_command(abbr) is cmd, abbr
    # every policy the engine knows by name is one the help names
    text = _help().split("--match-policy", 1)[1]
    for name in POLICIES:
        assert re.search(rf"\b{name}\b", text), name


# resource-query v0.54's command table (command.cpp ``commands[]``), in order: (name, abbreviation)
FLUXION_TABLE = [
    ("match", "m"),
    ("multi-match", "M"),
    ("update", "u"),
    ("attach", "j"),
    ("remove", "j"),
    ("find", "f"),
    ("cancel", "c"),
    ("partial-cancel", "pc"),
    ("set-property", "p"),
    ("get-property", "g"),
    ("set-status", "t"),
    ("get-status", "e"),
    ("list", "l"),
    ("info", "i"),
    ("stat", "s"),
    ("cat", "a"),
    ("help", "h"),
    ("quit", "q"),
]
#: fluxlite's own commands (not in Fluxion's table) and their abbreviations
FLUXLITE_EXTRA = {"grow": "G", "shrink": "S", "deadline": "D", "leak-start": "k", "join": "J"}


def _fluxion_find_cmd(word: str) -> str | None:
    """resource-query's find_cmd: the first entry whose name or abbreviation equals the word."""
    for name, abbr in FLUXION_TABLE:
        if word in (name, abbr):
            return name
    return None


def test_command_lookup_is_fluxions() -> None:
    """Every word resource-query accepts reaches the command it reaches there (``j`` is attach,
    never remove); words it ignores (prefixes, other case, ``r``) are unknown to fluxlite too,
    but for fluxlite's own commands."""
    install_query_commands()
    words = {w for pair in FLUXION_TABLE for w in pair}
    words |= {"r", "rm", "mat", "Match", "MATCH", "matc", "p c", "pc1", "cancel-", "x", "quit!", "H", "?"}
    extra = set(FLUXLITE_EXTRA) | set(FLUXLITE_EXTRA.values())
    for w in sorted(words - extra):
        got = q.find_command(w)
        assert (got.name if got else None) == _fluxion_find_cmd(w), w
    for name, abbr in FLUXLITE_EXTRA.items():
        assert _fluxion_find_cmd(name) is None and _fluxion_find_cmd(abbr) is None
        assert q.find_command(name).name == name and q.find_command(abbr).name == name  # type: ignore[union-attr]
    # the table itself: Fluxion's entries in Fluxion's order (what `help` prints), fluxlite's after
    table = [(c.name, c.abbr) for c in q.COMMANDS]
    assert table[: len(FLUXION_TABLE)] == FLUXION_TABLE
    assert {n for n, _ in table[len(FLUXION_TABLE) :]} == set(FLUXLITE_EXTRA)


def test_repl_j_attaches_and_remove_needs_its_name(tmp_path: Path) -> None:
    """In a session, ``j FILE`` attaches (attach is first with "j"); ``r`` is an unknown command;
    ``help j`` lists attach and remove, as Fluxion's help loop does."""
    from fluxlite.api import Engine
    from fluxlite.readers import generate_graph, graph_to_jgf
    from tests.fluxlite.repl_helpers import Session

    s = Session(Engine(generate_graph(nodes=2, sockets=1, cores=2)))
    sub = generate_graph(nodes=2, sockets=1, cores=2)  # attaching it brings node1 back
    g = s.engine.graph
    n0 = len(g)
    _, _, err = s.run("r /cluster0/node1 true")
    assert "unknown command: r" in err and len(g) == n0
    _, stdout, _ = s.run("help j")
    assert [ln.split(" -- ")[0] for ln in stdout.splitlines()] == ["INFO: attach (j)", "INFO: remove (j)"]
    _, _, err = s.run("remove /cluster0/node1 true")
    assert err == "" and g.vertex_by_path("/cluster0/node1") is None and len(g) == n0 - 4
    doc = tmp_path / "more.json"
    doc.write_bytes(graph_to_jgf(sub))
    _, _, err = s.run(f"j {doc}")
    assert err == "" and len(g) == n0 and g.vertex_by_path("/cluster0/node1") is not None
