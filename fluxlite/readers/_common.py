"""Helpers shared by the readers: input handling, errors, idsets, hostlists.

idsets (RFC 22) are sets of non-negative integers written ``"0-3,7"``
(optionally in brackets); hostlists (RFC 29) are compressed host names
written ``"node[0-3,7],login1"``.  Both decoders raise ``ValueError`` with a
short reason; the readers turn that into a :class:`GraphFormatError` naming
the element.
"""

from __future__ import annotations

import gc
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fluxlite.errors import GraphFormatError

__all__ = [
    "decode_hostlist",
    "decode_idset",
    "encode_idset",
    "fail",
    "no_gc",
    "read_input",
    "split_hostname",
    "to_text",
]


def fail(source: str, where: str, problem: str) -> GraphFormatError:
    """A one-line GraphFormatError ``"<source>: <where>: <problem>"``."""
    parts = [p for p in (source, where, problem) if p]
    return GraphFormatError(" ".join(": ".join(parts).split()))


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector while building a large graph.

    Loading creates millions of container objects and no cycles; letting the
    collector scan them repeatedly costs more than the load itself.
    """
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def to_text(data: str | bytes, source: str) -> str:
    """Decode bytes as UTF-8 (errors name the source)."""
    if isinstance(data, str):
        return data
    try:
        return bytes(data).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise fail(source, "", f"not UTF-8 text (byte {exc.start})") from exc


def _looks_like_text(s: str) -> bool:
    head = s.lstrip()[:1]
    return head in ("<", "{", "[") or "\n" in s


def read_input(path_or_text: str | bytes | os.PathLike[str]) -> tuple[bytes | str, str]:
    """Return ``(content, source_name)`` for a path or for literal text.

    A ``PathLike`` is always a path; a ``str`` is literal text when it
    starts with ``<``, ``{`` or ``[`` or spans several lines, else a path;
    ``bytes`` are literal content.  A missing or unreadable file raises
    GraphFormatError naming it.
    """
    if isinstance(path_or_text, bytes | bytearray):
        return bytes(path_or_text), "<bytes>"
    if isinstance(path_or_text, str) and _looks_like_text(path_or_text):
        return path_or_text, "<string>"
    p = Path(path_or_text)
    try:
        return p.read_bytes(), str(p)
    except FileNotFoundError as exc:
        raise fail(str(p), "", "no such file") from exc
    except IsADirectoryError as exc:
        raise fail(str(p), "", "is a directory, not a file") from exc
    except OSError as exc:
        raise fail(str(p), "", f"cannot read: {exc.strerror or exc}") from exc


# ----------------------------------------------------------------- idsets
_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def decode_idset(text: str) -> list[int]:
    """Decode an RFC 22 idset into a sorted list of distinct integers.

    ``""`` is the empty set; ``"[0-3]"`` brackets are allowed; ranges must
    be ascending; negative numbers are invalid.  Raises ValueError.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected an idset string, got {type(text).__name__}")
    s = text.strip()
    if s.startswith("[") and s.endswith("]"):
        s = s[1:-1]
    if not s:
        return []
    out: set[int] = set()
    for part in s.split(","):
        m = _RANGE.match(part.strip())
        if m is None:
            raise ValueError(f'invalid idset "{text}"')
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f'invalid idset "{text}": range {lo}-{hi} is descending')
        if hi - lo > 10_000_000:
            raise ValueError(f'invalid idset "{text}": range too large')
        out.update(range(lo, hi + 1))
    return sorted(out)


def encode_idset(ids: list[int] | tuple[int, ...] | set[int]) -> str:
    """Encode integers as a compact RFC 22 idset (``[0, 1, 2, 5] -> "0-2,5"``)."""
    vals = sorted(set(ids))
    parts: list[str] = []
    k = 0
    while k < len(vals):
        j = k
        while j + 1 < len(vals) and vals[j + 1] == vals[j] + 1:
            j += 1
        parts.append(str(vals[k]) if j == k else f"{vals[k]}-{vals[j]}")
        k = j + 1
    return ",".join(parts)


# -------------------------------------------------------------- hostlists
def _split_top(text: str) -> list[str]:
    items: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in text:
        if ch == "[":
            if depth:
                raise ValueError(f'invalid hostlist "{text}": nested brackets')
            depth = 1
        elif ch == "]":
            if not depth:
                raise ValueError(f'invalid hostlist "{text}": unbalanced "]"')
            depth = 0
        if ch == "," and not depth:
            items.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if depth:
        raise ValueError(f'invalid hostlist "{text}": unbalanced "["')
    items.append("".join(cur))
    return items


_BRACKET = re.compile(r"^([^\[\]]*)\[([^\[\]]*)\]([^\[\]]*)$")
_NUM_RANGE = re.compile(r"^(\d+)(?:-(\d+))?$")


def decode_hostlist(text: str) -> list[str]:
    """Expand an RFC 29 hostlist, keeping order and zero padding.

    ``"node[0-2],login[08-09]"`` gives ``node0 node1 node2 login08 login09``.
    Raises ValueError for malformed input.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a hostlist string, got {type(text).__name__}")
    out: list[str] = []
    for item in _split_top(text.strip()):
        item = item.strip()
        if not item:
            if text.strip():
                raise ValueError(f'invalid hostlist "{text}": empty host name')
            continue
        if "[" not in item and "]" not in item:
            out.append(item)
            continue
        m = _BRACKET.match(item)
        if m is None:
            raise ValueError(f'invalid hostlist "{text}"')
        prefix, body, suffix = m.groups()
        if not body:
            raise ValueError(f'invalid hostlist "{text}": empty brackets')
        for rng in body.split(","):
            m2 = _NUM_RANGE.match(rng.strip())
            if m2 is None:
                raise ValueError(f'invalid hostlist "{text}": bad range "{rng}"')
            lo_s = m2.group(1)
            hi_s = m2.group(2) if m2.group(2) is not None else lo_s
            lo, hi = int(lo_s), int(hi_s)
            if hi < lo:
                raise ValueError(f'invalid hostlist "{text}": range {lo_s}-{hi_s} is descending')
            if hi - lo > 10_000_000:
                raise ValueError(f'invalid hostlist "{text}": range too large')
            width = len(lo_s) if len(lo_s) > 1 and lo_s.startswith("0") else 0
            out.extend(f"{prefix}{k:0{width}d}{suffix}" for k in range(lo, hi + 1))
    return out


def split_hostname(hostname: str) -> tuple[str, int]:
    """Split a host name into ``(basename, id)`` as Fluxion does.

    The id is the numeric suffix (``"node12" -> ("node", 12)``); a name
    without one has id -1 and keeps its full basename; an all-digit name
    keeps the whole name as basename.
    """
    if not hostname:
        raise ValueError("empty host name")
    k = len(hostname)
    while k > 0 and "0" <= hostname[k - 1] <= "9":
        k -= 1
    if k == len(hostname):
        return hostname, -1
    if k == 0:
        return hostname, int(hostname)
    return hostname[:k], int(hostname[k:])
