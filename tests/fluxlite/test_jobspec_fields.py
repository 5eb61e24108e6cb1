"""Field-by-field acceptance rules of fluxlite.jobspec (Fluxion's libjobspec semantics)."""

from __future__ import annotations

import math
import string

import orjson
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from fluxlite.errors import JobspecError
from fluxlite.jobspec import UNBOUNDED, Count, Tristate, parse_jobspec
from fluxlite.jobspec._parse import _fast_document, _yaml_document
from fluxlite.jobspec._scalars import as_char, as_double, as_int, as_unsigned

TEMPLATE = """version: {version}
resources:
  - type: slot
    count: {count}
    label: s
    with:
      - type: core
        count: 1{extra}
tasks:
  - command: [ "app" ]
    slot: s
    count:
      per_slot: 1
attributes:
  system:
    duration: {duration}
"""


def jobspec(version: str = "1", count: str = "1", duration: str = "0", extra: str = ""):
    """Parse the template with some fields replaced."""
    return parse_jobspec(TEMPLATE.format(version=version, count=count, duration=duration, extra=extra))


def rejected(field: str, **kw: str) -> str:
    """Assert the template with these fields is rejected naming ``field``; return the message."""
    with pytest.raises(JobspecError) as info:
        jobspec(**kw)
    message = str(info.value)
    assert field in message and "\n" not in message
    return message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4", Count(4, 4, "+", 1)),
        ('"4"', Count(4, 4, "+", 1)),
        ("+4", Count(4, 4, "+", 1)),
        ("0x10", Count(16, 16, "+", 1)),
        ("010", Count(8, 8, "+", 1)),
        ("0", Count(0, 0, "+", 1)),
        ("4294967295", Count(UNBOUNDED, UNBOUNDED, "+", 1)),
        ("{min: 2}", Count(2, UNBOUNDED, "+", 1)),
        ("{min: 2, foo: bar}", Count(2, UNBOUNDED, "+", 1)),
        ("{min: 2, max: 8, operator: '+', operand: 3}", Count(2, 8, "+", 3)),
        ("{min: 2, max: 8, operator: '*', operand: 2}", Count(2, 8, "*", 2)),
        ("{min: 2, max: 64, operator: '^', operand: 2}", Count(2, 64, "^", 2)),
        ("{min: 2, max: 2, operator: +, operand: 1}", Count(2, 2, "+", 1)),
    ],
)
def test_accepted_counts(text: str, expected: Count) -> None:
    """Counts Fluxion accepts, with the values it holds (yaml-cpp integer parsing)."""
    assert jobspec(count=text).resources[0].count == expected


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("-1", "count"),
        ("1.0", "count"),
        ("08", "count"),
        ("4294967296", "count"),
        ("true", "count"),
        ("null", "count"),
        ("[1]", "count"),
        ("{max: 2}", "count.min"),
        ("{min: 0}", "count.min"),
        ("{min: -1}", "count.min"),
        ("{min: [1]}", "count.min"),
        ("{min: 1, max: 2}", "count.operator"),
        ("{min: 1, operator: '+'}", "count.max"),
        ("{min: 1, max: 2, operator: '+'}", "count.operand"),
        ("{min: 3, max: 2, operator: '+', operand: 1}", "count.max"),
        ("{min: 1, max: 2, operator: '/', operand: 1}", "count.operator"),
        ("{min: 1, max: 2, operator: '++', operand: 1}", "count.operator"),
        ("{min: 1, max: 2, operator: '+', operand: 0}", "count.operand"),
        ("{min: 1, max: 2, operator: '*', operand: 1}", "count.operand"),
        ("{min: 2, max: 4, operator: '^', operand: 1}", "count.operand"),
        ("{min: 1, max: 4, operator: '^', operand: 2}", "count.min"),
        ("{min: 1, max: 2, operator: '+', operand: 1.5}", "count.operand"),
    ],
)
def test_rejected_counts(text: str, field: str) -> None:
    """Counts Fluxion rejects name the count field at fault."""
    rejected(f"resources[0].{field}", count=text)


@pytest.mark.parametrize(("text", "value"), [("1", 1), ("'7'", 7), ("9999", 9999), ("0x10", 16)])
def test_accepted_versions(text: str, value: int) -> None:
    """Versions 1 to 9999 in any spelling yaml-cpp reads as an unsigned int."""
    assert jobspec(version=text).version == value


@pytest.mark.parametrize("text", ["0", "10000", "48958", "-1", "1.0", "one", "null", "[1]", "{a: 1}"])
def test_rejected_versions(text: str) -> None:
    """Out-of-range or non-integer versions are rejected naming 'version'."""
    rejected("version", version=text)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3600", 3600.0),
        ("3600.0", 3600.0),
        ("1e3", 1000.0),
        ('"60"', 60.0),
        (".5", 0.5),
        ("1.", 1.0),
        ("-5", -5.0),
        (".inf", math.inf),
        ("0", 0.0),
    ],
)
def test_accepted_durations(text: str, value: float) -> None:
    """Durations are doubles as yaml-cpp reads them; 0 means unset, Fluxion does not check the sign."""
    assert jobspec(duration=text).duration == value


@pytest.mark.parametrize("text", ["1h", "null", "0x10", "1_000", "1e999", "true", "[1]"])
def test_rejected_durations(text: str) -> None:
    """Durations that are not numbers are rejected naming the field."""
    rejected("attributes.system.duration", duration=text)


def test_duration_defaults_to_zero() -> None:
    """No duration (or no attributes) gives 0.0, Fluxion's 'unspecified'."""
    text = TEMPLATE.format(version=1, count=1, duration=0, extra="").split("attributes:")[0] + "attributes:\n"
    js = parse_jobspec(text)
    assert js.duration == 0.0 and js.attributes == {} and js.queue == ""


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("true", Tristate.TRUE),
        ("false", Tristate.FALSE),
        ("'true'", Tristate.TRUE),
        ('"false"', Tristate.FALSE),
    ],
)
def test_exclusive_values(text: str, state: Tristate) -> None:
    """exclusive is exactly the text true or false."""
    assert jobspec(extra=f"\n        exclusive: {text}").resources[0].with_[0].exclusive is state


@pytest.mark.parametrize("text", ["True", "yes", "1", "blah", "null", "[true]"])
def test_exclusive_rejected(text: str) -> None:
    """Other spellings of booleans are rejected, as yaml-cpp compares the text."""
    rejected("resources[0].with[0].exclusive", extra=f"\n        exclusive: {text}")


def test_exclusive_unspecified_by_default() -> None:
    """Without the key, exclusive is UNSPECIFIED (the matcher applies slot defaults)."""
    assert jobspec().resources[0].exclusive is Tristate.UNSPECIFIED


def test_unit_label_id() -> None:
    """unit, label and id are read as strings, numbers included."""
    js = jobspec(extra="\n        unit: GB\n        id: 7\n        label: 12")
    core = js.resources[0].with_[0]
    assert (core.unit, core.id, core.label) == ("GB", "7", "12")


@pytest.mark.parametrize("key", ["unit", "label", "id", "type"])
def test_non_scalar_string_fields(key: str) -> None:
    """A string field given a sequence or null is rejected naming it."""
    rejected(f"resources[0].with[0].{key}", extra=f"\n        {key}: [a]")
    rejected(f"resources[0].with[0].{key}", extra=f"\n        {key}:")


def test_unknown_resource_key() -> None:
    """An unknown key in a resource is rejected naming it."""
    rejected("resources[0].with[0].color", extra="\n        color: red")


def test_with_must_be_a_sequence() -> None:
    """with: null or a mapping is rejected; an empty list is fine."""
    rejected("resources[0].with[0].with", extra="\n        with:")
    rejected("resources[0].with[0].with", extra="\n        with: {type: x}")
    assert jobspec(extra="\n        with: []").resources[0].with_[0].with_ == ()


def test_slot_label_empty_string_is_accepted() -> None:
    """A slot needs a label key; Fluxion accepts an empty one."""
    js = parse_jobspec(
        TEMPLATE.format(version=1, count=1, duration=0, extra="").replace("label: s", "label: ''")
    )
    assert js.resources[0].label == ""


BASE = "version: 1\nresources: []\nattributes:\ntasks:\n"


def task_of(body: str):
    """Parse a jobspec whose single task is ``body`` (indented mapping lines)."""
    return parse_jobspec(BASE + body)


def test_task_fields() -> None:
    """command items become strings; count keeps its one key; distribution and attributes are read."""
    js = task_of(
        "  - command: [app, 1, true, null]\n    slot: s\n    count: {total: 10}\n"
        "    distribution: block\n    attributes: {a: 1, b: x}\n"
    )
    (task,) = js.tasks
    assert task.command == ("app", "1", "true", "null")
    assert task.count == {"total": 10}
    assert task.distribution == "block"
    assert task.attributes == {"a": "1", "b": "x"}


def test_task_with_three_keys_needs_no_count() -> None:
    """Fluxion only counts keys: command, slot and any third key make a valid task."""
    assert task_of("  - command: [a]\n    slot: s\n    distribution: x\n").tasks[0].count == {}
    task = task_of("  - command: [a]\n    slot: s\n    custom: 1\n").tasks[0]
    assert task.extra == {"custom": 1}
    assert parse_jobspec(BASE.replace("tasks:\n", "") + "tasks: " + orjson.dumps([task.to_dict()]).decode())


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("  - slot: s\n    count: {total: 1}\n    x: 1\n", "tasks[0].command"),
        ("  - command: a\n    slot: s\n    count: {total: 1}\n", "tasks[0].command"),
        ("  - command: [[a]]\n    slot: s\n    count: {total: 1}\n", "tasks[0].command[0]"),
        ("  - command: [a]\n    count: {total: 1}\n    x: 1\n", "tasks[0].slot"),
        ("  - command: [a]\n    slot: [s]\n    count: {total: 1}\n", "tasks[0].slot"),
        ("  - command: [a]\n    slot: s\n", "tasks[0].count"),
        ("  - command: [a]\n    slot: s\n    count: 1\n", "tasks[0].count"),
        ("  - command: [a]\n    slot: s\n    count: {}\n", "tasks[0].count"),
        ("  - command: [a]\n    slot: s\n    count: {per_slot: 1, total: 2}\n", "tasks[0].count"),
        ("  - command: [a]\n    slot: s\n    count: {per_slot: [1]}\n", "tasks[0].count.per_slot"),
        ("  - command: [a]\n    slot: s\n    attributes: {a: [1]}\n", "tasks[0].attributes.a"),
        ("  - command: [a]\n    slot: s\n    attributes: 1\n", "tasks[0].attributes"),
        ("  - command: [a]\n    slot: s\n    distribution: [x]\n", "tasks[0].distribution"),
        (
            "  - command: [a]\n    slot: s\n    count: {total: 1}\n    distribution: x\n"
            "    attributes: {}\n    extra: 1\n",
            "tasks[0].extra",
        ),
        ("  - foo\n", "tasks[0]"),
    ],
)
def test_rejected_tasks(body: str, field: str) -> None:
    """Malformed tasks are rejected naming the field."""
    with pytest.raises(JobspecError) as info:
        task_of(body)
    assert field in str(info.value)


ATTR_BASE = "version: 1\nresources: []\ntasks: []\nattributes:\n"


@pytest.mark.parametrize(
    "body",
    [
        "  system: 5\n",
        "  system: []\n",
        "  system:\n",
        "  user: [1, {a: b}]\n",
        "  system: {queue: batch, cwd: /tmp, environment: {A: '1', B: null}, shell: {options: {x: 1}}}\n",
        "  system: {environment: 5}\n",
    ],
)
def test_accepted_attributes(body: str) -> None:
    """Fluxion tolerates these attribute shapes (it iterates nothing out of scalars)."""
    parse_jobspec(ATTR_BASE + body)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("  foo: 1\n", "attributes.foo"),
        ("  system: [1]\n", "attributes.system"),
        ("  system: {queue: [a]}\n", "attributes.system.queue"),
        ("  system: {cwd: {a: b}}\n", "attributes.system.cwd"),
        ("  system: {environment: {A: [1]}}\n", "attributes.system.environment.A"),
        ("  system: {environment: [1]}\n", "attributes.system.environment"),
        ("  system: {constraints: }\n", "attributes.system.constraints"),
    ],
)
def test_rejected_attributes(body: str, field: str) -> None:
    """Malformed attributes are rejected naming the field."""
    with pytest.raises(JobspecError) as info:
        parse_jobspec(ATTR_BASE + body)
    assert field in str(info.value)


def test_queue_is_read() -> None:
    """attributes.system.queue lands in Jobspec.queue."""
    assert parse_jobspec(ATTR_BASE + "  system: {queue: debug}\n").queue == "debug"


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("version: 1\nversion: 1\nresources: []\ntasks: []\nattributes:\n", "version"),
        ("version: 1\nresources: []\ntasks: []\nattributes:\nextra: 1\n", "extra"),
        (
            "version: 1\nresources: [{type: a, count: 1, count: 2}]\ntasks: []\nattributes:\n",
            "resources[0].count",
        ),
        ("version: 1\nresources: {}\ntasks: []\nattributes:\n", "resources"),
        ("version: 1\nresources: []\ntasks: {}\nattributes:\n", "tasks"),
        ("version: 1\nresources: [a]\ntasks: []\nattributes:\n", "resources[0]"),
        ("version: 1\nresources: []\ntasks: []\nattributes: []\n", "attributes"),
    ],
)
def test_rejected_structure(text: str, field: str) -> None:
    """Top-level structure problems, duplicate keys included, name the field."""
    with pytest.raises(JobspecError) as info:
        parse_jobspec(text)
    assert field in str(info.value)


def test_scalar_helpers_follow_yaml_cpp() -> None:
    """The yaml-cpp conversion helpers give the documented results."""
    assert as_unsigned("0x1F") == 31 and as_unsigned("017") == 15 and as_unsigned("-0") is None
    assert as_unsigned("12 ") == 12 and as_unsigned(" 12") is None and as_unsigned(True) is None
    assert as_int("-0x10") == -16 and as_int(2**31) is None and as_int("2147483647") == 2**31 - 1
    assert as_char("+") == "+" and as_char("++") is None and as_char("") is None and as_char(None) is None
    assert as_double("1e3") == 1000.0 and as_double("-.INF") == -math.inf and math.isnan(as_double(".NaN"))
    assert as_double("inf") is None and as_double(False) is None


# -- the fast reader must build exactly what libyaml builds -------------------

_WORDS = (
    "a b-c 1 -1 0x1f 010 1.5 1.50 1e3 1e+20 true True null ~ a:b #x x#y - .5 +1 $x [x] * & é 'q' properties"
)
_words = st.sampled_from([*_WORDS.split(), "", "a b", "- x", 'say "hi"'])
_scalars = _words | st.integers(-5, 10**6) | st.sampled_from([True, False, None, 0.5, -0.0, 1e20])
_keys = st.sampled_from(
    ["type", "count", "with", "k", "x-y", "null", "Null", "properties", "a.b", "1", "true"]
)
_trees = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


def _same_tree(text: str) -> None:
    fast = _fast_document(text)
    if fast is None:
        return
    slow, builder = _yaml_document(text, "t")
    assert fast[0] == slow
    assert sorted(fast[1].values()) == sorted(builder.plain_items.values())


@settings(max_examples=300, deadline=None)
@given(_trees, st.sampled_from([False, None]), st.sampled_from([2, 4]), st.booleans())
def test_fast_reader_matches_libyaml_on_dumped_trees(tree, flow, indent, indent_lists) -> None:
    """Whenever the fast reader accepts a dumped document, it builds libyaml's tree."""
    text = yaml.safe_dump({"top": tree}, default_flow_style=flow, indent=indent, width=40)
    if indent_lists:
        text = text.replace("\n- ", "\n  - ")
    _same_tree(text)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=string.ascii_letters[:6] + " -:#'\"[],\n~01.", max_size=60))
def test_fast_reader_matches_libyaml_on_noise(text: str) -> None:
    """On arbitrary YAML-ish noise, the fast reader either declines or agrees with libyaml."""
    try:
        _yaml_document(text, "t")
    except JobspecError:
        assert _fast_document(text) is None
        return
    _same_tree(text)


def test_fast_reader_covers_common_jobspecs() -> None:
    """The template (typical block YAML) is read by the fast path."""
    text = TEMPLATE.format(version=1, count=1, duration=0, extra="")
    assert _fast_document(text) is not None
    _same_tree(text)


def test_rejection_after_fast_read_still_has_line() -> None:
    """A jobspec read by the fast path and then rejected still reports the line."""
    count = "\n      min: 0"
    text = TEMPLATE.format(version=1, count=count, duration=0, extra="")
    assert _fast_document(text) is not None
    message = rejected("resources[0].count.min", count=count)
    assert message.endswith("(line 5)")
