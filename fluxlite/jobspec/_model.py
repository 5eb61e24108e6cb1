"""The in-memory jobspec: what the matcher reads after a jobspec is parsed.

The classes mirror what Fluxion's ``Flux::Jobspec`` holds (resource tree with
counts, exclusivity, units, labels and ids; tasks; system attributes), as
immutable dataclasses.  :class:`Resource` compares and hashes by identity so
two identical requests at different places of a tree stay distinct (the
matcher keys per-request state on them); :class:`Jobspec` compares by its
canonical form (:meth:`Jobspec.to_dict`), so a jobspec equals its round trip.
"""

from __future__ import annotations

import copy
import enum
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson
import yaml

from fluxlite.jobspec._constraint import Constraint
from fluxlite.jobspec._scalars import UINT_MAX

__all__ = ["OPERATORS", "UNBOUNDED", "Count", "Jobspec", "Resource", "Task", "Tristate"]

#: The ``max`` of a count that gives only ``min``: Fluxion's
#: ``std::numeric_limits<unsigned>::max()`` (4294967295), i.e. "as many as possible".
UNBOUNDED = UINT_MAX

#: The count operators Fluxion knows: add, multiply, exponentiate.
OPERATORS = ("+", "*", "^")


@dataclass(frozen=True, slots=True)
class Count:
    """A resource count: ``min`` up to ``max``, stepping with ``oper``/``operand``.

    A plain integer count ``N`` is ``Count(N, N, '+', 1)``; a mapping with only
    ``min`` is ``Count(min, UNBOUNDED, '+', 1)`` (Fluxion's defaults).
    """

    min: int
    max: int
    oper: str = "+"
    operand: int = 1

    @property
    def is_fixed(self) -> bool:
        """True when the count is a single value written as a plain integer."""
        return self.min == self.max and self.oper == "+" and self.operand == 1

    def to_dict(self) -> int | dict[str, Any]:
        """The canonical form: an integer when fixed, else the shortest mapping."""
        if self.is_fixed:
            return self.min
        if self.max == UNBOUNDED and self.oper == "+" and self.operand == 1:
            return {"min": self.min}
        return {"min": self.min, "max": self.max, "operator": self.oper, "operand": self.operand}


class Tristate(enum.Enum):
    """A resource's ``exclusive`` flag: unset, true or false."""

    UNSPECIFIED = "unspecified"
    TRUE = "true"
    FALSE = "false"


@dataclass(frozen=True, slots=True, eq=False)
class Resource:
    """One resource request vertex (``type``, ``count`` and its ``with`` children).

    Equality and hash are by identity; compare :meth:`to_dict` for structure.
    """

    type: str
    count: Count
    unit: str = ""
    label: str = ""
    id: str = ""
    exclusive: Tristate = Tristate.UNSPECIFIED
    with_: tuple[Resource, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The canonical mapping form of this request and its children."""
        out: dict[str, Any] = {"type": self.type, "count": self.count.to_dict()}
        if self.unit:
            out["unit"] = self.unit
        if self.label or self.type == "slot":
            out["label"] = self.label
        if self.id:
            out["id"] = self.id
        if self.exclusive is Tristate.TRUE:
            out["exclusive"] = True
        elif self.exclusive is Tristate.FALSE:
            out["exclusive"] = False
        if self.with_:
            out["with"] = [child.to_dict() for child in self.with_]
        return out

    def walk(self, depth: int = 0) -> Iterator[tuple[int, Resource]]:
        """Yield ``(depth, resource)`` for this request and its descendants, pre-order."""
        yield depth, self
        for child in self.with_:
            yield from child.walk(depth + 1)


@dataclass(frozen=True, slots=True, eq=False)
class Task:
    """One task entry: command, slot label and count (``{"per_slot": n}`` or ``{"total": n}``).

    ``count`` maps its single key to an ``int`` when the value is a decimal
    integer, else to the text Fluxion keeps.  ``attributes`` maps to strings.
    ``extra`` keeps keys Fluxion tolerates without reading (see the parser).
    """

    command: tuple[str, ...]
    slot: str
    count: dict[str, int | str] = field(default_factory=dict)
    attributes: dict[str, str] = field(default_factory=dict)
    distribution: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The canonical mapping form of this task."""
        out: dict[str, Any] = {"command": list(self.command), "slot": self.slot}
        if self.count:
            out["count"] = dict(self.count)
        if self.distribution:
            out["distribution"] = self.distribution
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        for key, value in self.extra.items():
            out[key] = copy.deepcopy(value)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Task):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True, slots=True, eq=False)
class Jobspec:
    """A parsed jobspec.

    ``attributes`` is the document's ``attributes`` mapping as written (empty
    when it was null); ``duration`` (seconds, 0.0 meaning "not set"), ``queue``
    and ``constraint`` are what Fluxion extracts from ``attributes.system``.
    ``constraint`` is None when no ``constraints`` key was given; an empty
    mapping gives a :class:`Constraint` that matches everything.  ``source``
    names where the text came from and takes no part in equality.
    """

    version: int
    resources: tuple[Resource, ...]
    tasks: tuple[Task, ...]
    attributes: dict[str, Any] = field(default_factory=dict)
    duration: float = 0.0
    queue: str = ""
    constraint: Constraint | None = None
    source: str = "<string>"

    def to_dict(self) -> dict[str, Any]:
        """The canonical form (RFC 14 keys), suitable for JSON or YAML dumping."""
        return {
            "version": self.version,
            "resources": [r.to_dict() for r in self.resources],
            "tasks": [t.to_dict() for t in self.tasks],
            "attributes": copy.deepcopy(self.attributes),
        }

    def to_json(self) -> str:
        """The canonical form as JSON text (which is also YAML); parses back to an equal jobspec."""
        return orjson.dumps(self.to_dict()).decode()

    def to_yaml(self) -> str:
        """The canonical form as block YAML; parses back to an equal jobspec.

        Strings in sequences and strings that would read back as something
        else are double-quoted (Fluxion accepts only quoted constraint
        properties); floats keep their exact ``repr``.
        """
        return yaml.dump(
            _quote_items(self.to_dict()), Dumper=_QuotingDumper, sort_keys=False, allow_unicode=True
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Jobspec):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def walk(self) -> Iterator[tuple[int, Resource]]:
        """Yield ``(depth, resource)`` for every request in the tree, pre-order."""
        for resource in self.resources:
            yield from resource.walk()

    @property
    def slots(self) -> tuple[Resource, ...]:
        """Every ``slot`` request, in document order."""
        return tuple(r for _, r in self.walk() if r.type == "slot")

    def slot_problems(self) -> list[str]:
        """What RFC 14/25 would object to about slots; Fluxion's parser checks none of it.

        Reports a root-to-leaf path without a slot or with nested slots, and a
        task naming a label no slot carries.  Fluxion itself accepts such
        jobspecs (a request without a slot simply fails to match).
        """
        problems: list[str] = []

        def visit(res: Resource, path: str, seen_slot: bool) -> None:
            is_slot = res.type == "slot"
            if is_slot and seen_slot:
                problems.append(f"{path}: slot nested inside another slot")
            here = seen_slot or is_slot
            if not res.with_:
                if not here:
                    problems.append(f"{path}: no slot on the path to this leaf")
                return
            for i, child in enumerate(res.with_):
                visit(child, f"{path}.with[{i}]", here)

        for i, res in enumerate(self.resources):
            visit(res, f"resources[{i}]", False)
        labels = {r.label for r in self.slots}
        for i, task in enumerate(self.tasks):
            if task.slot not in labels:
                problems.append(f"tasks[{i}].slot: no slot is labelled {task.slot!r}")
        return problems


class _QuotingDumper(yaml.SafeDumper):
    """A YAML dumper whose output this package reads back unchanged."""


class _Quoted(str):
    """A string that must be written quoted (sequence items: properties need it)."""

    __slots__ = ()


_SAFE_PLAIN = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_NOT_PLAIN = frozenset(("true", "false", "null", "Null", "NULL"))


def _quote_items(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _quote_items(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_Quoted(v) if isinstance(v, str) else _quote_items(v) for v in value]
    return value


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    plain = value.__class__ is str and _SAFE_PLAIN.fullmatch(value) is not None and value not in _NOT_PLAIN
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(value), style=None if plain else '"')


def _represent_float(dumper: yaml.SafeDumper, value: float) -> yaml.Node:
    if math.isfinite(value):
        text = repr(value)
    elif math.isnan(value):
        text = ".nan"
    else:
        text = ".inf" if value > 0 else "-.inf"
    return dumper.represent_scalar("tag:yaml.org,2002:float", text)


_QuotingDumper.add_representer(str, _represent_str)
_QuotingDumper.add_representer(_Quoted, _represent_str)
_QuotingDumper.add_representer(float, _represent_float)
