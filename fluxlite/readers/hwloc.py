"""hwloc reader: a node's resources from an hwloc XML topology (v1 or v2).

Follows Fluxion's ``resource_reader_hwloc.cpp``: a ``cluster0`` root (type
cluster, rank -1) is created unless the graph already has a containment
root, then the hwloc tree is walked depth first (normal, then memory, then
I/O, then misc children) and these objects become vertices:

=================== ============ ===================================== =====
hwloc object        type         basename / name                       size
=================== ============ ===================================== =====
Machine (HostName)  node         host name split into basename + id    1
Group               group        ``group<i>``                          1
NUMANode            numanode     ``numanode<i>``                       1
Package / Socket    socket       ``socket<i>``                         1
L1/L2/L3 cache      cache        ``L<d>cache<i>``                      KiB
Core                core         ``core<i>``                           1
PU                  pu           ``pu<i>``                             1
OS device (coproc,  gpu          ``gpu<n>``, n parsed from the device   1
rsmi GPU)                        name (cuda<n>, rsmi<n>, opencl<p>d<n>)
OS device (block)   storage      ``storage<i>``, property            Size/1e6
                                 ``LinuxDeviceID``
=================== ============ ===================================== =====

``<i>`` is the object's logical index (its position among objects of the
same kind in depth-first order).  Other objects are skipped and their
children attach to the nearest kept ancestor.  All vertices get the
``rank`` passed to :meth:`HwlocReader.load`.

The allowlist (Fluxion's ``-W``, only honoured by this reader) keeps only
the listed kinds (``node``, ``socket``, ``core``, ``pu``, ``gpu``,
``numanode``, ``group``, ``L1cache``..., ``storage``); filtered objects are
skipped the same way, so their children attach to the nearest kept
ancestor.

hwloc's own load filters are approximated: caches are removed when they
bring no structure (a cache level whose objects all have a single child, or
are all the single child of their parent).  hwloc is not needed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Collection
from dataclasses import dataclass, field

from fluxlite.graph import CONTAINMENT, ResourceGraph
from fluxlite.readers._common import fail, no_gc, split_hostname, to_text

__all__ = ["HwlocReader"]

_NORMAL = {"System", "Machine", "Group", "Package", "Socket", "Die", "Core", "PU", "Cache"}
_CACHE = re.compile(r"^L(\d)(i?)Cache$")
_MEMORY = {"NUMANode", "MemCache"}
_IO = {"Bridge", "PCIDev", "OSDev"}
_OSDEV_BLOCK, _OSDEV_GPU, _OSDEV_COPROC = 0, 1, 5
_OSDEV_NAMES = {"block": 0, "gpu": 1, "network": 2, "openfabrics": 3, "dma": 4, "coproc": 5}


@dataclass(slots=True)
class _Obj:
    type: str
    attrs: dict[str, str]
    info: dict[str, str]
    children: list[_Obj] = field(default_factory=list)
    kind: str = ""  # normal | memory | io | misc
    key: str = ""  # logical-index class
    logical: int = 0
    cache_depth: int = 0


def _kind(obj: _Obj) -> str:
    t = obj.type
    if t == "NUMANode":
        return "normal" if any(c.type not in _MEMORY | _IO | {"Misc"} for c in obj.children) else "memory"
    if t in _MEMORY:
        return "memory"
    if t in _IO:
        return "io"
    if t == "Misc":
        return "misc"
    return "normal"


def _parse(body: str, source: str) -> _Obj:
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        line, col = exc.position
        msg = re.sub(r":\s*line \d+, column \d+$", "", str(exc))
        raise fail(source, f"line {line}, column {col + 1}", f"malformed XML: {msg}") from exc
    if root.tag != "topology":
        raise fail(source, f"<{root.tag}>", "not an hwloc topology (expected <topology>)")

    def conv(el: ET.Element, where: str) -> _Obj:
        t = el.get("type")
        if not t:
            raise fail(source, where, "<object> without a type")
        obj = _Obj(t, dict(el.attrib), {})
        for k, c in enumerate(el):
            if c.tag == "info":
                name = c.get("name")
                if name is not None:
                    obj.info[name] = c.get("value", "")
            elif c.tag == "object":
                obj.children.append(conv(c, f"{where}/{c.get('type', '?')}[{k}]"))
        m = _CACHE.match(t)
        if t == "Cache":
            try:
                obj.cache_depth = int(obj.attrs.get("depth", "0"))
            except ValueError:
                raise fail(source, where, f'bad cache depth "{obj.attrs.get("depth")}"') from None
            ctype = obj.attrs.get("cache_type", "0")
            obj.key = f"cache{obj.cache_depth}:{ctype}"
        elif m is not None:
            obj.cache_depth = int(m.group(1))
            obj.key = f"cache{m.group(1)}:{'i' if m.group(2) else 'u'}"
        else:
            obj.key = {"Socket": "Package"}.get(t, t)
        return obj

    tops = [c for c in root if c.tag == "object"]
    if len(tops) != 1:
        raise fail(source, "<topology>", f"expected one root <object>, found {len(tops)}")
    top = conv(tops[0], tops[0].get("type", "?"))

    def order(obj: _Obj) -> None:
        for c in obj.children:
            c.kind = _kind(c)
            order(c)
        rank = {"normal": 0, "memory": 1, "io": 2, "misc": 3}
        obj.children.sort(key=lambda c: rank[c.kind])  # stable: keeps document order per kind

    top.kind = "normal"
    order(top)
    _drop_unstructured_caches(top)
    counters: dict[str, int] = {}

    def number(obj: _Obj) -> None:
        k = counters.get(obj.key, 0)
        obj.logical = k
        counters[obj.key] = k + 1
        for c in obj.children:
            number(c)

    # Logical indexes: per kind, in depth-first order.
    number(top)
    return top


def _is_cache(obj: _Obj) -> bool:
    return obj.key.startswith("cache")


def _collect_caches(parent: _Obj, levels: dict[str, list[tuple[_Obj, _Obj]]]) -> None:
    for c in parent.children:
        if _is_cache(c):
            levels.setdefault(c.key, []).append((parent, c))
        _collect_caches(c, levels)


def _splice(parent: _Obj, victim: str) -> None:
    out: list[_Obj] = []
    for c in parent.children:
        _splice(c, victim)
        if c.key == victim:
            out.extend(c.children)
        else:
            out.append(c)
    parent.children = out


def _normal_arity(obj: _Obj) -> int:
    return sum(1 for x in obj.children if x.kind == "normal")


def _drop_unstructured_caches(top: _Obj) -> None:
    """Approximate hwloc's KEEP_STRUCTURE filter for caches.

    Repeatedly remove a cache level whose objects all have a single normal
    child, or are all the single normal child of their parent.
    """
    while True:
        levels: dict[str, list[tuple[_Obj, _Obj]]] = {}
        _collect_caches(top, levels)
        victim = None
        for key, pairs in sorted(levels.items()):
            if all(_normal_arity(c) == 1 for _, c in pairs) or all(_normal_arity(p) == 1 for p, _ in pairs):
                victim = key
                break
        if victim is None:
            return
        _splice(top, victim)


class HwlocReader:
    """Fluxion's ``hwloc`` reader (see the module docstring)."""

    name = "hwloc"
    supports_allowlist = True

    def load(
        self,
        text: str | bytes,
        graph: ResourceGraph | None = None,
        *,
        rank: int = -1,
        source: str = "<string>",
        allowlist: Collection[str] | None = None,
    ) -> ResourceGraph:
        """Add one node's hwloc topology under the containment root.

        A new graph gets ``cluster0`` first; a graph with a containment root
        gets the node attached under that root (Fluxion's ``unpack_at``),
        which is how several ranks' topologies make one cluster.
        """
        body = to_text(text, source)
        g = ResourceGraph() if graph is None else graph
        allow = set(allowlist) if allowlist else None
        top = _parse(body, source) if body.strip() else None
        with no_gc():
            _build(g, top, rank, allow, source)
        return g


def _classify(
    obj: _Obj, allow: set[str] | None, rank: int, source: str
) -> tuple[str, str, str, int, int, dict[str, str]] | None:
    """(type, basename, name, id, size, properties) or None if not a vertex."""

    def ok(kind: str) -> bool:
        return allow is None or kind in allow

    t = obj.type
    oid = obj.logical
    if t == "Machine":
        host = obj.info.get("HostName")
        if not host or not ok("node"):
            return None
        try:
            base, hid = split_hostname(host)
        except ValueError as exc:
            raise fail(source, "Machine", f'bad HostName "{host}": {exc}') from exc
        return "node", base, host, hid, 1, {}
    if t == "Group":
        return ("group", "group", "", oid, 1, {}) if ok("group") else None
    if t == "NUMANode":
        return ("numanode", "numanode", "", oid, 1, {}) if ok("numanode") else None
    if t in ("Package", "Socket"):
        return ("socket", "socket", "", oid, 1, {}) if ok("socket") else None
    if _is_cache(obj):
        if obj.key.endswith(":i") or obj.key.endswith(":2") or obj.cache_depth not in (1, 2, 3):
            return None
        base = f"L{obj.cache_depth}cache"
        if not ok(base):
            return None
        try:
            size = int(obj.attrs.get("cache_size", "0")) // 1024
        except ValueError:
            raise fail(source, base, f'bad cache_size "{obj.attrs.get("cache_size")}"') from None
        return "cache", base, "", oid, size, {}
    if t == "Core":
        return ("core", "core", "", oid, 1, {}) if ok("core") else None
    if t == "PU":
        return ("pu", "pu", "", oid, 1, {}) if ok("pu") else None
    if t == "OSDev":
        raw = obj.attrs.get("osdev_type", "")
        try:
            ostype = int(raw)
        except ValueError:
            ostype = _OSDEV_NAMES.get(raw.lower(), -1)
        name = obj.attrs.get("name", "")
        if ostype == _OSDEV_COPROC or (ostype == _OSDEV_GPU and name.startswith("rsmi")):
            if not ok("gpu"):
                return None
            gid = oid
            m = re.match(r"^(?:cuda|rsmi)(\d+)", name)
            if m:
                gid = int(m.group(1))
            elif name.startswith("opencl"):
                m2 = re.search(r"d(\d+)", name[6:])
                gid = int(m2.group(1)) if m2 else 0
            return "gpu", "gpu", "", gid, 1, {}
        if ostype == _OSDEV_BLOCK:
            if not ok("storage"):
                return None
            size_s = obj.info.get("Size")
            if size_s is None:
                raise fail(source, f'OSDev "{name}"', "block device without a Size")
            try:
                kb = int(size_s)
            except ValueError:
                raise fail(source, f'OSDev "{name}"', f'bad Size "{size_s}"') from None
            if kb == 0:
                raise fail(source, f'OSDev "{name}"', "block device of size 0")
            dev = obj.info.get("LinuxDeviceID", "-1")
            return "storage", "storage", "", oid, kb // 1_000_000, {"LinuxDeviceID": dev}
    return None


def _build(g: ResourceGraph, top: _Obj | None, rank: int, allow: set[str] | None, source: str) -> None:
    root = g.roots.get(CONTAINMENT)
    v_type: list[str] = []
    v_base: list[str] = []
    v_name: list[str] = []
    v_id: list[int] = []
    v_rank: list[int] = []
    v_size: list[int] = []
    v_path: list[str] = []
    props: dict[int, dict[str, str]] = {}
    e_src: list[int] = []
    e_dst: list[int] = []
    if root is None:
        v_type.append("cluster")
        v_base.append("cluster")
        v_name.append("cluster0")
        v_id.append(0)
        v_rank.append(-1)
        v_size.append(1)
        v_path.append("/cluster0")
        parent0 = 0
    else:
        parent0 = -1 - root

    def path_of(x: int) -> str:
        return v_path[x] if x >= 0 else g.path(-1 - x)

    def walk(obj: _Obj, parent: int) -> None:
        got = _classify(obj, allow, rank, source)
        here = parent
        if got is not None:
            rtype, base, name, oid, size, pr = got
            if not name:
                name = base if oid == -1 else f"{base}{oid}"
            k = len(v_type)
            v_type.append(rtype)
            v_base.append(base)
            v_name.append(name)
            v_id.append(oid)
            v_rank.append(rank)
            v_size.append(size)
            v_path.append(f"{path_of(parent)}/{name}")
            if pr:
                props[k] = pr
            e_src.append(parent)
            e_dst.append(k)
            here = k
        for c in obj.children:
            walk(c, here)

    if top is not None:
        walk(top, parent0)
    seen: dict[str, int] = {}
    for k, p in enumerate(v_path):
        if seen.setdefault(p, k) != k or p in g.by_path:
            raise fail(source, f'vertex "{v_name[k]}"', f"duplicate path {p}")
    n = len(v_type)
    vids = g.add_vertices_bulk(
        v_type, v_base, v_name, v_id, v_rank, v_size, [""] * n, paths={CONTAINMENT: v_path}, properties=props
    )

    def real(x: int) -> int:
        return vids[x] if x >= 0 else -1 - x

    g.add_edges_bulk([real(x) for x in e_src], [real(x) for x in e_dst])
    if root is None:
        g.set_root(CONTAINMENT, vids[0])
    g.version += 1
