"""The columns wire form: a match's resources as columns between instances (MatchGrow replies).

A MatchGrow reply normally carries JGF text, which every level it crosses
reads again node by node.  Between two instances that both speak it, the
reply can instead carry a :class:`ResourceColumns` message
(``hierarchy/proto/fluxlite_instance.proto``): one column per attribute,
a column that is the same for every node sent as one value, names and
basenames only where they differ from the defaults (type, basename + id),
paths as one string.  Reading it is a handful of C-level list operations
per column and gives exactly the :class:`jgf.Columns` that
:func:`jgf.read_columns` gives for the same match's JGF, so the attach
that follows is the same code and leaves the same state.

Negotiation: an instance sets ``MatchGrowRequest.accept_columns`` towards
its parent, and ``columns_version``, the newest version it reads (unset: 1,
a caller from before version 2); a parent answers in columns only then, in
at most that version, and only when it matched the grow itself (a grow
from the provider, or a match it cannot encode, stays JGF).  A level passes
the bytes it got from above on unchanged to a child that reads their
version and converts them to JGF for any other caller (:func:`as_jgf`), so
JGF stays what every external interface sees.  Inside an instance a
payload is bytes either way: JGF text, or the header of its version
(:data:`MAGICS`) followed by the serialized message (:func:`is_columns`,
:func:`payload_version`).  Version 2 differs from 1 only in the widths of
the integer columns (``IntColumn.width``).

Every count, index and string of a message is checked against the
message itself and the limits below before anything is built
(:func:`decode`): a malformed message raises :class:`WireError`
(an :class:`~fluxlite.errors.InputError`) and nothing is attached.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence
from itertools import compress, repeat
from operator import is_, is_not, itemgetter
from typing import Any

from google.protobuf.message import DecodeError

from fluxlite.errors import InputError
from fluxlite.graph._store import (
    has_empty,
    int_bounds,
    ints_distinct,
    max_len,
    pack_ints,
    path_roots,
    positions_of,
    rows_columns,
)
from hierarchy._pb import fluxlite_instance_pb2 as pb
from jgf import Columns, columns_jgf
from jgf._columns import (  # (_digits: list(map(str, ints)) in C, 3x faster than str() per id)
    _digits,
    _joined_names,
)

__all__ = [
    "MAGIC",
    "MAGICS",
    "MAX_EDGES",
    "MAX_NODES",
    "WireError",
    "as_jgf",
    "counts",
    "decode",
    "encode",
    "encode_subgraph",
    "is_columns",
    "payload_version",
]

#: the newest version of the form, the one an instance writes to a caller that reads it: version 2
#: sends each varying integer column at the narrowest width its values fit (1, 2, 4 or 8 bytes per
#: entry: types, flags and edge ends in 1 or 2 where version 1 always used 8), half the bytes of a
#: 64-node grow's message; otherwise the two are the same
VERSION = 2
#: what an instance's payload bytes start with when they hold a ResourceColumns message of each
#: version (JGF text starts with ``{`` or white space, never with a NUL byte)
MAGICS = {1: b"\x00fluxlite-columns-1\n", 2: b"\x00fluxlite-columns-2\n"}
MAGIC = MAGICS[VERSION]
_HEAD = len(MAGIC)  # (every version's magic is as long)
_VERSION_OF = {m: v for v, m in MAGICS.items()}
#: most nodes / edges one message may describe (a message is also bounded by gRPC's receive limit)
MAX_NODES = 1 << 21
MAX_EDGES = 1 << 21
#: most entries of the string table, and the longest string, name, property or path accepted
MAX_STRINGS = 1 << 12
MAX_STRING = 1 << 10
MAX_PATH = 1 << 12
#: most properties per node
MAX_PROPERTIES = 1 << 8
_INT64 = (-(1 << 63), (1 << 63) - 1)
_BIG_ENDIAN = sys.byteorder == "big"
#: the values the last byte of a non-negative little-endian int64 can take
_NON_NEGATIVE_TOP = bytes(range(0x80))


class WireError(InputError):
    """A columns message that is malformed or out of bounds (nothing was attached)."""


#: the array type code of each width of a version 2 column (signed little-endian integers)
_TYPECODE = {array(t).itemsize: t for t in "qlihb"}
assert all(w in _TYPECODE for w in (1, 2, 4, 8))
#: the values each width holds
_WIDTH_BOUNDS = {w: (-(1 << (8 * w - 1)), (1 << (8 * w - 1)) - 1) for w in (1, 2, 4, 8)}


def is_columns(payload: bytes) -> bool:
    """Whether ``payload`` holds the columns wire form (else it is JGF text)."""
    return payload[:_HEAD] in _VERSION_OF


def payload_version(payload: bytes) -> int:
    """The columns version of ``payload`` by its header; 0 for JGF text."""
    return _VERSION_OF.get(payload[:_HEAD], 0)


# ------------------------------------------------------------------ encoding




def _distinct(xs: list[Any]) -> Any:
    """The distinct entries of ``xs`` (not empty) other than None: the first alone when every entry is
    the same (counted in C with an identity test first, the usual case of a column), else sorted, so
    that the string table, and with it the payload, is the same bytes in every process (a set's order
    follows the string hash, which differs between processes)."""
    first = xs[0]
    if xs.count(first) == len(xs):
        return () if first is None else (first,)
    return sorted(set(xs).difference((None,)))


def _put(col: Any, xs: Sequence[int], version: int, top: int | None = None) -> None:
    """Column ``col`` holding ``xs``: one value when they are all the same, else each entry (version 2:
    at the narrowest width that holds them all: those of [0, ``top``] where the caller knows it, else
    found by one typed bounds pass)."""
    first = xs[0]
    if xs.count(first) == len(xs):
        col.value = int(first)
        return
    width = 8
    if version >= 2:
        lo, hi = (0, top) if top is not None else int_bounds(xs if isinstance(xs, list) else list(xs))
        width = next(w for w in (1, 2, 4, 8) if _WIDTH_BOUNDS[w][0] <= lo and hi <= _WIDTH_BOUNDS[w][1])
        col.width = width
    packed = pack_ints(xs, width)  # (compiled: the bytes written by one typed pass)
    if packed is not None:
        col.values = packed
        return
    a = array(_TYPECODE[width], xs)
    if _BIG_ENDIAN:  # pragma: no cover - the wire is little-endian
        a.byteswap()
    col.values = a.tobytes()


def _put_idx(col: Any, xs: Sequence[str], idx: Any, version: int, top: int) -> None:
    """``_put(col, list(map(idx, xs)), version, top)`` (``top``: the largest index), without the map
    when every entry is the same."""
    if xs.count(xs[0]) == len(xs):
        col.value = idx(xs[0])
    else:
        _put(col, list(map(idx, xs)), version, top)


#: most rows kept in a graph's ``wire_vcache`` (as the jgf writer bounds its text cache)
_CACHE_MAX = 1 << 18


def _row(g: Any, vid: int, pcol: dict[int, str], fids: Any) -> tuple[Any, ...] | None:
    """What the form carries of vertex ``vid`` that does not depend on the match:
    (path, type, basename or None when it is the type, name or None when it is basename + id, id,
    uniq id, rank (Fluxion's on a GRUG load), unit, (property keys, values) or None); None when
    the vertex is off what the form describes.  O(1) + its properties."""
    path = pcol.get(vid)
    if path is None or "\n" in path or len(path) > MAX_PATH:
        return None
    t, b, name, i = g.v_type[vid], g.v_basename[vid], g.v_name[vid], g.v_id[vid]
    u, r = g.v_uniq[vid], g.v_rank[vid]
    if fids is not None:
        u, r = fids.uniq_of(u), fids.rank_of(u, t, r)
    if name == b + str(i):
        name = None
    elif len(name) > MAX_STRING:
        return None
    props = None
    pr = g.v_props.get(vid)
    if pr:
        keys = sorted(pr)
        vals = [x if isinstance(x, str) else str(x) for x in map(pr.__getitem__, keys)]
        if len(keys) > MAX_PROPERTIES or max(map(len, (*keys, *vals))) > MAX_STRING:
            return None
        props = (keys, vals)
    return (path, t, None if b == t else b, name, i, u, r, g.v_unit[vid], props)


def encode(
    g: Any, emitted: tuple[list[int], list[int], list[bool], list[int]], version: int = VERSION
) -> bytes | None:
    """The wire form (``version``: 1 or 2) of a match that the ``jgf`` writer wrote as ``emitted``
    (:attr:`fluxlite.writers.jgf.JgfColumnsWriter.emitted`), as payload bytes.

    The values are those the writer put in the text (Fluxion's uniq ids and
    ranks on a GRUG-loaded graph, size = what the job needs).  Returns None
    when the match is off what the form describes (more than one
    subsystem, a vertex written twice or without a path, a path with a
    newline, uniq ids that are not distinct, an edge to a vertex not
    written): the caller then sends the JGF.  O(vertices + edges).

    Each vertex's part of the message that does not depend on the match
    (:func:`_row`) is kept in the graph's ``wire_vcache``, which the store
    clears wherever it clears the jgf writer's text of the vertex (all of
    the row is in that text), so a vertex sent again costs one lookup; the
    columns are then cut from the rows by one ``zip``.
    """
    if version not in MAGICS:
        raise ValueError(f"columns version {version}: this instance writes {sorted(MAGICS)}")
    vids, needs, excl, eids = emitted
    n = len(vids)
    if n == 0 or n > MAX_NODES or len(eids) > MAX_EDGES or len(g.paths) != 1:
        return None
    pos = dict(zip(vids, range(n)))
    if len(pos) != n:
        return None
    ((ss, pcol),) = g.paths.items()
    cache = g.wire_vcache
    if cache.get(-1) != ss:  # (the rows' paths are this subsystem's; -1 is never a vertex)
        cache.clear()
        cache[-1] = ss
    rows = list(map(cache.get, vids))
    if None in rows:
        fids = g.fluxion_ids
        room = _CACHE_MAX - len(cache)
        for k in compress(range(n), map(is_, rows, repeat(None))):
            row = _row(g, vids[k], pcol, fids)
            if row is None:
                return None
            rows[k] = row
            if room > 0:
                cache[vids[k]] = row
                room -= 1
    # (one typed pass per column where compiled, where zip(*rows) makes an iterator per row)
    paths, types, bases, names, ids, uniqs, ranks, units, props = rows_columns(rows, 9)
    ptext = "\n".join(paths)
    if not ints_distinct(uniqs) or int_bounds(uniqs)[0] < 0 or -2 in ids:
        return None
    ess = list(map(g.e_ss.__getitem__, eids))
    src = positions_of(eids, g.e_src, pos)
    dst = positions_of(eids, g.e_dst, pos)
    if None in src or None in dst:
        return None
    table: dict[str, int] = {}
    for s in (*_distinct(types), *_distinct(bases), *_distinct(units), ss, *_distinct(ess)):
        if s not in table:  # (_distinct leaves None out)
            table[s] = len(table)
    if len(table) > MAX_STRINGS or max(map(len, table)) > MAX_STRING:
        return None
    idx = table.__getitem__
    m = pb.ResourceColumns(version=version, nodes=n, edges=len(eids), subsystem=idx(ss), paths=ptext)
    m.strings.extend(table)
    top = len(table) - 1  # (the largest string index)
    _put_idx(m.type, types, idx, version, top)
    if bases.count(None) == n:
        m.basename.value = -1
    else:
        _put(m.basename, [-1 if b is None else idx(b) for b in bases], version)
    for k in compress(range(n), map(is_not, names, repeat(None))):
        m.names.add(node=k, name=names[k])
    _put(m.id, ids, version)
    _put(m.uniq_id, uniqs, version)
    _put(m.rank, ranks, version)
    _put(m.size, needs, version)
    _put_idx(m.unit, units, idx, version, top)
    m.status.value = 0  # the jgf writer writes no status: a reader takes 0 (up)
    _put(m.exclusive, excl, version, 1)  # (bools: 0 / 1)
    for k in compress(range(n), props):
        m.properties.add(node=k, keys=props[k][0], values=props[k][1])
    if eids:
        _put(m.source, src, version, n - 1)  # (node positions)
        _put(m.target, dst, version, n - 1)
        _put_idx(m.edge_subsystem, ess, idx, version, top)
    return MAGICS[version] + m.SerializeToString()


def encode_subgraph(g: Any, vids: Sequence[int], subsystem: str = "containment") -> bytes | None:
    """:func:`fluxlite.writers.jgf.subgraph_jgf`'s document (each vertex with its full size, none
    exclusive, the ``subsystem`` edges among them, in the same order) in the wire form, as payload
    bytes: what a level hands back to its parent in a shrink.  The paths, ranks and types read from
    it are those read from the JGF.  None where the form would say something else or does not
    describe the vertices (a graph with Fluxion's ids, whose uniq ids and ranks the form writes; see
    :func:`encode`): the caller then writes the JGF.  O(len(vids)).
    """
    if g.fluxion_ids is not None:
        return None
    pcol = g.parent_edge.get(subsystem)
    if pcol is None:
        return None
    order = list(dict.fromkeys(vids))
    inset = set(order)
    src = g.e_src
    eids = [e for e in map(pcol.__getitem__, order) if e >= 0 and src[e] in inset]
    size = g.v_size
    return encode(g, (order, [size[v] for v in order], [False] * len(order), eids))


# ------------------------------------------------------------------ decoding


def _message(payload: bytes) -> Any:
    version = payload_version(payload)
    if not version:
        raise WireError("columns payload: missing the columns header")
    try:
        m = pb.ResourceColumns.FromString(payload[_HEAD:])
    except DecodeError as exc:
        raise WireError(f"columns payload: not a ResourceColumns message ({exc})") from exc
    if m.version != version:
        raise WireError(f"columns payload: version {m.version} under the header of version {version}")
    if not 1 <= m.nodes <= MAX_NODES:
        raise WireError(f"columns payload: {m.nodes} nodes (1 to {MAX_NODES} accepted)")
    if m.edges > MAX_EDGES:
        raise WireError(f"columns payload: {m.edges} edges (at most {MAX_EDGES} accepted)")
    return m


def _ints(col: Any, n: int, what: str, lo: int, hi: int, version: int) -> list[int]:
    vals = col.values
    width = col.width
    if not vals:
        if width:
            raise WireError(f"columns payload: {what} has a width and no entries")
        v = col.value
        if not lo <= v <= hi:
            raise WireError(f"columns payload: {what} {v} out of range [{lo}, {hi}]")
        return [v] * n
    if version < 2:
        if width:
            raise WireError(f"columns payload: {what} has a width in a version 1 message")
        width = 8
    elif width not in _WIDTH_BOUNDS:
        raise WireError(f"columns payload: {what} has width {width} (1, 2, 4 or 8 accepted)")
    if len(vals) != width * n:
        raise WireError(f"columns payload: {what} has {len(vals)} bytes for {n} entries of {width}")
    a = array(_TYPECODE[width])
    a.frombytes(vals)
    if _BIG_ENDIAN:  # pragma: no cover - the wire is little-endian
        a.byteswap()
    xs = a.tolist()
    wlo, whi = _WIDTH_BOUNDS[width]
    if lo <= wlo and whi <= hi:  # (the width already bounds it)
        return xs
    # the lower bound 0 from the bytes: a little-endian signed integer is negative iff its last byte
    # is >= 0x80 (one C pass over n bytes, where min() compares n ints)
    if lo == 0 and not _BIG_ENDIAN:
        if not vals[width - 1 :: width].translate(None, _NON_NEGATIVE_TOP) and (hi >= whi or int_bounds(xs)[1] <= hi):
            return xs
    else:
        low, high = int_bounds(xs)  # (one typed pass, compiled, where min() and max() compare objects)
        if low >= lo and high <= hi:
            return xs
    bad = min(xs) if min(xs) < lo else max(xs)
    raise WireError(f"columns payload: {what} {bad} out of range [{lo}, {hi}]")


def _strs(col: Any, n: int, what: str, strings: list[str], version: int) -> list[str]:
    """``list(map(strings.__getitem__, _ints(col, n, what, 0, len(strings) - 1, version)))`` (``n``
    >= 1): one lookup for a column sent as one value, else one itemgetter over the checked indices
    (in C, where the map calls the method per entry, at twice the cost)."""
    top = len(strings) - 1
    if not col.values:
        return [strings[_ints(col, 1, what, 0, top, version)[0]]] * n
    xs = _ints(col, n, what, 0, top, version)
    return list(itemgetter(*xs)(strings)) if n > 1 else [strings[xs[0]]]


def _names(bases: list[str], digits: list[str], strings: list[str]) -> list[str]:
    """``list(map(str.__add__, bases, digits))``: the names joined once and split again
    (:func:`jgf._columns._joined_names`), unless a table string (every base is one) holds a newline."""
    if "\n" in "".join(strings):
        return list(map(str.__add__, bases, digits))
    return _joined_names(bases, digits).split("\n") if bases else []


#: every byte but a newline and "/" (what :func:`_root_lines` deletes)
_NOT_SEPARATOR = bytes(b for b in range(256) if b not in b"\n/")


def _root_lines(text: str) -> list[int]:
    """:func:`jgf._columns._root_positions` of ``text.split("\n")`` (every line starts with "/"): the
    lines that are a lone "/" once everything but the newlines and slashes is deleted, in one C pass
    over the UTF-8 bytes (no byte of a multi-byte character is either), where ``rfind`` per path
    builds an argument tuple each.  O(text), a step per root."""
    skeleton = b"\n" + text.encode("utf-8", "surrogatepass").translate(None, _NOT_SEPARATOR) + b"\n"
    at = []
    i = skeleton.find(b"\n/\n")
    while i >= 0:
        at.append(i)
        i = skeleton.find(b"\n/\n", i + 2)  # (the next root line may start at this one's newline)
    return [skeleton.count(b"\n", 0, i) for i in at]


def _short(s: str, what: str, limit: int = MAX_STRING) -> str:
    if len(s) > limit:
        raise WireError(f"columns payload: {what} longer than {limit} characters")
    return s


def counts(payload: bytes) -> tuple[int, int]:
    """(vertices, edges) a payload describes (JGF text or columns).  Raises WireError."""
    if not is_columns(payload):
        from hierarchy._jgfsub import jgf_counts

        return jgf_counts(payload)
    m = _message(payload)
    return m.nodes, m.edges


def decode(payload: bytes) -> Columns:
    """The :class:`jgf.Columns` of a columns payload, every value checked; raises :class:`WireError`.

    The result is what :func:`jgf.read_columns` returns for the JGF text of
    the same match.  O(message).
    """
    m = _message(payload)
    v = m.version
    n = m.nodes
    ne_ = m.edges
    strings = list(m.strings)
    if len(strings) > MAX_STRINGS:
        raise WireError(f"columns payload: {len(strings)} strings (at most {MAX_STRINGS})")
    if strings and max_len(strings) > MAX_STRING:
        raise WireError(f"columns payload: a table string longer than {MAX_STRING} characters")
    top = len(strings) - 1
    cols = Columns()
    table = cols.strings
    strings = [table.setdefault(s, s) for s in strings]
    at = strings.__getitem__
    types = _strs(m.type, n, "type index", strings, v)
    if "" in strings and has_empty(types):  # (the table is short: a column is scanned only when it could hold "")
        raise WireError("columns payload: an empty type")
    b = _ints(m.basename, n, "basename index", -1, top, v)
    if b.count(-1) == n:
        bases = types
    else:
        bases = [ty if x == -1 else at(x) for x, ty in zip(b, types)]
    ids = _ints(m.id, n, "id", _INT64[0], _INT64[1], v)
    if -2 in ids:
        raise WireError("columns payload: id -2 (Fluxion's unset marker) is not a value")
    # basename + id: the ids' digits cut from one C-level rendering (str() per id is 3x slower)
    names = _names(bases, _digits(ids), strings)
    seen: set[int] = set()
    for nm in m.names:
        k = nm.node
        if k >= n or k in seen:
            raise WireError(f"columns payload: name for node {k} (nodes 0 to {n - 1}, once each)")
        seen.add(k)
        names[k] = _short(nm.name, f"the name of node {k}")
    uniqs = _ints(m.uniq_id, n, "uniq_id", 0, _INT64[1], v)
    if not ints_distinct(uniqs):
        raise WireError("columns payload: uniq ids are not distinct")
    ranks = _ints(m.rank, n, "rank", _INT64[0], _INT64[1], v)
    sizes = _ints(m.size, n, "size", 0, _INT64[1], v)
    units = _strs(m.unit, n, "unit index", strings, v)
    status = _ints(m.status, n, "status", 0, 1, v)
    ex = _ints(m.exclusive, n, "exclusive", 0, 1, v)
    # (0 / 1 as bools: one itemgetter over the checked values, in C, where bool() is called per entry)
    excl = list(itemgetter(*ex)((False, True))) if n > 1 else [bool(ex[0])]
    props: dict[int, dict[str, str]] = {}
    for pr in m.properties:
        k = pr.node
        if k >= n or k in props:
            raise WireError(f"columns payload: properties for node {k} (nodes 0 to {n - 1}, once each)")
        keys, vals = list(pr.keys), list(pr.values)
        if len(keys) != len(vals) or not keys or len(keys) > MAX_PROPERTIES:
            raise WireError(f"columns payload: node {k}: {len(keys)} property keys, {len(vals)} values")
        if max(map(len, keys)) > MAX_STRING or max(map(len, vals)) > MAX_STRING:
            raise WireError(f"columns payload: node {k}: a property longer than {MAX_STRING} characters")
        d = dict(zip(keys, vals))
        if len(d) != len(keys):
            raise WireError(f"columns payload: node {k}: a property key given twice")
        props[k] = d
    if m.subsystem > top or not strings[m.subsystem]:
        raise WireError(f"columns payload: subsystem index {m.subsystem} is not a non-empty table string")
    ss = strings[m.subsystem]
    if len(m.paths) > n * (MAX_PATH + 1):
        raise WireError("columns payload: paths too long")
    paths: list[str | None] = m.paths.split("\n")  # type: ignore[assignment]
    if len(paths) != n:
        raise WireError(f"columns payload: {len(paths)} paths for {n} nodes")
    # every path starts with "/", and the one-component ones (the roots): one typed pass over the
    # paths where compiled, else a count and a C pass over the text (in _root_lines)
    roots = path_roots(paths)
    if roots is None and (not m.paths.startswith("/") or m.paths.count("\n/") != n - 1):
        raise WireError("columns payload: a path that does not start with '/'")
    if max_len(paths) > MAX_PATH:  # type: ignore[arg-type]
        raise WireError(f"columns payload: a path longer than {MAX_PATH} characters")
    if ne_:
        src = _ints(m.source, ne_, "edge source", 0, n - 1, v)
        dst = _ints(m.target, ne_, "edge target", 0, n - 1, v)
        e_ss = _strs(m.edge_subsystem, ne_, "edge subsystem index", strings, v)
        if "" in strings and has_empty(e_ss):
            raise WireError("columns payload: an empty edge subsystem")
    else:
        if any(c.values or c.width for c in (m.source, m.target, m.edge_subsystem)):  # (a 0-entry column is empty)
            raise WireError("columns payload: edge columns for 0 edges")
        src, dst, e_ss = [], [], []
    cols.type = types
    cols.basename = bases
    cols.name = names
    cols.id = ids
    cols.uniq_id = uniqs
    cols.rank = ranks
    cols.size = sizes
    cols.unit = units
    cols.status = status
    cols.exclusive = excl
    cols.properties = props
    cols.paths = {ss: paths}
    # (every path starts with "/": checked above)
    cols.roots = [(k, ss) for k in (_root_lines(m.paths) if roots is None else roots)]
    cols.e_src = src
    cols.e_dst = dst
    cols.e_ss = e_ss
    cols.e_rel = [None] * ne_
    return cols


def as_jgf(payload: bytes) -> bytes:
    """``payload`` as JGF text: itself if it is JGF, else its columns written as JGF.  Raises WireError."""
    if not is_columns(payload):
        return payload
    return columns_jgf(decode(payload))
