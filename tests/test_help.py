"""Every ``fluxlite`` subcommand's ``--help`` reads as plain text and documents every option.

The walk starts at ``fluxlite --help`` and follows every subcommand a help page lists (the registry's
``{a,b,...}`` usage, argparse's ``{a,b}`` or ``COMMAND`` sections), in this process.
"""

from __future__ import annotations

import contextlib
import io
import re
from collections.abc import Iterator

import pytest

from fluxlite.cli._help import plain
from fluxlite.cli.main import main

_REGISTRY_USAGE = re.compile(r"^usage: \S+(?: \S+)* \{([\w,-]+)\} \[options\]", re.M)
_POSITIONALS = re.compile(r"^positional arguments:\n((?:  .*\n?)+)", re.M)
#: reStructuredText a terminal shows raw, and a '%%' that argparse did not turn into '%'
RAW = re.compile(r"``|:(?:func|class|mod|meth|attr|data|exc|obj|ref):`|%%")


def subcommands(text: str) -> list[str]:
    m = _REGISTRY_USAGE.search(text)
    if m:
        return m.group(1).split(",")
    m = _POSITIONALS.search(text)
    if not m:
        return []
    first = re.match(r"  \{([\w,-]+)\}", m.group(1))
    if first:
        return first.group(1).split(",")
    return re.findall(r"^    ([\w-]+)(?:\s|$)", m.group(1), re.M)


def undocumented(text: str) -> list[str]:
    """Option lines of an argparse help page with no help text after them."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^  (-\S.*?)(\s{2,}\S.*)?$", line)
        if not m or m.group(2):
            continue
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if re.match(r"^\s{6,}\S", nxt) and not nxt.lstrip().startswith("-"):
            continue
        out.append(m.group(1))
    return out


def help_text(args: list[str]) -> str:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        main([*args, "--help"])
    return out.getvalue() + err.getvalue()


def walk(args: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    text = help_text(list(args))
    yield " ".join(("fluxlite", *args)), text
    for name in subcommands(text):
        if name != "help":
            yield from walk((*args, name))


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return dict(walk())


def test_the_walk_reaches_every_family(pages: dict[str, str]) -> None:
    """Nested commands of every kind are reached (registry, argparse choices, COMMAND sections)."""
    for cmd in ("fluxlite bench match", "fluxlite sim deadline sweep", "fluxlite hierarchy launch",
                "fluxlite providers ec2 moto-server", "fluxlite instance serve", "fluxlite kube sidecar"):  # fmt: skip
        assert cmd in pages
        assert "usage:" in pages[cmd]


def test_no_raw_markup_in_help(pages: dict[str, str]) -> None:
    """No ``literal``, :func:`role` or '%%' in any help page."""
    bad = {cmd: RAW.findall(text) for cmd, text in pages.items() if RAW.search(text)}
    assert bad == {}


def test_every_option_has_help(pages: dict[str, str]) -> None:
    """Every option of every subcommand says what it does."""
    bad = {cmd: undocumented(text) for cmd, text in pages.items() if undocumented(text)}
    assert bad == {}


def test_plain_drops_markup() -> None:
    """``x`` and :func:`x` become x; a paragraph's closing '::' becomes ':'."""
    doc = """Run ``fluxlite x``; see :func:`launch` and :class:`~a.B`.

        Like this::

            code
    """
    assert plain(doc) == "Run fluxlite x; see launch and a.B.\n\nLike this:\n\n    code"


def test_undocumented_finds_bare_options() -> None:
    page = "options:\n  -h, --help  show this\n  --bare N\n  --long-one LIST\n                        says\n"
    assert undocumented(page) == ["--bare N"]
