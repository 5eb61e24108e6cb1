"""A low-memory, columnar reading of a whole JGF document (the big-graph path).

:func:`read_columns` returns the same nodes and edges as :func:`jgf.read`,
but as aligned columns (one list per attribute) instead of one
:class:`~jgf.Node` / :class:`~jgf.Edge` object per element, and without
ever holding the parse tree of the whole document: the ``nodes`` and
``edges`` arrays are cut into pieces of a few MB at element boundaries and
each piece is parsed by orjson, turned into columns and dropped.  On a
1.15 M-element document this takes about a third of the time and memory of
:func:`jgf.read`.

It is an optimization only: it returns ``None`` whenever it cannot vouch
for an exact answer (a layout other than ``{"graph": {"nodes": [...],
"edges": [...]}...}``, any invalid element, duplicate ids, ...), and the
caller then uses :func:`jgf.read`, which gives the result or the precise
error.  Why cutting is safe: a cut is taken at a ``},{`` found by a regular
expression; if it falls inside a string or a nested value, the piece before
it does not parse (an unterminated string or bracket), and the whole
document falls back.  When every piece parses as a sequence of complete
values and the document with both arrays emptied parses too, the pieces
are exactly the elements of the two arrays.

Elements whose metadata is complete and typed as Fluxion writes it are
converted column-wise; a piece with anything else (missing keys, ``null``
values, ``"up"``/``"down"`` status, legacy edge forms) goes through the
per-element validator of :mod:`jgf._validate`, so defaults are applied by
the same code.
"""

from __future__ import annotations

import gc
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import itemgetter, methodcaller, truth
from typing import Any

import orjson

from jgf._read import JGFError
from jgf._validate import _edges, _node, validate

__all__ = ["Columns", "columns_jgf", "read_columns"]

#: bytes per parsed piece: small enough that its parse tree stays in the CPU caches
CHUNK = 64 << 10

_PREFIX = re.compile(rb'\A\s*\{\s*"graph"\s*:\s*\{\s*"nodes"\s*:\s*\[')
_NODES_END = re.compile(rb'\]\s*,\s*"edges"\s*:\s*\[')
_SEP = re.compile(rb"\}\s*,\s*\{")
_TAIL = re.compile(rb'\]\s*\}\s*(?:,\s*"free_ranks"\s*:\s*(?:"[^"\\]*"|\d+)\s*)?\}\s*\Z')

_GET_ID = itemgetter("id")
_GET_METADATA = itemgetter("metadata")
_FLUXION_KEYS = itemgetter(
    "type", "basename", "name", "id", "uniq_id", "rank", "size", "unit", "paths", "exclusive"
)
_NODE_KEYS = itemgetter("type", "basename", "name", "id", "uniq_id", "rank", "size", "unit", "paths")
_GET_STATUS = methodcaller("get", "status")
_GET_PROPS = methodcaller("get", "properties")
_GET_EXCL = methodcaller("get", "exclusive")
#: the metadata keys, for documents that leave some out (a match writer's JGF)
_SPARSE_KEYS = (
    "type", "basename", "name", "id", "uniq_id", "rank", "size", "unit", "paths", "exclusive", "status", "properties",
)  # fmt: skip
_GET_OPT_METADATA = methodcaller("get", "metadata")
_TRAILING_DIGITS = re.compile(r"(\d+)$")
_EDGE_ENDS = itemgetter("source", "target")
_NONE = type(None)


class _Fallback(Exception):
    """The columnar path cannot vouch for this document."""


@dataclass(slots=True)
class Columns:
    """Nodes and edges of a JGF document as aligned columns, in document order.

    Node columns have one entry per node, with Fluxion's defaults applied
    (as :class:`jgf.Node`).  ``paths`` maps each subsystem (in order of
    first appearance) to a column of paths (None: the node is not in that
    subsystem); ``properties`` maps a node position to its non-empty
    properties; ``roots`` lists ``(node position, subsystem)`` for each path
    with a single ``/``, in document order.  Edge endpoints are node
    positions; ``e_rel`` is None where the edge names no relation.
    """

    type: list[str] = field(default_factory=list)
    basename: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    id: list[int] = field(default_factory=list)
    uniq_id: list[int] = field(default_factory=list)
    rank: list[int] = field(default_factory=list)
    size: list[int] = field(default_factory=list)
    unit: list[str] = field(default_factory=list)
    status: list[int] = field(default_factory=list)
    #: ``metadata.exclusive`` (False where absent): what an update or attach allocates exclusively
    exclusive: list[bool] = field(default_factory=list)
    properties: dict[int, dict[str, str]] = field(default_factory=dict)
    paths: dict[str, list[str | None]] = field(default_factory=dict)
    roots: list[tuple[int, str]] = field(default_factory=list)
    e_src: list[int] = field(default_factory=list)
    e_dst: list[int] = field(default_factory=list)
    e_ss: list[str] = field(default_factory=list)
    e_rel: list[str | None] = field(default_factory=list)
    free_ranks: str | None = None
    #: one copy of each repeated string (types, basenames, units, subsystems)
    strings: dict[str, str] = field(default_factory=dict, repr=False)

    def interned(self, col: Sequence[str]) -> list[str]:
        """``col`` with each string replaced by its one shared copy (orjson makes a new one per value)."""
        table = self.strings
        new = set(col).difference(table)
        if new:
            table.update(zip(new, new))
        return list(map(table.__getitem__, col))

    def __len__(self) -> int:
        return len(self.type)


def read_columns(data: bytes | bytearray | memoryview | str) -> Columns | None:
    """The document as :class:`Columns`, or None (use :func:`jgf.read` then).

    Edges must join nodes of the document (as ``jgf.read`` with
    ``check_edges=True``).  O(document); peak memory is the text, the
    columns and one piece's parse tree.
    """
    if isinstance(data, str):
        data = data.encode()
    elif not isinstance(data, bytes):
        data = bytes(data)
    was = gc.isenabled()
    gc.disable()  # millions of new containers and no cycles: the collector would only rescan them
    try:
        return _read(data)
    except (_Fallback, JGFError, KeyError, TypeError, ValueError, AttributeError):
        return None
    finally:
        if was:
            gc.enable()


def _pieces(data: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """(begin, end) byte ranges of the array content ``data[start:end]``, cut after elements."""
    out: list[tuple[int, int]] = []
    while start < end and data[start : start + 1].isspace():
        start += 1
    if start >= end:
        return out
    pos = start
    while True:
        m = _SEP.search(data, pos + CHUNK, end) if pos + CHUNK < end else None
        if m is None:
            out.append((pos, end))
            return out
        out.append((pos, m.start() + 1))
        pos = m.end() - 1


def _parse(data: bytes, begin: int, end: int) -> list[Any]:
    try:
        elems = orjson.loads(b"[" + data[begin:end] + b"]")
    except orjson.JSONDecodeError as exc:
        raise _Fallback from exc
    if type(elems) is not list:  # pragma: no cover - cannot happen for "[...]"
        raise _Fallback
    return elems


def _read(data: bytes) -> Columns:
    m = _PREFIX.match(data)
    if m is None:
        raise _Fallback
    n0 = m.end()
    m2 = _NODES_END.search(data, n0)
    if m2 is None:
        raise _Fallback
    n1, e0 = m2.start(), m2.end()
    m3 = _TAIL.search(data, max(e0, len(data) - 4096))
    if m3 is None:
        raise _Fallback
    e1 = m3.start()
    # the document with both arrays emptied: checks the envelope (and free_ranks)
    skeleton = orjson.loads(data[:n0] + data[n1:e0] + data[e1:])
    g = skeleton.get("graph") if type(skeleton) is dict else None
    if type(g) is not dict or g.get("nodes") != [] or g.get("edges") != []:
        raise _Fallback
    doc = validate(skeleton)
    cols = Columns(free_ranks=doc.free_ranks)
    index = 0
    keys: list[str] = []
    if not _writer_nodes(cols, data, n0, n1, keys):
        for begin, end in _pieces(data, n0, n1):
            elems = _parse(data, begin, end)
            _add_nodes(cols, elems, index, keys)
            index += len(elems)
    if _fluxion_edges(cols, data, e0, e1, keys):
        return cols
    ref = dict(zip(keys, range(len(keys))))
    if len(ref) != len(keys):
        raise _Fallback  # duplicate node ids: jgf.read names them
    del keys
    if _writer_edges(cols, data, e0, e1, ref):
        return cols
    get = ref.__getitem__
    index = 0
    for begin, end in _pieces(data, e0, e1):
        elems = _parse(data, begin, end)
        src, dst = _add_edges(cols, elems, index)
        cols.e_src.extend(map(get, src))  # KeyError: not a node id
        cols.e_dst.extend(map(get, dst))
        index += len(elems)
    return cols


#: one edge exactly as Fluxion's writer (and fluxlite's) lays it out, with its separator
_FLUXION_EDGE = re.compile(
    rb'\{"source": "(0|[1-9][0-9]*)", "target": "(0|[1-9][0-9]*)", '
    rb'"metadata": \{"subsystem": "containment"\}\}(?:, |\Z)'
)
_FLUXION_EDGE_LEN = len(b'{"source": "", "target": "", "metadata": {"subsystem": "containment"}}')


def _tiled_pairs(pattern: re.Pattern[Any], fixed: int, data: Any, begin: int, end: int) -> tuple[Any, Any] | None:
    """(sources, targets) of the edges ``data[begin:end]`` if ``pattern``'s matches tile the range exactly.

    ``pattern`` matches one edge with its ", " separator (none after the
    last) and captures its two endpoints; ``fixed`` is an edge's length
    without them.  The matches do not overlap and lie inside the range, so
    when their lengths add up to the range's they are exactly its elements.
    None for any other layout.  O(edges).
    """
    pairs = pattern.findall(data, begin, end)
    k = len(pairs)
    if k == 0:
        return None
    src, dst = zip(*pairs)
    if k * fixed + sum(map(len, src)) + sum(map(len, dst)) + 2 * (k - 1) != end - begin:
        return None
    return src, dst


def _fluxion_edges(cols: Columns, data: bytes, e0: int, e1: int, keys: list[str]) -> bool:
    """Read the edges ``data[e0:e1]`` straight from the bytes when they are laid out as Fluxion writes them.

    That is: node ids "0", "1", ... in document order, and every edge
    ``{"source": "S", "target": "T", "metadata": {"subsystem": "containment"}}``
    separated by ", ".  Then an endpoint's node position is its number, and
    neither a parse tree nor a table of node ids is built.  Sound because
    the matches do not overlap and lie inside the range: when their lengths
    (each with its separator, the last with none) add up to the range's,
    they tile it, so the range is exactly those edges (checked per piece
    of :func:`_pieces`, whose cuts fall between elements).  Returns False
    (nothing added) for any other layout.  O(edges).
    """
    n = len(keys)
    if e1 <= e0 or not keys or keys[0] != "0" or keys[-1] != str(n - 1) or keys != list(map(str, range(n))):
        return False  # (the ends first: a match writer's ids are not positions, and n strings are not built)
    s: list[int] = []
    d: list[int] = []
    position = list(range(n)).__getitem__  # one int object per node, shared by its edges
    for begin, end in _pieces(data, e0, e1):  # a piece at a time: a small transient parse of bytes
        if not data.endswith(b"}}", begin, end):
            return False
        got = _tiled_pairs(_FLUXION_EDGE, _FLUXION_EDGE_LEN, data, begin, end)
        if got is None:
            return False
        src, dst = got
        si = list(map(int, src))
        di = list(map(int, dst))
        if max(si) >= n or max(di) >= n:
            raise KeyError("edge endpoint is not a node id")  # read_columns falls back: jgf.read names it
        s.extend(map(position, si))
        d.extend(map(position, di))
    if not s:
        return False
    ss = cols.interned(["containment"])[0]
    cols.e_src.extend(s)
    cols.e_dst.extend(d)
    cols.e_ss.extend(repeat(ss, len(s)))
    cols.e_rel.extend(repeat(None, len(s)))
    return True


#: one node exactly as fluxlite's match writer (writers.jgf.vertex_json) lays out a vertex whose
#: basename is its type, whose name is basename+id, without properties and with one containment
#: path: the whole element (for the tiling check), id key, type, id, rank, unit, exclusive, size, path
#: (matched in the document decoded as ASCII, so that the groups are str and offsets are bytes)
_WRITER_NODE = re.compile(
    r'(\{"id": "(0|[1-9][0-9]{0,17})", "metadata": \{"type": "([A-Za-z_][A-Za-z0-9_.:-]*)", '
    r'"id": (0|[1-9][0-9]{0,17}), "rank": (-1|0|[1-9][0-9]{0,17})'
    r'(?:, "unit": "([A-Za-z0-9_.:-]*)")?(, "exclusive": true)?(?:, "size": (0|[1-9][0-9]{0,17}))?'
    r', "paths": \{"containment": "(/[^"\\\x00-\x1f]*)"\}\}\})(?:, |\Z)'
)
#: one edge as the match writer lays out a containment edge (writers.jgf.edge_json)
_WRITER_EDGE = re.compile(r'\{"source": "(0|[1-9][0-9]{0,17})", "target": "(0|[1-9][0-9]{0,17})"\}(?:, |\Z)')
_WRITER_EDGE_LEN = len('{"source": "", "target": ""}')


def _probe(data: bytes, begin: int, end: int) -> str:
    """The first kB of ``data[begin:end]`` as text (a first element too long for it just fails to match)."""
    return data[begin : min(end, begin + 1024)].decode("ascii", "replace")


def _writer_nodes(cols: Columns, data: bytes, n0: int, n1: int, keys_out: list[str]) -> bool:
    """Read the nodes ``data[n0:n1]`` straight from the text when they are laid out as the match writer does.

    The columns are those :func:`_add_nodes` gives for the same nodes
    (:func:`_sparse_columns`' defaults: basename = type, name = basename +
    id, uniq id = the node's id key, status up, no properties).  Sound as
    :func:`_fluxion_edges` is: the matches do not overlap and lie inside
    the range, so when their lengths (each with its separator) add up to
    the range's, they are exactly the range's elements.  Returns False
    (nothing added) for any other layout or a document that is not ASCII.
    O(nodes).
    """
    while n0 < n1 and data[n0 : n0 + 1].isspace():
        n0 += 1
    if n1 <= n0 or cols.type or _WRITER_NODE.match(_probe(data, n0, n1)) is None:
        return False  # another layout (a whole graph's): neither a copy nor a scan of the document
    chunk = data[n0:n1]
    if not chunk.isascii():
        return False
    found = _WRITER_NODE.findall(chunk.decode("ascii"))
    del chunk
    n = len(found)
    if n == 0:
        return False
    whole, key, t, rid, rk, un, ex, sz, paths = zip(*found)
    if sum(map(len, whole)) + 2 * (n - 1) != n1 - n0:
        return False
    del whole
    types = cols.interned(t)
    keys_out.extend(key)
    cols.type.extend(types)
    cols.basename.extend(types)
    cols.name.extend(map(str.__add__, types, rid))  # ids have no leading zeros: str(int(b)) == b
    # the numbers as one JSON array each (the pattern admits only JSON integers below 10**18):
    # one C-level parse instead of an int() call per value
    cols.id.extend(_ints(rid))
    cols.uniq_id.extend(_ints(key))
    cols.rank.extend(_ints(rk))
    if sz.count("") == n:  # no "size" key: every node has size 1
        cols.size.extend(repeat(1, n))
    else:
        cols.size.extend([1 if not x else int(x) for x in sz])
    cols.unit.extend(cols.interned(un))
    cols.exclusive.extend(map(truth, ex))
    cols.status.extend(repeat(0, n))
    ss = "containment"
    cols.paths[ss] = list(paths)
    cols.roots.extend((k, ss) for k in _root_positions(paths))
    return True


def _ints(digits: Sequence[str]) -> list[int]:
    """``[int(x) for x in digits]`` for strings the node pattern matched as integers (``-?[0-9]{1,18}``)."""
    return orjson.loads("[" + ",".join(digits) + "]")


def _writer_edges(cols: Columns, data: bytes, e0: int, e1: int, ref: dict[str, int]) -> bool:
    """Read the edges ``data[e0:e1]`` from the text when laid out as the match writer does (no metadata).

    Endpoints are looked up in ``ref`` (node id -> position); the tiling
    argument is :func:`_fluxion_edges`'.  Returns False (nothing added) for
    any other layout; raises KeyError for an endpoint that is not a node.
    O(edges).
    """
    while e0 < e1 and data[e0 : e0 + 1].isspace():
        e0 += 1
    if e1 <= e0 or _WRITER_EDGE.match(_probe(data, e0, e1)) is None:
        return False
    chunk = data[e0:e1]
    if not chunk.isascii():
        return False
    got = _tiled_pairs(_WRITER_EDGE, _WRITER_EDGE_LEN, chunk.decode("ascii"), 0, e1 - e0)
    if got is None:
        return False
    src, dst = got
    k = len(src)
    get = ref.__getitem__
    s = list(map(get, src))  # KeyError: not a node id
    d = list(map(get, dst))
    ss = cols.interned(["containment"])[0]
    cols.e_src.extend(s)
    cols.e_dst.extend(d)
    cols.e_ss.extend(repeat(ss, k))
    cols.e_rel.extend(repeat(None, k))
    return True


def _types(col: Any) -> set[type]:
    return set(map(type, col))


def _add_nodes(cols: Columns, elems: list[Any], index: int, keys_out: list[str]) -> None:
    """Append the nodes ``elems`` (document positions ``index``...) to ``cols``, their ids to ``keys_out``."""
    n = len(elems)
    if n == 0:
        return
    try:
        keys = list(map(_GET_ID, elems))
        mds = list(map(_GET_METADATA, elems))
        lens = set(map(dict.__len__, mds))  # TypeError: not an object
        if lens == {10}:  # Fluxion's layout: these ten keys, no status, no properties
            t, b, nm, rid, uq, rk, sz, un, pds, ex = zip(*map(_FLUXION_KEYS, mds))
            sts = prs = None
        elif min(lens) < 9:  # keys left out (a match writer's JGF): defaults applied column-wise
            sparse = _sparse_columns(keys, mds)
            if sparse is None:
                _add_nodes_slow(cols, elems, index, keys_out)
                return
            t, b, nm, rid, uq, rk, sz, un, pds, ex, sts, prs = sparse
        else:
            t, b, nm, rid, uq, rk, sz, un, pds = zip(*map(_NODE_KEYS, mds))
            ex = tuple(map(_GET_EXCL, mds))
            sts = list(map(_GET_STATUS, mds))
            prs = list(map(_GET_PROPS, mds))
        # str.join refuses anything but strings, much faster than a type test per value
        "".join(keys)
        "".join(t)
        "".join(b)
        "".join(nm)
        "".join(un)
    except (KeyError, TypeError, IndexError):
        _add_nodes_slow(cols, elems, index, keys_out)
        return
    if not (
        "" not in t
        and _types(rid) == {int}
        and _types(uq) == {int}
        and _types(rk) == {int}
        and _types(sz) == {int}
        and -2 not in rid
        and -1 not in uq
        and min(sz) >= 0
        and _types(ex) <= {bool, _NONE}
        and (
            sts is None or sts.count(None) == n or (_types(sts) <= {int, _NONE} and set(sts) <= {0, 1, None})
        )
        and (prs is None or prs.count(None) == n or _types(prs) <= {dict, _NONE})
    ):
        _add_nodes_slow(cols, elems, index, keys_out)
        return
    del mds
    base = len(cols.type)
    if prs is not None and prs.count(None) != n:
        for k, pr in enumerate(prs):
            if pr:
                if _types(pr.values()) != {str}:
                    raise _Fallback
                cols.properties[base + k] = pr
    # paths: the common case is one subsystem per node, the same for every node
    first = next(iter(pds[0]), None)
    single = bool(first) and set(map(dict.__len__, pds)) == {1}  # TypeError: not an object
    if single:
        ps = list(map(dict.get, pds, repeat(first)))
        single = None not in ps
    if single:
        try:
            "".join(ps)
        except TypeError as exc:
            raise _Fallback from exc
        if not all(map(str.startswith, ps, repeat("/"))):
            raise _Fallback
        col = cols.paths.get(first)
        if col is None:
            col = cols.paths[first] = [None] * base
        elif len(col) < base:
            col.extend([None] * (base - len(col)))
        col.extend(ps)
        cols.roots.extend((base + k, first) for k in _root_positions(ps))
    else:
        for k, pd in enumerate(pds):
            for ss, p in pd.items():
                if type(p) is not str or not ss or not p.startswith("/"):
                    raise _Fallback
                col = cols.paths.get(ss)
                if col is None:
                    col = cols.paths[ss] = []
                if len(col) < base + k:
                    col.extend([None] * (base + k - len(col)))
                col.append(p)
                if p.count("/") == 1:
                    cols.roots.append((base + k, ss))
    keys_out.extend(keys)
    cols.type.extend(cols.interned(t))
    cols.basename.extend(cols.interned(b))
    cols.name.extend(nm)
    cols.id.extend(rid)
    cols.uniq_id.extend(uq)
    cols.rank.extend(rk)
    cols.size.extend(sz)
    cols.unit.extend(cols.interned(un))
    cols.exclusive.extend([x is True for x in ex] if None in ex else ex)
    if sts is None:
        cols.status.extend(repeat(0, n))
    else:
        cols.status.extend([0 if s is None else s for s in sts] if None in sts else sts)
    _pad_paths(cols)


def _sparse_columns(keys: list[str], mds: list[dict[str, Any]]) -> tuple[Any, ...] | None:
    """Columns of node metadata that leaves keys out, with :func:`jgf._validate._node`'s defaults.

    A match writer's JGF carries ``type``, ``id``, ``rank``, ``paths`` and
    sometimes ``exclusive``, ``size``, ``unit``; the rest is derived as
    Fluxion's ``apply_defaults`` does.  Returns None when any value is off
    the simple case (strings for status, ``-1``/``-2`` markers, ids that
    are not plain digits...): the caller then validates per element.
    O(nodes), column at a time.
    """
    n = len(mds)
    present = set().union(*mds)
    absent = [None] * n
    g = {k: list(map(dict.get, mds, repeat(k))) if k in present else absent for k in _SPARSE_KEYS}
    t, b, nm, rid, uq, rk, sz, un = (
        g["type"], g["basename"], g["name"], g["id"], g["uniq_id"], g["rank"], g["size"], g["unit"]
    )  # fmt: skip
    pds, ex, sts, prs = g["paths"], g["exclusive"], g["status"], g["properties"]
    if None in t:
        return None
    for col in (t, b, nm, un):  # str.join refuses anything but strings (None removed first)
        "".join(col if None not in col else [x for x in col if x is not None])
    if not (
        _types(rid) <= {int, _NONE}
        and _types(uq) <= {int, _NONE}
        and _types(rk) <= {int, _NONE}
        and _types(sz) <= {int, _NONE}
        and -2 not in rid
        and -1 not in uq
        and -1 not in sz
        and (sz.count(None) == n or min(x for x in sz if x is not None) >= 0)
        and _types(ex) <= {bool, _NONE}
        and (sts.count(None) == n or (_types(sts) <= {int, _NONE} and set(sts) <= {0, 1, None}))
        and _types(prs) <= {dict, _NONE}
    ):
        return None
    if None in uq:  # C stoll of the node's id string: plain digits only here
        digits = "".join(keys)
        if "" in keys or not (digits.isascii() and digits.isdigit()):
            return None
        uq = [int(k) if u is None else u for k, u in zip(keys, uq)]
    if None in rid:
        rid = [
            (
                int(m.group(1))
                if ty == "node" and name is not None and (m := _TRAILING_DIGITS.search(name)) is not None
                else u
            )
            if r is None
            else r
            for r, u, ty, name in zip(rid, uq, t, nm)
        ]
    if None in rk:
        rk = [-1 if x is None else x for x in rk]
    if None in sz:
        sz = [1 if x is None else x for x in sz]
    if None in b:
        b = [ty if x is None else x for x, ty in zip(b, t)]
    if None in nm:
        nm = [f"{base}{r}" if x is None else x for x, base, r in zip(nm, b, rid)]
    if None in un:
        un = ["" if x is None else x for x in un]
    return t, b, nm, rid, uq, rk, sz, un, pds, ex, sts, prs


def _pad_paths(cols: Columns) -> None:
    n = len(cols.type)
    for col in cols.paths.values():
        if len(col) < n:
            col.extend([None] * (n - len(col)))


def _add_nodes_slow(cols: Columns, elems: list[Any], index: int, keys_out: list[str]) -> None:
    """Per-element validation with :func:`jgf._validate._node` (its defaults, its errors)."""
    for k, elem in enumerate(elems):
        node = _node(index + k, elem, False)
        pos = len(cols.type)
        for ss, p in node.paths.items():
            col = cols.paths.get(ss)
            if col is None:
                col = cols.paths[ss] = []
            if len(col) < pos:
                col.extend([None] * (pos - len(col)))
            col.append(p)
            if p.count("/") == 1:
                cols.roots.append((pos, ss))
        if node.properties:
            cols.properties[pos] = node.properties
        keys_out.append(node.key)
        cols.type.append(node.type)
        cols.basename.append(node.basename)
        cols.name.append(node.name)
        cols.id.append(node.id)
        cols.uniq_id.append(node.uniq_id)
        cols.rank.append(node.rank)
        cols.size.append(node.size)
        cols.unit.append(node.unit)
        cols.exclusive.append(node.exclusive)
        cols.status.append(node.status)
    _pad_paths(cols)


def _add_edges(cols: Columns, elems: list[Any], index: int) -> tuple[Sequence[str], Sequence[str]]:
    """Append subsystems and relations of ``elems``; return their source and target keys."""
    try:
        src, dst = zip(*map(_EDGE_ENDS, elems))
        "".join(src)
        "".join(dst)
        mds = list(map(_GET_OPT_METADATA, elems))
        if mds.count(None) == len(mds) and set(map(dict.__len__, elems)) == {2}:
            # no metadata at all (a match writer's edges): containment, as Fluxion reads them
            sss = ["containment"] * len(mds)
            fast = True
        else:
            fast = set(map(dict.__len__, mds)) == {1}
        if fast and mds[0] is not None:
            sss = list(map(dict.__getitem__, mds, repeat("subsystem")))
            "".join(sss)
            fast = "" not in sss
    except (KeyError, TypeError, IndexError, ValueError):
        fast = False
    if fast:
        cols.e_ss.extend(cols.interned(sss))
        cols.e_rel.extend([None] * len(sss))
        return src, dst
    src, dst = [], []  # type: ignore[assignment]
    for k, elem in enumerate(elems):
        for e in _edges(index + k, elem):
            src.append(e.source)
            dst.append(e.target)
            cols.e_ss.append(e.subsystem)
            cols.e_rel.append(e.relation)
    return src, dst


def columns_jgf(cols: Columns) -> bytes:
    """JGF text for ``cols`` that :func:`read_columns` (and :func:`jgf.read`) read back as ``cols``.

    Every node is written with its whole metadata and its ``uniq_id`` as
    its id, so the uniq ids must be distinct (a :class:`Columns` built by
    :func:`read_columns` from a match writer's JGF has that property).
    Used to hand columns to a reader of JGF text (an older peer, the
    per-node reader's precise errors).  Columns that a match writer's JGF
    gives (defaults for basename and name, no properties, one containment
    path per node, plain ASCII strings) are written in that writer's
    layout, byte for byte the text it wrote; anything else with the whole
    metadata of every node.  O(nodes + edges).
    """
    text = _writer_text(cols)
    if text is not None:
        return text
    uq = cols.uniq_id
    nodes: list[dict[str, Any]] = []
    pcols = list(cols.paths.items())
    props = cols.properties
    for k in range(len(cols.type)):
        md: dict[str, Any] = {
            "type": cols.type[k],
            "basename": cols.basename[k],
            "name": cols.name[k],
            "id": cols.id[k],
            "uniq_id": uq[k],
            "rank": cols.rank[k],
            "exclusive": cols.exclusive[k],
            "unit": cols.unit[k],
            "size": cols.size[k],
            "status": cols.status[k],
        }
        pr = props.get(k)
        if pr:
            md["properties"] = dict(pr)
        md["paths"] = {ss: col[k] for ss, col in pcols if col[k] is not None}
        nodes.append({"id": str(uq[k]), "metadata": md})
    edges: list[dict[str, Any]] = []
    for s, d, ss, rel in zip(cols.e_src, cols.e_dst, cols.e_ss, cols.e_rel):
        md = {"subsystem": ss}
        if rel is not None:
            md["relation"] = rel
        edges.append({"source": str(uq[s]), "target": str(uq[d]), "metadata": md})
    return orjson.dumps({"graph": {"nodes": nodes, "edges": edges}})


def _root_positions(paths: Sequence[str]) -> list[int]:
    """The positions of the paths with exactly one "/" (a root's, as ``/cluster0``), in order, for
    paths that all start with "/" (every caller checks it): those whose last "/" is the first.  One
    C-level ``rfind`` per path (it stops at the last component; a count scans the whole path) and a
    step per root only (a graph or subgraph has one or a few)."""
    last = list(map(str.rfind, paths, repeat("/")))
    k = last.count(0)
    if k <= 1:
        return [last.index(0)] if k else []
    return list(compress(range(len(last)), map((0).__eq__, last)))


def _digits(xs: list[int]) -> list[str]:
    """``list(map(str, xs))`` for integers, cut from one C-level rendering."""
    return orjson.dumps(xs).decode()[1:-1].split(",") if xs else []


def _writer_text(cols: Columns) -> bytes | None:
    """``cols`` as the match writer (``fluxlite.writers.jgf``) lays them out, or None when they are off
    that layout's simple case (see :func:`columns_jgf`).  The pieces are interleaved column-wise and
    joined once (no formatting per node).  O(nodes + edges)."""
    n = len(cols.type)
    ps = cols.paths.get("containment")
    if (
        n == 0
        or len(cols.paths) != 1
        or ps is None
        or None in ps
        or cols.properties
        or cols.free_ranks is not None
        or cols.basename != cols.type
        or cols.status.count(0) != n
        or cols.e_rel.count(None) != len(cols.e_rel)
        or cols.e_ss.count("containment") != len(cols.e_ss)
        or len(set(cols.uniq_id)) != n
    ):
        return None
    ids = _digits(cols.id)
    if not _names_are_defaults(cols.name, cols.type, ids):
        return None
    units = cols.unit
    # (the few distinct types and units, and the paths: every character printable ASCII, no quote or
    # backslash; one C pass over the paths' bytes deleting the allowed ones, where isprintable()
    # looks each character up)
    text = "".join((*set(cols.type), *set(units)))
    if not (text.isascii() and text.isprintable()) or '"' in text or "\\" in text:
        return None  # (would need escapes: the general writer below)
    ptext = "".join(ps)
    if not ptext.isascii() or ptext.encode().translate(None, _PLAIN):
        return None
    uq = _digits(cols.uniq_id)
    # a node: these columns' entries in turn (a str column is the same piece for every node)
    node_cols: list[str | list[str]] = [', {"id": "', uq, '", "metadata": {"type": "', cols.type]
    node_cols += ['", "id": ', ids, ', "rank": ', _digits(cols.rank)]
    if units.count("") != n:
        node_cols.append([f', "unit": "{u}"' if u else "" for u in units])
    if True in cols.exclusive:
        node_cols.append(list(map({True: ', "exclusive": true', False: ""}.__getitem__, cols.exclusive)))
    if cols.size.count(1) != n:
        node_cols.append([f', "size": {x}' if x != 1 else "" for x in cols.size])
    node_cols += [', "paths": {"containment": "', ps, '"}}}']
    ne = len(cols.e_src)
    src = list(itemgetter(*cols.e_src)(uq)) if ne > 1 else [uq[x] for x in cols.e_src]
    dst = list(itemgetter(*cols.e_dst)(uq)) if ne > 1 else [uq[x] for x in cols.e_dst]
    parts = ['{"graph": {"nodes": [']
    parts += _interleave(node_cols, n)
    parts.append('], "edges": [')
    parts += _interleave([', {"source": "', src, '", "target": "', dst, '"}'], ne)
    parts.append("]}}\n")
    return "".join(parts).encode()


#: the printable ASCII characters a JGF string holds unescaped (all but the quote and the backslash)
_PLAIN = bytes(c for c in range(0x20, 0x7F) if c not in b'"\\')


def _joined_names(bases: Sequence[str], digits: Sequence[str]) -> str:
    """``"\\n".join(map(str.__add__, bases, digits))`` (``digits``: one per base): the pieces
    interleaved with newlines and joined once, a third of the cost of the slot wrapper per node.
    Its lines are the names only when no base holds a newline (the callers check)."""
    n = len(bases)
    if n == 0:
        return ""
    parts = ["\n"] * (3 * n)
    parts[0::3] = bases
    parts[1::3] = digits
    parts.pop()  # (no newline after the last node)
    return "".join(parts)


def _names_are_defaults(names: list[str], types: list[str], ids: list[str]) -> bool:
    """``names == list(map(str.__add__, types, ids))`` (``ids``: digits): compared as two texts with a
    newline between nodes when no name or type holds one (two joins, where the map builds a string
    per node), else entry by entry."""
    n = len(names)
    text = "\n".join(names)
    if text.count("\n") != n - 1 or "\n" in "".join(set(types)) or len(types) != n or len(ids) != n:
        return names == list(map(str.__add__, types, ids))
    return _joined_names(types, ids) == text


def _interleave(columns: Sequence[str | list[str]], n: int) -> list[str]:
    """The ``n`` rows' pieces in one list, row by row, each row the columns' entries in turn (a str
    column is that piece in every row), the first row without its leading ", ".  Slice assignments
    in C, where a zip builds a tuple per row and a chain walks them.  O(n * len(columns))."""
    if n == 0:
        return []
    k = len(columns)
    parts: list[str] = [""] * (k * n)
    for j, c in enumerate(columns):
        parts[j::k] = [c] * n if isinstance(c, str) else c
    parts[0] = parts[0][2:]  # (", " before the first row)
    return parts
