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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from fluxlite import hostlist as _hostlist
from fluxlite import idset as _idset
from fluxlite.errors import GraphFormatError, InputError

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


def decode_idset(text: str) -> list[int]:
    """Decode an RFC 22 idset (flux-core's ``idset_decode`` rules) into sorted distinct integers.

    Raises ValueError for malformed input or a range of more than 10^7 ids.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected an idset string, got {type(text).__name__}")
    try:
        ranges = _idset.decode_ranges(text.strip())
    except InputError as exc:
        raise ValueError(f'invalid idset "{text}"') from exc
    body = text.strip().strip("[]")
    for tok in body.split(",") if body else ():
        if not tok.strip():
            raise ValueError(f'invalid idset "{text}": empty element (RFC 22)')
        lo, dash, hi = tok.partition("-")
        if dash and lo.strip().isdigit() and hi.strip().isdigit() and int(hi) < int(lo):
            raise ValueError(f'invalid idset "{text}": range {tok.strip()} is descending (RFC 22)')
    if sum(hi - lo + 1 for lo, hi in ranges) > 10_000_000:
        raise ValueError(f'invalid idset "{text}": range too large')
    out: set[int] = set()
    for lo, hi in ranges:
        out.update(range(lo, hi + 1))
    return sorted(out)


def encode_idset(ids: Iterable[int]) -> str:
    """Encode integers as a compact RFC 22 idset (``[0, 1, 2, 5] -> "0-2,5"``)."""
    return _idset.encode(ids)


def decode_hostlist(text: str) -> list[str]:
    """Expand an RFC 29 hostlist (flux-core's rules), keeping order and zero padding.

    ``"node[0-2],login[08-09]"`` gives ``node0 node1 node2 login08 login09``.
    Raises ValueError for malformed input.
    """
    if not isinstance(text, str):
        raise ValueError(f"expected a hostlist string, got {type(text).__name__}")
    try:
        return _hostlist.decode(text.strip())
    except InputError as exc:
        raise ValueError(f'invalid hostlist "{text}": {exc}') from exc


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
