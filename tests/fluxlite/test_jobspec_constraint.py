"""RFC 31 constraints in fluxlite.jobspec: parsing rules and matching tables."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fluxlite.errors import JobspecError
from fluxlite.jobspec import (
    ConditionalConstraint,
    Constraint,
    HostlistConstraint,
    PropertyConstraint,
    RankConstraint,
    decode_hostlist,
    decode_idset,
    parse_constraint,
    parse_jobspec,
)

# The vertex every match case is evaluated against.
PROPS = {"xx": "t", "yy": "t"}
HOST = "foo0"
RANK = 0

MATCH_CASES: list[tuple[str, Any, bool]] = [
    ("empty constraint", {}, True),
    ("empty property list", {"properties": []}, True),
    ("property present", {"properties": ["xx"]}, True),
    ("negated present property", {"properties": ["^xx"]}, False),
    ("negated absent property", {"properties": ["^zz"]}, True),
    ("all listed properties present", {"properties": ["xx", "yy"]}, True),
    ("one listed property absent", {"properties": ["xx", "zz"]}, False),
    ("absent property", {"properties": ["zz"]}, False),
    ("and of two true", {"and": [{"properties": ["xx"]}, {"properties": ["yy"]}]}, True),
    ("and with a false", {"and": [{"properties": ["xx"]}, {"properties": ["zz"]}]}, False),
    ("or of two true", {"or": [{"properties": ["xx"]}, {"properties": ["yy"]}]}, True),
    ("or with one true", {"or": [{"properties": ["zz"]}, {"properties": ["yy"]}]}, True),
    ("or of two false", {"or": [{"properties": ["zz"]}, {"properties": ["aa"]}]}, False),
    ("not of a true or", {"not": [{"or": [{"properties": ["zz"]}, {"properties": ["yy"]}]}]}, False),
    ("not of a false", {"not": [{"properties": ["zz"]}]}, True),
    ("empty and", {"and": []}, True),
    ("empty or", {"or": []}, False),
    ("empty not", {"not": []}, False),
    ("hostlist containing the host", {"hostlist": ["foo[0-2]"]}, True),
    ("hostlist without the host", {"hostlist": ["foo[1-3]"]}, False),
    ("second hostlist contains the host", {"hostlist": ["bar", "foo0"]}, True),
    ("ranks containing the rank", {"ranks": ["0-2"]}, True),
    ("ranks without the rank", {"ranks": ["1-3"]}, False),
    ("integer rank", {"ranks": [0]}, True),
    ("negated empty name", {"properties": ["^"]}, True),
]


@pytest.mark.parametrize(("desc", "doc", "expected"), MATCH_CASES, ids=[c[0] for c in MATCH_CASES])
def test_match_table(desc: str, doc: Any, expected: bool) -> None:
    """Each constraint matches the vertex foo0 (rank 0, properties xx and yy) as Fluxion does."""
    assert parse_constraint(doc).match(PROPS, HOST, RANK) is expected


VALIDATE_CASES: list[tuple[str, Any, str]] = [
    ("non-mapping", [], "constraints: a constraint must be a mapping"),
    ("null", None, "constraints: a constraint must be a mapping"),
    ("unknown operator", {"foo": []}, "constraints.foo: unknown constraint operator"),
    (
        "two operators",
        {"properties": ["xx"], "hostlist": ["foo"]},
        "constraints: a constraint may hold only one",
    ),
    ("and not a list", {"and": "foo"}, "constraints.and: the value of 'and' must be a sequence"),
    ("or not a list", {"or": "foo"}, "constraints.or: the value of 'or' must be a sequence"),
    ("properties not a list", {"properties": "foo"}, "constraints.properties: the value of 'properties'"),
    ("unknown operator, scalar value", {"foo": 1}, "constraints.foo: the value of 'foo' must be a sequence"),
    (
        "non-string property",
        {"properties": ["foo", 42]},
        "constraints.properties[1]: a property must be a quoted",
    ),
    (
        "bad property character",
        {"properties": ["foo", "bar&"]},
        "constraints.properties[1]: invalid property",
    ),
    ("caret inside a property", {"properties": ["f^oo"]}, "constraints.properties[0]: invalid property"),
    ("two carets", {"properties": ["^^foo"]}, "constraints.properties[0]: invalid property"),
    ("invalid hostlist", {"hostlist": ["foo0-10]"]}, "constraints.hostlist[0]: invalid hostlist 'foo0-10]'"),
    ("unbalanced bracket", {"hostlist": ["foo[1-2"]}, "constraints.hostlist[0]: invalid hostlist"),
    ("hostlist item not a string", {"hostlist": [["a"]]}, "constraints.hostlist[0]: must be a string"),
    ("unordered idset", {"ranks": ["5,1-3"]}, "constraints.ranks[0]: invalid idset '5,1-3'"),
    (
        "nested error path",
        {"and": [{"or": [{"ranks": ["x"]}]}]},
        "constraints.and[0].or[0].ranks[0]: invalid idset",
    ),
]


@pytest.mark.parametrize(("desc", "doc", "fragment"), VALIDATE_CASES, ids=[c[0] for c in VALIDATE_CASES])
def test_validation_table(desc: str, doc: Any, fragment: str) -> None:
    """Invalid constraints are rejected with a one-line message naming the offending operand."""
    with pytest.raises(JobspecError) as info:
        parse_constraint(doc, source="c.json")
    message = str(info.value)
    assert message.startswith("c.json: ") and fragment in message and "\n" not in message


@pytest.mark.parametrize(
    "doc",
    [
        {},
        {"and": []},
        {"or": []},
        {"properties": []},
        {"hostlist": ["foo[0-10]"]},
        {"ranks": ["0-10"]},
        {
            "and": [
                {"or": [{"properties": ["foo"]}, {"properties": ["bar"]}]},
                {"and": [{"properties": ["xx"]}]},
            ]
        },
    ],
)
def test_valid_constraints_round_trip(doc: Any) -> None:
    """Valid constraints parse and give back their own mapping."""
    c = parse_constraint(doc)
    assert c.to_dict() == doc
    assert parse_constraint(c.to_dict()) == c


def test_constraint_types() -> None:
    """Each operator builds its own constraint class."""
    assert type(parse_constraint({})) is Constraint
    assert isinstance(parse_constraint({"properties": ["a"]}), PropertyConstraint)
    assert isinstance(parse_constraint({"hostlist": ["a"]}), HostlistConstraint)
    assert isinstance(parse_constraint({"ranks": ["1"]}), RankConstraint)
    assert isinstance(parse_constraint({"not": []}), ConditionalConstraint)


JOBSPEC = """version: 1
resources: [{type: slot, count: 1, label: s, with: [{type: node, count: 1}]}]
tasks: [{command: [a], slot: s, count: {per_slot: 1}}]
attributes:
  system:
    constraints:
      properties: PROPS
"""


@pytest.mark.parametrize(
    ("props", "ok"),
    [
        ('["foo", "^bar"]', True),
        ("['foo']", True),
        ("[foo]", False),
        ('["foo", bar]', False),
        ("[1]", False),
        ("[true]", False),
        ('["foo$", "+bar"]', True),
        ("[]", True),
    ],
)
def test_yaml_properties_must_be_quoted(props: str, ok: bool) -> None:
    """Like Fluxion (yaml-cpp tag '!'), YAML properties must be quoted scalars."""
    text = JOBSPEC.replace("PROPS", props)
    if ok:
        assert isinstance(parse_jobspec(text).constraint, PropertyConstraint)
    else:
        with pytest.raises(JobspecError, match=r"properties\[\d\]: a property must be a quoted string"):
            parse_jobspec(text, source="c.yaml")


def test_block_style_properties() -> None:
    """Quoting is also checked for block-sequence properties."""
    good = JOBSPEC.replace(" PROPS", "\n        - \"foo\"\n        - 'bar'")
    assert parse_jobspec(good).constraint == PropertyConstraint(("foo", "bar"))
    bad = JOBSPEC.replace(" PROPS", '\n        - "foo"\n        - bar')
    with pytest.raises(JobspecError, match=r"properties\[1\].*\(line 9\)"):
        parse_jobspec(bad)


def test_json_properties_are_quoted_strings() -> None:
    """JSON strings count as quoted; JSON numbers do not."""
    doc = {
        "version": 1,
        "resources": [{"type": "node", "count": 1}],
        "tasks": [],
        "attributes": {"system": {"constraints": {"properties": ["foo"]}}},
    }
    assert parse_jobspec(orjson.dumps(doc)).constraint == PropertyConstraint(("foo",))
    doc["attributes"]["system"]["constraints"]["properties"] = [7]
    with pytest.raises(JobspecError, match=r"properties\[0\]"):
        parse_jobspec(orjson.dumps(doc))


def test_no_constraints_key_gives_none() -> None:
    """A jobspec without constraints has constraint None; an empty mapping matches all."""
    text = JOBSPEC.replace("    constraints:\n      properties: PROPS\n", "    duration: 1\n")
    assert parse_jobspec(text).constraint is None
    text = JOBSPEC.replace("\n      properties: PROPS", " {}")
    c = parse_jobspec(text).constraint
    assert type(c) is Constraint and c.match({}, "any", 99)


@pytest.mark.parametrize(
    ("idset", "members"),
    [
        ("0-3", [0, 1, 2, 3]),
        ("[1,3-4]", [1, 3, 4]),
        ("", []),
        ("7", [7]),
        ("1,,2", [1, 2]),
    ],
)
def test_idset_decode(idset: str, members: list[int]) -> None:
    """RFC 22 idsets decode to the listed members."""
    ranges = decode_idset(idset)
    assert ranges is not None
    assert [i for lo, hi in ranges for i in range(lo, hi + 1)] == members


@pytest.mark.parametrize(
    "idset", ["5,1-3", "3-3", "4-2", "01", "-1", "a", "[1", "1]", "[[1]]", "1-", " 1", "4294967295"]
)
def test_idset_decode_rejects(idset: str) -> None:
    """Unordered, reversed, zero-padded or malformed idsets are invalid."""
    assert decode_idset(idset) is None


@pytest.mark.parametrize(
    ("hostlist", "inside", "outside"),
    [
        ("foo[0-2]", ["foo0", "foo1", "foo2"], ["foo3", "foo", "foo00", "bar0"]),
        ("foo[01-03]", ["foo01", "foo03"], ["foo1", "foo04", "foo001"]),
        ("foo[1,3-4],bar", ["foo1", "foo3", "foo4", "bar"], ["foo2", "bar1", "ba"]),
        ("node7 login", ["node7", "login"], ["node07", "node", "login1"]),
        ("x[1-2]y", ["x1y", "x2y"], ["x3y", "x1", "x1yy"]),
        ("", [], ["foo"]),
    ],
)
def test_hostlist_membership(hostlist: str, inside: list[str], outside: list[str]) -> None:
    """Host names belong to a hostlist exactly when its expansion lists them."""
    c = HostlistConstraint((hostlist,))
    assert all(c.match({}, h, 0) for h in inside)
    assert not any(c.match({}, h, 0) for h in outside)


@pytest.mark.parametrize(
    "hostlist", ["foo0-10]", "foo[1-2", "foo[2-1]", "foo[1--2]", "foo[a]", "foo[1,]", "foo[]"]
)
def test_hostlist_decode_rejects(hostlist: str) -> None:
    """Malformed hostlists are invalid."""
    assert decode_hostlist(hostlist) is None


def test_rank_constraint_membership() -> None:
    """Ranks from several idsets are all members; others are not."""
    c = RankConstraint(("0-2,5", "[7-9]", "3"))
    assert [r for r in range(12) if c.match({}, "", r)] == [0, 1, 2, 3, 5, 7, 8, 9]
    assert not c.match({}, "", -1)
