"""``fluxlite query --help`` names every option, policy and command of Fluxion v0.54's resource-query.

The lists below are read from v0.54's resource-query.cpp (its ``OPTIONS``
getopt string and ``-P`` policies) and command.cpp (its command table).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fluxlite.cli import elastic_cmds
from fluxlite.cli import query as q
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
    elastic_cmds.install()
    for name, abbr in FLUXION_COMMANDS.items():
        cmd = q.find_command(name)
        assert cmd is not None and cmd.name == name
        if abbr is not None:
            assert q.find_command(abbr) is cmd, abbr
    # every policy the engine knows by name is one the help names
    text = _help().split("--match-policy", 1)[1]
    for name in POLICIES:
        assert re.search(rf"\b{name}\b", text), name
