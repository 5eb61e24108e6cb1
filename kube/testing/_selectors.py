"""Label and field selectors, parsed as the API server parses them.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``
(exists) and ``!k`` (does not exist), comma-separated, all must hold. A ``LabelSelector``
object (``matchLabels`` + ``matchExpressions``, as in a ReplicaSet's ``spec.selector``)
becomes the same requirement list. Field selectors: ``f=v``, ``f==v``, ``f!=v`` on the
field labels a resource declares; an unknown label is a 400, as on a real server.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = [
    "SelectorError",
    "field_selector",
    "format_label_selector",
    "label_selector",
    "label_selector_from_object",
]

Requirement = tuple[str, str, tuple[str, ...]]
Predicate = Callable[[dict], bool]


class SelectorError(ValueError):
    """A selector that does not parse, or names a field the resource cannot select on."""


_KEY = r"(?P<key>[A-Za-z0-9](?:[A-Za-z0-9_./-]*[A-Za-z0-9])?)"
_VALUE = r"(?P<value>(?:[A-Za-z0-9](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?)?)"
_SET_RE = re.compile(rf"^\s*{_KEY}\s+(?P<op>in|notin)\s*\((?P<values>[^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*{_KEY}\s*(?P<op>==|=|!=)\s*{_VALUE}\s*$")
_EXISTS_RE = re.compile(rf"^\s*(?P<not>!?)\s*{_KEY}\s*$")


def _split_terms(text: str) -> list[str]:
    terms, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return [t for t in terms if t.strip()]


def parse_label_selector(text: str) -> list[Requirement]:
    """The requirements of a label selector string (empty selects everything)."""
    requirements: list[Requirement] = []
    for term in _split_terms(text or ""):
        if m := _SET_RE.match(term):
            values = tuple(v.strip() for v in m["values"].split(",") if v.strip())
            requirements.append((m["key"], m["op"], values))
        elif m := _EQ_RE.match(term):
            requirements.append((m["key"], "!=" if m["op"] == "!=" else "=", (m["value"],)))
        elif m := _EXISTS_RE.match(term):
            requirements.append((m["key"], "!" if m["not"] else "exists", ()))
        else:
            raise SelectorError(f"unable to parse requirement: {term.strip()!r}")
    return requirements


def _matches(requirements: list[Requirement], labels: dict[str, str]) -> bool:
    for key, op, values in requirements:
        present = key in labels
        if op == "=":
            if not present or labels[key] != values[0]:
                return False
        elif op == "!=":
            if present and labels[key] == values[0]:
                return False
        elif op == "in":
            if not present or labels[key] not in values:
                return False
        elif op == "notin":
            if present and labels[key] in values:
                return False
        elif op == "exists":
            if not present:
                return False
        elif present:  # "!"
            return False
    return True


def label_selector(text: str | None) -> Predicate:
    """A predicate on objects for a label selector string."""
    requirements = parse_label_selector(text or "")
    if not requirements:
        return lambda obj: True
    return lambda obj: _matches(requirements, (obj.get("metadata") or {}).get("labels") or {})


def label_selector_from_object(selector: dict | None) -> Predicate:
    """A predicate for a ``LabelSelector`` object; ``None`` or ``{}`` selects everything."""
    requirements = _requirements_from_object(selector)
    return lambda obj: _matches(requirements, (obj.get("metadata") or {}).get("labels") or {})


_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def _requirements_from_object(selector: dict | None) -> list[Requirement]:
    selector = selector or {}
    requirements: list[Requirement] = [
        (k, "=", (str(v),)) for k, v in (selector.get("matchLabels") or {}).items()
    ]
    for expr in selector.get("matchExpressions") or []:
        op = _OPERATORS.get(expr.get("operator", ""))
        if op is None:
            raise SelectorError(f"{expr.get('operator')!r} is not a valid label selector operator")
        requirements.append((expr["key"], op, tuple(expr.get("values") or ())))
    return requirements


def format_label_selector(selector: dict | None) -> str:
    """The string form of a ``LabelSelector`` object (as in a Scale's ``status.selector``)."""
    parts = []
    for key, op, values in _requirements_from_object(selector):
        if op in ("=", "!="):
            parts.append(f"{key}{op}{values[0]}")
        elif op in ("in", "notin"):
            parts.append(f"{key} {op} ({','.join(values)})")
        else:
            parts.append(key if op == "exists" else f"!{key}")
    return ",".join(parts)


def _field_value(obj: dict, path: str) -> str:
    node: Any = obj
    for part in path.split("."):
        if not isinstance(node, dict):
            return ""
        node = node.get(part)
    if node is None:
        return ""
    if isinstance(node, bool):
        return "true" if node else "false"
    return str(node)


def field_selector(text: str | None, supported: frozenset[str]) -> Predicate:
    """A predicate for a field selector string over the *supported* field labels."""
    terms = []
    for term in _split_terms(text or ""):
        for op in ("!=", "==", "="):
            if op in term:
                field, value = term.split(op, 1)
                field = field.strip()
                if field not in supported:
                    raise SelectorError(f"field label not supported: {field}")
                terms.append((field, op != "!=", value.strip()))
                break
        else:
            raise SelectorError(f"invalid selector: {text!r}; can't understand {term!r}")
    if not terms:
        return lambda obj: True
    return lambda obj: all((_field_value(obj, f) == v) == eq for f, eq, v in terms)
