"""Reading jobspec text (YAML or JSON) into a :class:`Jobspec`, by Fluxion's rules.

Fluxion (``resource/libjobspec``) parses with yaml-cpp: every scalar stays
text until a field reads it, a null is not a scalar, only the first YAML
document counts, and a ``properties`` constraint accepts only *quoted*
strings.  To accept and refuse exactly what Fluxion does, YAML is composed
into nodes with a resolver that never guesses types, then turned into plain
Python values where only canonical spellings become ``int``/``float``/``bool``
(so the original text is always recoverable, see ``_scalars``).  JSON goes
through orjson and lands in the same representation.  Validation then
follows ``jobspec.cpp`` check by check, and each rejection becomes a one-line
:class:`~fluxlite.errors.JobspecError` naming the source, the field path and,
for YAML, the line.

Bounds (hostile input): YAML aliases may be used at most
:data:`MAX_ALIASES` times, the document after expanding them may hold at
most :data:`MAX_EXPANDED_NODES` nodes (an 800-byte "billion laughs"
document would otherwise expand to millions of resources), and the request
tree at most :data:`MAX_RESOURCES` resources.  Every entry point (files,
the REPL, the instance service) goes through :func:`parse_jobspec`, so all
get the same guard.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from os import PathLike, fspath
from typing import Any

import orjson
import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from fluxlite.errors import JobspecError
from fluxlite.jobspec._constraint import Constraint, parse_constraint_value
from fluxlite.jobspec._model import UNBOUNDED, Count, Jobspec, Resource, Task, Tristate
from fluxlite.jobspec._scalars import (
    UINT_MAX,
    FieldError,
    as_char,
    as_double,
    as_int,
    as_string,
    as_unsigned,
    describe,
    is_scalar,
    text,
)

__all__ = [
    "MAX_ALIASES",
    "MAX_EXPANDED_NODES",
    "MAX_RESOURCES",
    "load_jobspec",
    "parse_constraint",
    "parse_jobspec",
]

_TAGS = {
    ScalarNode: "tag:yaml.org,2002:str",
    SequenceNode: "tag:yaml.org,2002:seq",
    MappingNode: "tag:yaml.org,2002:map",
}

try:
    from yaml.cyaml import CParser as _CParser
except ImportError:  # pragma: no cover - libyaml is normally present
    _CParser = None

if _CParser is not None:

    class _NodeReader(_CParser):  # type: ignore[misc,valid-type]
        """libyaml's parser and composer with a resolver that keeps every scalar a string."""

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            return _TAGS[kind]

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

else:  # pragma: no cover
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _NodeReader(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        """PyYAML's pure-Python parser and composer with a string-only resolver."""

        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)

        def resolve(self, kind: type, value: Any, implicit: Any) -> str:
            return _TAGS[kind]

        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None


# yaml-cpp turns these plain scalars into null nodes.
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
# Decimal integers that str(int) writes back identically ("-0" is not one).
_CANON_INT = re.compile(r"0|-?[1-9][0-9]{0,30}")
# Python's repr() spellings of finite floats ("1.5", "1e+20", "2.5e-07").
_CANON_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]{0,30})\.[0-9]{1,30}|-?[1-9](?:\.[0-9]{1,30})?e[+-][0-9]{2,3}")
_NUMBER_START = frozenset("-0123456789")


def _plain_value(s: str) -> Any:
    """The value of an unquoted scalar; non-canonical spellings stay text."""
    if s in _NULLS:
        return None
    if s[0] in _NUMBER_START:
        if _CANON_INT.fullmatch(s) is not None:
            return int(s)
        if _CANON_FLOAT.fullmatch(s) is not None:
            f = float(s)
            if repr(f) == s:
                return f
        return s
    if s == "true":
        return True
    if s == "false":
        return False
    return s


class _DupMap(dict):  # type: ignore[type-arg]
    """A mapping written with a repeated key: lookups see the first, ``pairs`` holds all."""

    __slots__ = ("pairs",)


def _size(mapping: dict[Any, Any]) -> int:
    pairs = getattr(mapping, "pairs", None)
    return len(mapping) if pairs is None else len(pairs)


def _items(mapping: dict[Any, Any]) -> Any:
    pairs = getattr(mapping, "pairs", None)
    return mapping.items() if pairs is None else pairs


class _YamlSyntax(Exception):
    def __init__(self, node: Node, reason: str) -> None:
        super().__init__(reason)
        self.line = node.start_mark.line + 1
        self.column = node.start_mark.column + 1
        self.reason = reason


#: alias references a document may use (Fluxion has no limit; real jobspecs use a handful)
MAX_ALIASES = 1000
#: nodes (scalars and containers) of a document once its aliases are expanded
MAX_EXPANDED_NODES = 100_000
#: resources of the request tree once its aliases are expanded
MAX_RESOURCES = 10_000


class _Builder:
    """Turns composed YAML nodes into Python values, recording lines and quoting.

    Aliases share the value built once (no copy), and the size the document
    would have once expanded is counted as it is built: past
    :data:`MAX_EXPANDED_NODES` (or :data:`MAX_ALIASES` references) it is refused.
    """

    __slots__ = ("aliases", "busy", "done", "lines", "plain_items", "sizes")

    def __init__(self) -> None:
        # id(container) -> (line, {key: line} or [line, ...])
        self.lines: dict[int, tuple[int, Any]] = {}
        # id(properties list) -> per item: True when not a quoted string
        self.plain_items: dict[int, tuple[bool, ...]] = {}
        self.done: dict[int, Any] = {}
        self.busy: set[int] = set()
        # id(container) -> nodes it stands for once aliases are expanded
        self.sizes: dict[int, int] = {}
        self.aliases = 0

    def key(self, node: Node) -> str:
        if node.__class__ is ScalarNode:
            value: str = node.value
            if not node.style and value in _NULLS:
                return "null"  # what yaml-cpp's as<std::string> gives a null key
            return value
        raise _YamlSyntax(node, "a mapping key must be a scalar")

    def value(self, node: Node) -> Any:
        cls = node.__class__
        if cls is ScalarNode:
            if node.style:
                return node.value
            return _plain_value(node.value)
        nid = id(node)
        built = self.done.get(nid)
        if built is not None:
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _YamlSyntax(node, f"more than {MAX_ALIASES} alias references")
            return built
        if nid in self.busy:
            raise _YamlSyntax(node, "recursive alias")
        self.busy.add(nid)
        lines = self.lines
        sizes = self.sizes
        if cls is SequenceNode:
            items = node.value
            out: Any = [self.value(item) for item in items]
            lines[id(out)] = (node.start_mark.line + 1, [item.start_mark.line + 1 for item in items])
            size = 1 + sum(sizes.get(id(v), 1) for v in out)
        else:
            mapping: dict[str, Any] = {}
            keylines: dict[str, int] = {}
            pairs: list[tuple[str, Any]] | None = None
            size = 1
            for knode, vnode in node.value:
                key = self.key(knode)
                val = self.value(vnode)
                size += 1 + sizes.get(id(val), 1)
                if key in mapping:
                    if pairs is None:
                        pairs = list(mapping.items())
                    pairs.append((key, val))
                    continue
                mapping[key] = val
                keylines[key] = vnode.start_mark.line + 1
                if pairs is not None:
                    pairs.append((key, val))
                if key == "properties" and vnode.__class__ is SequenceNode:
                    self.plain_items[id(val)] = tuple(
                        not (item.__class__ is ScalarNode and item.style) for item in vnode.value
                    )
            if pairs is not None:
                dup = _DupMap(mapping)
                dup.pairs = pairs
                mapping = dup
            out = mapping
            lines[id(out)] = (node.start_mark.line + 1, keylines)
        if size > MAX_EXPANDED_NODES:
            raise _YamlSyntax(
                node,
                f"aliases expand the document to more than {MAX_EXPANDED_NODES} nodes (a request, not a graph)",
            )
        sizes[id(out)] = size
        self.busy.discard(nid)
        self.done[nid] = out
        return out


def _one_line(s: str) -> str:
    return " ".join(s.split())


def _yaml_error(source: str, exc: yaml.YAMLError) -> JobspecError:
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark is not None else source
        reason = exc.problem or exc.context or "invalid YAML"
        if exc.context and exc.problem:
            reason = f"{exc.problem} ({exc.context})"
        return JobspecError(f"{where}: invalid YAML: {_one_line(reason)}")
    reason = getattr(exc, "reason", None)
    position = getattr(exc, "position", None)
    if reason is not None and position is not None:
        return JobspecError(f"{source}: invalid YAML at character {position}: {_one_line(str(reason))}")
    return JobspecError(f"{source}: invalid YAML: {_one_line(str(exc))}")


# -- fast path ---------------------------------------------------------------
#
# Most jobspecs are small block-style YAML: nested mappings and sequences,
# plain or simply quoted scalars, one-line flow sequences, full-line comments.
# _fast_document parses exactly that subset into the same tree _Builder
# produces and gives up (returns None) on anything else, which then goes
# through libyaml.  It records no line numbers: when a document read this way
# is rejected, it is read again through libyaml to locate the error.

# Escapes, tabs and control characters; other indicators fail the token checks.
_FAST_REFUSE = re.compile(r"[\\\t\r\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# One line: indent, then a comment, or an optional "- ", an optional "key:" and the rest.
_FAST_LINE = re.compile(
    r"( *)(?:#[^\n]*|(-(?: +|(?=\n)))?(?:([A-Za-z_][A-Za-z0-9_.-]*):(?: +|(?=\n)))?([^\n]*))\n"
)
_FAST_PLAIN = re.compile(r"(?:[A-Za-z0-9_.~+/$]|-(?=[^ ]))[A-Za-z0-9_.~+/$-]*")
_DASH, _KEY, _SCALAR = 0, 1, 2
_MISS = object()
# Scalar text -> value, for the immutable values the fast path produces.
_SCALAR_CACHE: dict[str, Any] = {}
_SCALAR_CACHE_MAX = 4096


class _Bail(Exception):
    pass


def _fast_scalar(s: str) -> Any:
    value = _SCALAR_CACHE.get(s, _MISS)
    if value is not _MISS:
        return value
    first = s[0]
    if first == '"' or first == "'":
        if len(s) < 2 or s[-1] != first or first in s[1:-1]:
            raise _Bail
        value = s[1:-1]
    elif _FAST_PLAIN.fullmatch(s) is not None:
        value = _plain_value(s)
    else:
        raise _Bail
    if len(_SCALAR_CACHE) < _SCALAR_CACHE_MAX:
        _SCALAR_CACHE[s] = value
    return value


class _FastReader:
    __slots__ = ("i", "n", "plain_items", "toks")

    def __init__(self, toks: list[tuple[int, int, Any, Any]]) -> None:
        self.toks = toks
        self.n = len(toks)
        self.i = 0
        self.plain_items: dict[int, tuple[bool, ...]] = {}

    def node(self, indent: int) -> Any:
        tok = self.toks[self.i]
        if tok[1] == _DASH:
            return self.sequence(indent)
        if tok[1] == _KEY:
            return self.mapping(indent)
        self.i += 1
        return self.value(tok[2], False)

    def sequence(self, indent: int) -> list[Any]:
        toks, n, out = self.toks, self.n, []
        while self.i < n:
            tind, kind, _, _ = toks[self.i]
            if tind < indent:
                break
            if tind > indent:
                raise _Bail
            if kind != _DASH:
                break
            self.i += 1
            if self.i < n and toks[self.i][0] > indent:
                out.append(self.node(toks[self.i][0]))
            else:
                out.append(None)
        return out

    def mapping(self, indent: int) -> dict[str, Any]:
        toks, n, out = self.toks, self.n, {}
        while self.i < n:
            tind, kind, key, text_value = toks[self.i]
            if tind < indent:
                break
            if tind > indent:
                raise _Bail
            if kind != _KEY:
                if kind == _DASH:
                    break
                raise _Bail
            if key in out:
                raise _Bail
            self.i += 1
            if text_value:
                value = _SCALAR_CACHE.get(text_value, _MISS)
                if value is _MISS:
                    value = self.value(text_value, key == "properties")
            elif self.i < n:
                nind, nkind, _, _ = toks[self.i]
                if nind > indent:
                    value = self.node(nind)
                elif nind == indent and nkind == _DASH:
                    value = self.sequence(indent)
                else:
                    value = None
                if key == "properties" and isinstance(value, list):
                    raise _Bail
            else:
                value = None
            out[key] = value
        return out

    def value(self, s: str, properties: bool) -> Any:
        if s[0] != "[":
            return _fast_scalar(s)
        if s[-1] != "]":
            raise _Bail
        inner = s[1:-1].strip(" ")
        parts = [part.strip(" ") for part in inner.split(",")] if inner else []
        items = [_fast_scalar(part) if part else _fail_fast() for part in parts]
        if properties:
            self.plain_items[id(items)] = tuple(part[0] not in "\"'" for part in parts)
        return items


def _fail_fast() -> Any:
    raise _Bail


def _fast_document(data: str) -> tuple[Any, dict[int, tuple[bool, ...]]] | None:
    """The tree of a simple block-style YAML document, or None to use libyaml."""
    if not data.isascii() or _FAST_REFUSE.search(data) is not None:
        return None
    if data[-1:] != "\n":
        data += "\n"
    toks: list[tuple[int, int, Any, Any]] = []
    add = toks.append
    for spaces, dash, key, rest in _FAST_LINE.findall(data):
        indent = len(spaces)
        if dash:
            add((indent, _DASH, None, None))
            indent += len(dash)
        if key:
            add((indent, _KEY, "null" if key in _NULLS else key, rest.rstrip(" ")))
        elif rest:
            add((indent, _SCALAR, rest.rstrip(" "), None))
    if not toks or toks[0][1] == _SCALAR:
        return None
    reader = _FastReader(toks)
    try:
        doc = reader.node(toks[0][0])
    except (_Bail, RecursionError):
        return None
    if reader.i != reader.n:
        return None
    return doc, reader.plain_items


# libyaml's composer recurses in C: a few tens of thousands of nested flow
# brackets crash the interpreter, so deeper documents are refused up front.
_MAX_FLOW_DEPTH = 1000
_BRACKETS = re.compile(r"[\[\]{}]")


def _flow_depth_exceeds(data: str, limit: int) -> bool:
    if data.count("[") + data.count("{") <= limit:
        return False
    depth = 0
    for m in _BRACKETS.finditer(data):
        if m.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


def _yaml_document(data: str, source: str) -> tuple[Any, _Builder]:
    """The first YAML document of ``data`` as a tree, and the builder that recorded it."""
    if _flow_depth_exceeds(data, _MAX_FLOW_DEPTH):
        raise JobspecError(f"{source}: (top level): the document is nested too deeply")
    builder = _Builder()
    reader = _NodeReader(data)
    try:
        node = reader.get_node() if reader.check_node() else None
        value = None if node is None else builder.value(node)
    except yaml.YAMLError as exc:
        raise _yaml_error(source, exc) from None
    except _YamlSyntax as exc:
        raise JobspecError(f"{source}:{exc.line}:{exc.column}: invalid YAML: {exc.reason}") from None
    except RecursionError:
        raise JobspecError(f"{source}: (top level): the document is nested too deeply") from None
    finally:
        dispose = getattr(reader, "dispose", None)
        if dispose is not None:
            dispose()
    return value, builder


def _as_text_or_json(data: str | bytes | Mapping[str, Any], source: str) -> tuple[str | None, Any]:
    """``(text, None)`` for YAML to read, or ``(None, document)`` when it was JSON (or a mapping)."""
    if isinstance(data, Mapping):
        # a document built in Python: as its JSON text would read (tuples become lists; a value
        # JSON cannot hold is refused here, not deep in the validator)
        try:
            return None, orjson.loads(orjson.dumps(data))
        except TypeError as exc:  # orjson.JSONEncodeError
            raise JobspecError(f"{source}: not a JSON document: {exc}") from None
    if not isinstance(data, (str, bytes, bytearray, memoryview)):
        raise JobspecError(
            f"{source}: a jobspec is YAML or JSON text, bytes or a mapping, not {type(data).__name__}"
        )
    if isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        if raw[:1] == b"{" or raw.lstrip()[:1] == b"{":
            try:
                return None, orjson.loads(raw)
            except orjson.JSONDecodeError:
                pass
        try:
            return raw.decode("utf-8-sig"), None
        except UnicodeDecodeError as exc:
            raise JobspecError(f"{source}: not UTF-8 text (byte {exc.start})") from None
    if data[:1] == "{" or data.lstrip()[:1] == "{":
        try:
            return None, orjson.loads(data)
        except orjson.JSONDecodeError:
            pass
    return data, None


# Count(n, n, '+', 1) for the integer counts seen so far (counts are immutable).
_FIXED_COUNTS: dict[int, Count] = {}


class _Validator:
    """Checks a document tree the way ``Flux::Jobspec::Jobspec`` does and builds the model."""

    __slots__ = ("plain_items", "resources")

    def __init__(self, plain_items: dict[int, tuple[bool, ...]] | None) -> None:
        self.plain_items = plain_items
        self.resources = 0

    # -- top level ---------------------------------------------------------

    def jobspec(self, doc: Any, source: str) -> Jobspec:
        if not isinstance(doc, dict):
            extra = " (empty document)" if doc is None else ""
            raise FieldError("(top level)", f"a jobspec must be a mapping, got {describe(doc)}{extra}")
        for key in ("version", "resources", "tasks", "attributes"):
            if key not in doc:
                raise FieldError(
                    key, "missing (a jobspec needs version, resources, tasks and attributes)", doc
                )
        if _size(doc) != 4:
            self._unexpected_key(doc, "", ("version", "resources", "tasks", "attributes"), "top-level key")

        vnode = doc["version"]
        if not is_scalar(vnode):
            raise FieldError("version", f"must be an unsigned integer, got {describe(vnode)}", doc, "version")
        version = as_unsigned(vnode)
        if version is None:
            raise FieldError("version", f"must be an unsigned integer, got {describe(vnode)}", doc, "version")
        if not 1 <= version <= 9999:
            raise FieldError(
                "version", f"only versions 1 to 9999 are supported, got {version}", doc, "version"
            )

        attrs = doc["attributes"]
        duration, queue, constraint = 0.0, "", None
        if attrs is None:
            attrs = {}
        elif isinstance(attrs, dict):
            duration, queue, constraint = self.attributes(attrs)
        else:
            raise FieldError("attributes", f"must be a mapping, got {describe(attrs)}", doc, "attributes")

        rnode = doc["resources"]
        if not isinstance(rnode, list):
            raise FieldError("resources", f"must be a sequence, got {describe(rnode)}", doc, "resources")
        resources = tuple(self.resource(r, f"resources[{i}]", rnode, i) for i, r in enumerate(rnode))

        tnode = doc["tasks"]
        if not isinstance(tnode, list):
            raise FieldError("tasks", f"must be a sequence, got {describe(tnode)}", doc, "tasks")
        tasks = tuple(self.task(t, f"tasks[{i}]", tnode, i) for i, t in enumerate(tnode))

        return Jobspec(
            version=version,
            resources=resources,
            tasks=tasks,
            attributes=attrs,
            duration=duration,
            queue=queue,
            constraint=constraint,
            source=source,
        )

    @staticmethod
    def _unexpected_key(mapping: dict[str, Any], path: str, allowed: tuple[str, ...], what: str) -> None:
        prefix = f"{path}." if path else ""
        for key in mapping:
            if key not in allowed:
                raise FieldError(
                    f"{prefix}{key}", f"unknown {what} (allowed: {', '.join(allowed)})", mapping, key
                )
        seen: set[str] = set()
        for key, _ in _items(mapping):
            if key in seen:
                raise FieldError(f"{prefix}{key}", "duplicate key", mapping, key)
            seen.add(key)
        raise FieldError(path or "(top level)", "unexpected number of entries", mapping)  # pragma: no cover

    # -- attributes ----------------------------------------------------------

    def attributes(self, attrs: dict[str, Any]) -> tuple[float, str, Constraint | None]:
        duration, queue, constraint = 0.0, "", None
        for key, value in _items(attrs):
            if key == "user":
                continue
            if key != "system":
                raise FieldError(
                    f"attributes.{key}", "unknown key (attributes holds only 'user' and 'system')", attrs, key
                )
            if isinstance(value, list) and value:
                raise FieldError("attributes.system", "must be a mapping, got a sequence", attrs, key)
            if not isinstance(value, dict):
                continue  # Fluxion iterates nothing out of a scalar, a null or []
            for skey, sval in _items(value):
                path = f"attributes.system.{skey}"
                if skey == "duration":
                    d = as_double(sval)
                    if d is None:
                        raise FieldError(
                            path, f"must be a number of seconds, got {describe(sval)}", value, skey
                        )
                    duration = d
                elif skey in ("queue", "cwd"):
                    s = as_string(sval)
                    if s is None:
                        raise FieldError(path, f"must be a string, got {describe(sval)}", value, skey)
                    if skey == "queue":
                        queue = s
                elif skey == "environment":
                    self._environment(sval, path, value, skey)
                elif skey == "constraints":
                    constraint = parse_constraint_value(sval, path, self.plain_items)
        return duration, queue, constraint

    @staticmethod
    def _environment(env: Any, path: str, parent: dict[str, Any], key: str) -> None:
        if isinstance(env, list) and env:
            raise FieldError(path, "must be a mapping, got a sequence", parent, key)
        if not isinstance(env, dict):
            return
        for name, val in _items(env):
            if as_string(val) is None:
                raise FieldError(f"{path}.{name}", f"must be a string, got {describe(val)}", env, name)

    # -- resources -----------------------------------------------------------

    _RESOURCE_KEYS = ("type", "count", "unit", "label", "id", "exclusive", "with")

    def resource(self, node: Any, path: str, parent: Any, index: int) -> Resource:
        self.resources += 1
        if self.resources > MAX_RESOURCES:
            raise FieldError(path, f"the request has more than {MAX_RESOURCES} resources", parent, index)
        # Fast path: a plain mapping with a string type, an integer count and
        # well-typed optional keys.  Anything else takes the checked path below,
        # which reports errors in Fluxion's order.
        if node.__class__ is dict:
            rtype = node.get("type")
            count_v = node.get("count")
            if rtype.__class__ is str and count_v.__class__ is int and 0 <= count_v <= UINT_MAX:
                unit = label = rid = ""
                exclusive = Tristate.UNSPECIFIED
                kids: Any = None
                for key, v in node.items():
                    cls = v.__class__
                    if key == "type" or key == "count":
                        continue
                    if key == "with" and cls is list:
                        kids = v
                    elif key == "label" and cls is str:
                        label = v
                    elif key == "exclusive" and cls is bool:
                        exclusive = Tristate.TRUE if v else Tristate.FALSE
                    elif key == "unit" and cls is str:
                        unit = v
                    elif key == "id" and cls is str:
                        rid = v
                    else:
                        break
                else:
                    if rtype != "slot" or "label" in node:
                        count = _FIXED_COUNTS.get(count_v)
                        if count is None:
                            count = Count(count_v, count_v, "+", 1)
                            if len(_FIXED_COUNTS) < 1024:
                                _FIXED_COUNTS[count_v] = count
                        children: tuple[Resource, ...] = ()
                        if kids:
                            children = tuple(
                                self.resource(c, f"{path}.with[{i}]", kids, i) for i, c in enumerate(kids)
                            )
                        return Resource(rtype, count, unit, label, rid, exclusive, children)
        return self._resource_checked(node, path, parent, index)

    def _resource_checked(self, node: Any, path: str, parent: Any, index: int) -> Resource:
        if not isinstance(node, dict):
            raise FieldError(path, f"a resource must be a mapping, got {describe(node)}", parent, index)
        if "type" not in node:
            raise FieldError(f"{path}.type", "missing (every resource needs a type)", node)
        rtype_v = node["type"]
        if not is_scalar(rtype_v):
            raise FieldError(f"{path}.type", f"must be a string, got {describe(rtype_v)}", node, "type")
        rtype = text(rtype_v)
        if "count" not in node:
            raise FieldError(f"{path}.count", "missing (every resource needs a count)", node)
        count = self.count(node["count"], f"{path}.count", node)
        fields = 2

        unit = ""
        if "unit" in node:
            v = node["unit"]
            if not is_scalar(v):
                raise FieldError(f"{path}.unit", f"must be a string, got {describe(v)}", node, "unit")
            unit = text(v)
            fields += 1

        exclusive = Tristate.UNSPECIFIED
        if "exclusive" in node:
            v = node["exclusive"]
            s = text(v) if is_scalar(v) else None
            if s == "true":
                exclusive = Tristate.TRUE
            elif s == "false":
                exclusive = Tristate.FALSE
            else:
                raise FieldError(
                    f"{path}.exclusive", f"must be true or false, got {describe(v)}", node, "exclusive"
                )
            fields += 1

        children: tuple[Resource, ...] = ()
        if "with" in node:
            w = node["with"]
            if not isinstance(w, list):
                raise FieldError(f"{path}.with", f"must be a sequence, got {describe(w)}", node, "with")
            children = tuple(self.resource(c, f"{path}.with[{i}]", w, i) for i, c in enumerate(w))
            fields += 1

        label = ""
        if "label" in node:
            v = node["label"]
            if not is_scalar(v):
                raise FieldError(f"{path}.label", f"must be a string, got {describe(v)}", node, "label")
            label = text(v)
            fields += 1
        elif rtype == "slot":
            raise FieldError(f"{path}.label", "missing (every slot needs a label)", node)

        rid = ""
        if "id" in node:
            v = node["id"]
            if not is_scalar(v):
                raise FieldError(f"{path}.id", f"must be a string, got {describe(v)}", node, "id")
            rid = text(v)
            fields += 1

        if fields != _size(node):
            self._unexpected_key(node, path, self._RESOURCE_KEYS, "resource key")
        return Resource(rtype, count, unit, label, rid, exclusive, children)

    def count(self, c: Any, path: str, parent: dict[str, Any]) -> Count:
        if is_scalar(c):
            n = as_unsigned(c)
            if n is None:
                raise FieldError(
                    path,
                    f"must be an unsigned integer or a mapping with min (max, operator, operand), "
                    f"got {describe(c)}",
                    parent,
                    "count",
                )
            return Count(n, n, "+", 1)
        if not isinstance(c, dict):
            raise FieldError(
                path,
                f"must be an unsigned integer or a mapping with min (max, operator, operand), got {describe(c)}",
                parent,
                "count",
            )
        if "min" not in c:
            raise FieldError(f"{path}.min", "missing (a count mapping needs min)", c)
        vmin = c["min"]
        if not is_scalar(vmin):
            raise FieldError(f"{path}.min", f"must be an integer >= 1, got {describe(vmin)}", c, "min")
        vmax, oper, operand = UNBOUNDED, "+", 1
        has_max = "max" in c
        if has_max or "operator" in c or "operand" in c:
            for key in ("max", "operator", "operand"):
                if key not in c:
                    raise FieldError(
                        f"{path}.{key}",
                        "missing (max, operator and operand go together: give all three or none)",
                        c,
                    )
            for key in ("max", "operator", "operand"):
                if not is_scalar(c[key]):
                    raise FieldError(f"{path}.{key}", f"must be a scalar, got {describe(c[key])}", c, key)
            n = as_unsigned(c["max"])
            if n is None:
                raise FieldError(
                    f"{path}.max", f"must be an unsigned integer, got {describe(c['max'])}", c, "max"
                )
            vmax = n
            ch = as_char(c["operator"])
            if ch is None:
                raise FieldError(
                    f"{path}.operator",
                    f"must be one of '+', '*', '^', got {describe(c['operator'])}",
                    c,
                    "operator",
                )
            oper = ch
            k = as_int(c["operand"])
            if k is None:
                raise FieldError(
                    f"{path}.operand", f"must be an integer, got {describe(c['operand'])}", c, "operand"
                )
            operand = k
        mn = as_unsigned(vmin)
        if mn is None or mn < 1:
            raise FieldError(f"{path}.min", f"must be an integer >= 1, got {describe(vmin)}", c, "min")
        if has_max and vmax < mn:
            raise FieldError(f"{path}.max", f"must be >= min ({mn}), got {vmax}", c, "max")
        if oper == "+":
            if operand < 1:
                raise FieldError(
                    f"{path}.operand", f"must be >= 1 with operator '+', got {operand}", c, "operand"
                )
        elif oper == "*":
            if operand < 2:
                raise FieldError(
                    f"{path}.operand", f"must be >= 2 with operator '*', got {operand}", c, "operand"
                )
        elif oper == "^":
            if operand < 2:
                raise FieldError(
                    f"{path}.operand", f"must be >= 2 with operator '^', got {operand}", c, "operand"
                )
            if mn < 2:
                raise FieldError(f"{path}.min", f"must be >= 2 with operator '^', got {mn}", c, "min")
        else:
            raise FieldError(f"{path}.operator", f"must be one of '+', '*', '^', got {oper!r}", c, "operator")
        return Count(mn, vmax, oper, operand)

    # -- tasks ---------------------------------------------------------------

    _TASK_KEYS = ("command", "slot", "count", "distribution", "attributes")

    def task(self, node: Any, path: str, parent: Any, index: int) -> Task:
        if not isinstance(node, dict):
            raise FieldError(path, f"a task must be a mapping, got {describe(node)}", parent, index)
        if "command" not in node:
            raise FieldError(f"{path}.command", "missing (every task needs a command)", node)
        cmd = node["command"]
        if not isinstance(cmd, list):
            raise FieldError(
                f"{path}.command", f"must be a sequence of strings, got {describe(cmd)}", node, "command"
            )
        argv: list[str] = []
        for i, arg in enumerate(cmd):
            s = as_string(arg)
            if s is None:
                raise FieldError(f"{path}.command[{i}]", f"must be a string, got {describe(arg)}", cmd, i)
            argv.append(s)

        if "slot" not in node:
            raise FieldError(f"{path}.slot", "missing (every task names the slot it runs in)", node)
        slot_v = node["slot"]
        if not is_scalar(slot_v):
            raise FieldError(f"{path}.slot", f"must be a string, got {describe(slot_v)}", node, "slot")
        slot = text(slot_v)

        count: dict[str, int | str] = {}
        if "count" in node:
            cnode = node["count"]
            if not isinstance(cnode, dict):
                raise FieldError(
                    f"{path}.count",
                    f"must be a mapping with one of per_slot or total, got {describe(cnode)}",
                    node,
                    "count",
                )
            if _size(cnode) != 1:
                raise FieldError(
                    f"{path}.count",
                    f"must have exactly one entry (per_slot or total), got {_size(cnode)}",
                    node,
                    "count",
                )
            ((ckey, cval),) = cnode.items()
            s = as_string(cval)
            if s is None:
                raise FieldError(
                    f"{path}.count.{ckey}", f"must be a number, got {describe(cval)}", cnode, ckey
                )
            count[ckey] = int(s) if s.isascii() and s.isdigit() and len(s) < 20 else s

        distribution = ""
        if "distribution" in node:
            v = node["distribution"]
            if not is_scalar(v):
                raise FieldError(
                    f"{path}.distribution", f"must be a string, got {describe(v)}", node, "distribution"
                )
            distribution = text(v)

        attributes: dict[str, str] = {}
        if "attributes" in node:
            anode = node["attributes"]
            if not isinstance(anode, dict):
                raise FieldError(
                    f"{path}.attributes", f"must be a mapping, got {describe(anode)}", node, "attributes"
                )
            for akey, aval in _items(anode):
                s = as_string(aval)
                if s is None:
                    raise FieldError(
                        f"{path}.attributes.{akey}", f"must be a string, got {describe(aval)}", anode, akey
                    )
                attributes[akey] = s

        size = _size(node)
        if size < 3:
            missing = next(k for k in ("count", "distribution", "attributes") if k not in node)
            raise FieldError(
                f"{path}.{missing}",
                "missing (a task needs command, slot and count; Fluxion requires 3 to 5 keys)",
                node,
            )
        if size > 5:
            self._unexpected_key(node, path, self._TASK_KEYS, "task key (at most 5 keys)")
        extra = {k: v for k, v in node.items() if k not in self._TASK_KEYS}
        return Task(tuple(argv), slot, count, attributes, distribution, extra)


def _field_error(exc: FieldError, source: str, builder: _Builder | None) -> JobspecError:
    line = None
    if builder is not None and exc.container is not None:
        entry = builder.lines.get(id(exc.container))
        if entry is not None:
            own, sub = entry
            line = own
            if exc.key is not None:
                if isinstance(sub, dict):
                    line = sub.get(exc.key, own)
                elif isinstance(exc.key, int) and 0 <= exc.key < len(sub):
                    line = sub[exc.key]
    where = f" (line {line})" if line is not None else ""
    err = JobspecError(f"{source}: {exc.path}: {exc.reason}{where}")
    err.context = {"source": source, "field": exc.path, "line": line}
    return err


def parse_jobspec(text: str | bytes | Mapping[str, Any], *, source: str = "<string>") -> Jobspec:
    """Parse jobspec text (YAML, or JSON) into a :class:`Jobspec`; a mapping is read as its JSON text.

    Accepts and rejects what Fluxion's jobspec reader does.  Any rejection
    raises :class:`~fluxlite.errors.JobspecError` with a one-line message
    ``"<source>: <field path>: <reason> (line N)"``; its ``context`` holds
    ``source``, ``field`` and ``line``.
    """
    data, doc = _as_text_or_json(text, source)
    builder: _Builder | None = None
    plain_items: dict[int, tuple[bool, ...]] | None = None
    if data is not None:
        fast = _fast_document(data)
        if fast is not None:
            doc, plain_items = fast
        else:
            doc, builder = _yaml_document(data, source)
            plain_items = builder.plain_items
    try:
        return _Validator(plain_items).jobspec(doc, source)
    except FieldError as exc:
        if data is not None and builder is None:
            # Read through libyaml again, which knows the lines, to report.
            doc, builder = _yaml_document(data, source)
            try:
                _Validator(builder.plain_items).jobspec(doc, source)
            except FieldError as exc2:
                raise _field_error(exc2, source, builder) from None
        raise _field_error(exc, source, builder) from None
    except RecursionError:
        raise JobspecError(f"{source}: (top level): the document is nested too deeply") from None


_LOADED: dict[tuple[str, bytes], Jobspec] = {}
_LOADED_MAX = 256


def _read_bytes(name: str) -> bytes:
    """The whole file, read with plain system calls (until a read returns nothing).

    A jobspec is a few hundred bytes, and ``open(...).read()`` spends more
    on its buffered-file objects (and their fstat, lseek and ioctl calls)
    than on the read itself: this is about twice as fast for a small file.
    """
    fd = os.open(name, os.O_RDONLY | _O_CLOEXEC)
    try:
        data = os.read(fd, _READ_CHUNK)
        if not data:
            return data
        parts = [data]
        while chunk := os.read(fd, _READ_CHUNK):
            parts.append(chunk)
        return parts[0] if len(parts) == 1 else b"".join(parts)
    finally:
        os.close(fd)


_READ_CHUNK = 1 << 16
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def load_jobspec(path: str | PathLike[str]) -> Jobspec:
    """Read and parse a jobspec file (YAML or JSON); the path is the error source.

    The file is read every time; parsing is skipped when its bytes are the
    same as on a recent load (scripts match the same files again and again),
    so the returned (frozen) object may be shared between calls.
    """
    name = fspath(path)
    try:
        data = _read_bytes(name)
    except OSError as exc:
        raise JobspecError(f"{name}: cannot read: {exc.strerror or exc}") from None
    return loaded_jobspec(name, data)


def read_jobspec_file(path: str | PathLike[str]) -> bytes:
    """The bytes of a jobspec file (OSError as the system says), for :func:`loaded_jobspec`."""
    return _read_bytes(fspath(path))


def loaded_jobspec(name: str, data: bytes) -> Jobspec:
    """The jobspec of file ``name`` whose bytes are ``data`` (:func:`load_jobspec` without the read:
    ``fluxlite query`` reads the file before its match timer starts, as Fluxion's resource-query
    does); parsing is skipped when the same file had the same bytes on a recent load."""
    key = (name, data)
    got = _LOADED.get(key)
    if got is not None:
        return got
    js = parse_jobspec(data, source=name)
    if len(_LOADED) >= _LOADED_MAX:
        _LOADED.pop(next(iter(_LOADED)))
    _LOADED[key] = js
    return js


def parse_constraint(value: Any, *, source: str = "<constraint>") -> Constraint:
    """Build a :class:`Constraint` from an RFC 31 mapping (already-decoded JSON/YAML data).

    Strings count as quoted, as in JSON.  Raises
    :class:`~fluxlite.errors.JobspecError` naming the offending field.
    """
    try:
        return parse_constraint_value(value, "constraints")
    except FieldError as exc:
        raise _field_error(exc, source, None) from None
