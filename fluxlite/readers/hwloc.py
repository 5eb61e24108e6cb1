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

``<i>`` is the object's logical index (its position in its hwloc level).
Other objects are skipped and their children attach to the nearest kept
ancestor.  All vertices get the ``rank`` passed to :meth:`HwlocReader.load`;
without one (-1), as in Fluxion, the node gets the next free rank and the
other vertices keep -1.

The allowlist (Fluxion's ``-W``, only honoured by this reader) keeps only
the listed kinds (``node``, ``socket``, ``core``, ``pu``, ``gpu``,
``numanode``, ``group``, ``L1cache``..., ``storage``); filtered objects are
skipped the same way, so their children attach to the nearest kept
ancestor.

The tree is the one hwloc 2 builds from the XML (see :func:`_parse`): v1
files are converted as hwloc imports them (NUMA nodes become memory
children, possibly under a new Group), and Group and cache levels that
bring no structure are removed level by level with hwloc's
KEEP_STRUCTURE rule, their I/O and memory children moving to the level
that stays.  Where a device or a NUMA node ends up decides which jobspecs
match (``node -> socket -> gpu`` needs the GPU below the socket), so this
follows hwloc's ``topology.c`` closely.  hwloc itself is not needed.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from fluxlite.graph import CONTAINMENT, ResourceGraph
from fluxlite.readers._common import fail, no_gc, split_hostname, to_text

__all__ = ["HwlocReader"]

_CACHE = re.compile(r"^L(\d)(i?)Cache$")
_MEMORY = {"NUMANode", "MemCache"}
_IO = {"Bridge", "PCIDev", "OSDev"}
_OSDEV_BLOCK, _OSDEV_GPU, _OSDEV_COPROC = 0, 1, 5
_OSDEV_NAMES = {"block": 0, "gpu": 1, "network": 2, "openfabrics": 3, "dma": 4, "coproc": 5}

#: hwloc's obj_type_order (topology.c): which normal type sits above which
_ORDER = {"Machine": 0, "Group": 1, "Package": 4, "Die": 5, "Core": 14, "PU": 18}
#: hwloc's obj_type_priority: of two identical levels, the higher one stays
_PRIORITY = {"Machine": 90, "Group": 0, "Package": 40, "Die": 30, "Core": 60, "PU": 100}


def _cache_order(depth: int, instruction: bool) -> int:
    # L1 12, L2 10, L3 8, L4 7, L5 6; instruction caches one below their data cache
    base = {1: 12, 2: 10, 3: 8, 4: 7, 5: 6}.get(depth, 6)
    return base + 1 if instruction else base


@dataclass(slots=True, eq=False)
class _Obj:
    type: str
    attrs: dict[str, str]
    info: dict[str, str]
    #: normal children, then memory (NUMANode), I/O and Misc children, as hwloc keeps them
    children: list[_Obj] = field(default_factory=list)
    memory: list[_Obj] = field(default_factory=list)
    io: list[_Obj] = field(default_factory=list)
    misc: list[_Obj] = field(default_factory=list)
    parent: _Obj | None = None
    key: str = ""  # level class: type (+ cache depth/kind, group kind)
    logical: int = 0
    cache_depth: int = 0

    @property
    def order(self) -> int:
        if self.key.startswith("cache"):
            return _cache_order(self.cache_depth, self.key.endswith(":i"))
        return _ORDER.get(self.type, 19)

    @property
    def priority(self) -> int:
        if self.key.startswith("cache"):
            return 19 if self.key.endswith(":i") else 20
        return _PRIORITY.get(self.type, 0)

    @property
    def keep_structure(self) -> bool:
        """hwloc's KEEP_STRUCTURE filter: Groups by default, caches as Fluxion sets them."""
        return self.type == "Group" or self.key.startswith("cache")

    def add(self, child: _Obj) -> None:
        child.parent = self
        t = child.type
        if t in _MEMORY:
            self.memory.append(child)
        elif t in _IO:
            self.io.append(child)
        elif t == "Misc":
            self.misc.append(child)
        else:
            self.children.append(child)


def _bitmap(text: str | None) -> int | str | None:
    """An hwloc bitmap string ("0x0000ffff,0xffffffff") as an int (32-bit words, most significant first)."""
    if text is None:
        return None
    value = 0
    try:
        for word in text.split(","):
            value = (value << 32) | (int(word, 16) if word else 0)
    except ValueError:
        return text  # e.g. an infinite set: compare as written
    return value


def _parse(body: str, source: str) -> _Obj:
    """The topology as hwloc 2 loads it (the library Fluxion's reader calls).

    v1 XML (no ``version`` attribute) is converted as hwloc 2 imports it: a
    NUMANode becomes a memory child of its parent (of a new memory Group
    when its cpuset differs from the parent's) and its children move up to
    that parent; ``Socket`` is ``Package``; a ``Misc`` with a cpuset is a
    ``Group``.  Then levels with hwloc's KEEP_STRUCTURE filter (Groups,
    and caches as Fluxion configures it) are removed where they bring no
    structure, exactly as ``hwloc_filter_levels_keep_structure`` does,
    and logical indexes are numbered per level.
    """
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        line, col = exc.position
        msg = re.sub(r":\s*line \d+, column \d+$", "", str(exc))
        raise fail(source, f"line {line}, column {col + 1}", f"malformed XML: {msg}") from exc
    if root.tag != "topology":
        raise fail(source, f"<{root.tag}>", "not an hwloc topology (expected <topology>)")
    v1 = not root.get("version", "").strip() or root.get("version", "").strip().startswith("1")
    tops = [c for c in root if c.tag == "object"]
    if len(tops) != 1:
        raise fail(source, "<topology>", f"expected one root <object>, found {len(tops)}")

    def make(el: ET.Element, where: str) -> _Obj:
        t = el.get("type")
        if not t:
            raise fail(source, where, "<object> without a type")
        if t == "Socket":
            t = "Package"
        if v1 and t == "Misc" and el.get("cpuset") is not None:
            t = "Group"
        obj = _Obj(t, dict(el.attrib), {})
        for c in el:
            if c.tag == "info" and c.get("name") is not None:
                obj.info[c.get("name", "")] = c.get("value", "")
        m = _CACHE.match(t)
        if t == "Cache":
            try:
                obj.cache_depth = int(obj.attrs.get("depth", "0"))
            except ValueError:
                raise fail(source, where, f'bad cache depth "{obj.attrs.get("depth")}"') from None
            ctype = obj.attrs.get("cache_type", "0")
            obj.key = f"cache{obj.cache_depth}:{'i' if ctype == '2' else ctype}"
        elif m is not None:
            obj.cache_depth = int(m.group(1))
            obj.key = f"cache{m.group(1)}:{'i' if m.group(2) else 'u'}"
        elif t == "Group":
            obj.key = f"Group:{obj.attrs.get('kind', '')}:{obj.attrs.get('subkind', '')}"
        else:
            obj.key = t
        return obj

    def cpuset(obj: _Obj) -> int | str | None:
        return _bitmap(obj.attrs.get("complete_cpuset", obj.attrs.get("cpuset")))

    def load(el: ET.Element, parent: _Obj | None, where: str) -> _Obj:
        obj = make(el, where)
        if parent is not None:
            if v1 and parent.type == "NUMANode":
                parent = parent.parent  # a v1 NUMA node's children belong to its normal parent
                assert parent is not None
            if v1 and obj.type == "NUMANode" and cpuset(obj) != cpuset(parent):
                # a NUMA node local to part of its parent: hwloc adds a memory Group for it
                group = _Obj("Group", {"cpuset": obj.attrs.get("cpuset", "")}, {}, key="Group:memory:")
                parent.add(group)
                parent = group
            parent.add(obj)
        for k, c in enumerate(el):
            if c.tag == "object":
                load(c, obj, f"{where}/{c.get('type', '?')}[{k}]")
        return obj

    top = load(tops[0], None, tops[0].get("type", "?"))
    _remove_empty(top, cpuset)
    _keep_structure(top)
    _number(top)
    return top


def _remove_empty(obj: _Obj, cpuset: Callable[[_Obj], int | str | None]) -> None:
    """hwloc's remove_empty: drop normal objects with an empty cpuset that hold nothing.

    (v1 files describe GPU memory as CPU-less NUMA nodes with empty Groups below.)
    """
    for c in list(obj.children):
        _remove_empty(c, cpuset)
    keep = []
    for c in obj.children:
        if not (c.children or c.memory or c.io) and cpuset(c) == 0:
            continue
        keep.append(c)
    obj.children = keep


def _levels(top: _Obj) -> list[list[_Obj]]:
    """hwloc_connect_levels: the normal tree as levels of objects of one type, top down."""

    def same(a: _Obj, b: _Obj) -> bool:
        return a.key == b.key

    def below(x: _Obj, like: _Obj) -> bool:
        return any(same(c, like) or below(c, like) for c in x.children)

    levels = [[top]]
    objs = list(top.children)
    while objs:
        top_obj = next((o for o in objs if o.type != "PU"), objs[0])
        for o in objs:
            if not same(o, top_obj) and below(o, top_obj):
                top_obj = o
        taken, rest = [], []
        for o in objs:
            if same(o, top_obj):
                taken.append(o)
                rest.extend(o.children)
            else:
                rest.append(o)
        levels.append(taken)
        objs = rest
    return levels


def _keep_structure(top: _Obj) -> None:
    """hwloc_filter_levels_keep_structure: drop a KEEP_STRUCTURE level identical to its neighbour.

    Two adjacent levels are identical when they have as many objects and
    each upper object has exactly one normal child, the lower one (a PU is
    not merged below an object holding memory).  The level that goes
    hands its memory, I/O and Misc children to the one that stays.
    """
    levels = _levels(top)
    i = len(levels) - 1
    while i > 0:
        up, down = levels[i - 1], levels[i]
        o1, o2 = up[0], down[0]
        rparent = o1.keep_structure and not (o1.type == "Group" and _dont_merge(up))
        rchild = o2.keep_structure and not (o1.type == "Group" and _dont_merge(down))
        if not rparent and not rchild and o1.type == "Package" and o2.type == "Die":
            rchild = True
        if rparent and rchild:
            if o1.priority >= o2.priority:
                rparent = False
            else:
                rchild = False
        if (rparent or rchild) and _identical(up, down):
            for parent, child in zip(up, down):
                if rchild:
                    parent.children = child.children
                    for c in parent.children:
                        c.parent = parent
                    for lst in ("memory", "io", "misc"):
                        moved = getattr(child, lst)
                        for c in moved:
                            c.parent = parent
                        getattr(parent, lst).extend(moved)
                else:
                    gp = parent.parent
                    if gp is None:
                        top = child  # not reached: the root is a Machine
                    else:
                        gp.children[gp.children.index(parent)] = child
                    child.parent = gp
                    for lst in ("memory", "io", "misc"):
                        moved = getattr(parent, lst)
                        for c in moved:
                            c.parent = child
                        setattr(child, lst, moved + getattr(child, lst))
            del levels[i - 1 if rparent else i]
        i -= 1


def _dont_merge(level: list[_Obj]) -> bool:
    return any(o.attrs.get("dont_merge", "0") not in ("", "0") for o in level)


def _identical(up: list[_Obj], down: list[_Obj]) -> bool:
    if len(up) != len(down):
        return False
    check_memory = down[0].type == "PU"
    for p, c in zip(up, down):
        if c.parent is not p or len(p.children) != 1:
            return False
        if check_memory and p.memory:
            return False
    return True


def _number(top: _Obj) -> None:
    """Logical indexes: position in the object's level (normal objects), depth-first order otherwise."""
    for level in _levels(top):
        counters: dict[str, int] = {}
        for o in level:
            k = counters.get(o.key, 0)
            o.logical = k
            counters[o.key] = k + 1
    counters: dict[str, int] = {}

    def special(o: _Obj) -> None:
        for c in o.children:
            special(c)
        for lst in (o.memory, o.io, o.misc):
            for c in lst:
                k = counters.get(c.key, 0)
                c.logical = k
                counters[c.key] = k + 1
                special(c)

    special(top)


def _is_cache(obj: _Obj) -> bool:
    return obj.key.startswith("cache")


def _kids(obj: _Obj) -> list[_Obj]:
    """Children in hwloc_get_next_child order: normal, memory, I/O, Misc."""
    return obj.children + obj.memory + obj.io + obj.misc


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

    next_rank = [max((r for r in g.by_rank if r >= 0), default=-1) + 1]

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
            if rtype == "node" and rank == -1:
                # Fluxion: a node loaded without a rank gets the next one (0, 1, ...)
                v_rank.append(next_rank[0])
                next_rank[0] += 1
            else:
                v_rank.append(rank)
            v_size.append(size)
            v_path.append(f"{path_of(parent)}/{name}")
            if pr:
                props[k] = pr
            e_src.append(parent)
            e_dst.append(k)
            here = k
        for c in _kids(obj):
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
