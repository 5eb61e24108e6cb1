"""fluxlite.jobspec against Fluxion's own jobspec test data, plus round trips and error format."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml

from fluxlite.errors import InputError, JobspecError
from fluxlite.jobspec import (
    UNBOUNDED,
    Count,
    Jobspec,
    Resource,
    Tristate,
    load_jobspec,
    parse_jobspec,
)
from tests.conftest import BENCH, RESOURCE, files_or_skip, needs

JOBSPECS = RESOURCE / "jobspecs"
VALID = JOBSPECS / "validation" / "valid"
INVALID = JOBSPECS / "validation" / "invalid"
BENCH_JOBSPECS = BENCH / "jobspecs"

needs_data = needs(JOBSPECS)


def _name(p: Path | None) -> str:
    return p.name if p is not None else "missing-data"


def _relative(p: Path | None) -> str:
    return str(p.relative_to(JOBSPECS)) if p is not None else "missing-data"


def _files(folder: Path, *, exclude_invalid: bool = False) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        p for p in folder.rglob("*") if p.is_file() and not (exclude_invalid and INVALID in p.parents)
    )


# The field each invalid file gets wrong, as a path in the document.
INVALID_FIELDS = {
    "attributes_bad_entry.yaml": "attributes.foo",
    "attributes_bad_properties.yaml": "attributes.system.constraints.properties[0]",
    "attributes_bad_properties2.yaml": "attributes.system.constraints.properties",
    "attributes_bad_properties3.yaml": "attributes.system.constraints.properties[0]",
    "attributes_bad_properties4.yaml": "attributes.system.constraints.properties[0]",
    "attributes_not_mapping.yaml": "attributes",
    "invalid_yaml1.yaml": "invalid YAML",
    "missing_attributes.yaml": "attributes",
    "missing_resources.yaml": "resources",
    "missing_tasks.yaml": "tasks",
    "missing_version.yaml": "version",
    "resource_count_add_zero.yaml": "resources[0].count.operand",
    "resource_count_bad_type.yaml": "resources[0].count",
    "resource_count_exponent_min_one.yaml": "resources[0].count.min",
    "resource_count_exponent_one.yaml": "resources[0].count.operand",
    "resource_count_invalid_operator.yaml": "resources[0].count.operator",
    "resource_count_max_bad_type.yaml": "resources[0].count.max",
    "resource_count_max_less_than_min.yaml": "resources[0].count.max",
    "resource_count_min_bad_type.yaml": "resources[0].count.min",
    "resource_count_min_zero.yaml": "resources[0].count.min",
    "resource_count_missing_max.yaml": "resources[0].count.max",
    "resource_count_missing_min.yaml": "resources[0].count.min",
    "resource_count_missing_operand.yaml": "resources[0].count.operand",
    "resource_count_missing_operator.yaml": "resources[0].count.operator",
    "resource_count_multiply_one.yaml": "resources[0].count.operand",
    "resource_count_negative_max.yaml": "resources[0].count.max",
    "resource_count_operand_bad_type.yaml": "resources[0].count.operand",
    "resource_count_operator_bad_type.yaml": "resources[0].count.operator",
    "resource_count_scalar_bad_value.yaml": "resources[0].count",
    "resource_exclusive_invalid.yaml": "resources[0].with[0].exclusive",
    "resource_exclusive_not_scalar.yaml": "resources[0].exclusive",
    "resource_id_not_scalar.yaml": "resources[0].id",
    "resource_label_not_scalar.yaml": "resources[0].label",
    "resource_missing_count.yaml": "resources[0].with[0].count",
    "resource_missing_type.yaml": "resources[0].with[0].type",
    "resource_not_mapping.yaml": "resources[0]",
    "resource_slot_not_labelled.yaml": "resources[0].label",
    "resource_unit_not_scalar.yaml": "resources[0].unit",
    "resources_not_sequence.yaml": "resources",
    "task_command_not_array.yaml": "tasks[0].command",
    "task_count_multiple_keys.yaml": "tasks[0].count",
    "task_count_not_mapping.yaml": "tasks[0].count",
    "task_missing_command.yaml": "tasks[0].command",
    "task_missing_count.yaml": "tasks[0].count",
    "task_missing_slot.yaml": "tasks[0].slot",
    "task_not_mapping.yaml": "tasks[0]",
    "tasks_not_sequence.yaml": "tasks",
    "version_bad_number.yaml": "version",
    "version_not_scalar.yaml": "version",
}


# Names that do not spell out the field (e.g. "add_zero" is about the operand).
NAME_DOES_NOT_SAY = {
    "attributes_bad_properties.yaml",
    "attributes_bad_properties2.yaml",
    "attributes_bad_properties3.yaml",
    "attributes_bad_properties4.yaml",
    "invalid_yaml1.yaml",
    "resource_count_add_zero.yaml",
    "resource_count_exponent_one.yaml",
    "resource_count_multiply_one.yaml",
    "resource_slot_not_labelled.yaml",
}


def _field_from_name(name: str) -> str:
    """The field (or the tail of its path) a file name like ``resource_missing_count.yaml`` points at."""
    words = name.rsplit(".", 1)[0].split("_")
    head, rest = words[0], words[1:]
    if head == "missing":
        return "_".join(rest)
    if head == "resource" and rest[0] == "count":
        field = next((w for w in rest[1:] if w in ("min", "max", "operand", "operator")), None)
        return f"count.{field}" if field else "count"
    if head in ("resource", "task"):
        if rest[0] == "missing":
            rest = rest[1:]
        prefix = "resources[0]" if head == "resource" else "tasks[0]"
        return prefix if rest[0] == "not" else f".{rest[0]}"
    return head


def _expected_field(name: str) -> str:
    """The field path an invalid file gets wrong: from the table, else derived from its name."""
    return INVALID_FIELDS.get(name) or _field_from_name(name)


@needs_data
@pytest.mark.parametrize("path", files_or_skip(VALID, _files(VALID)), ids=_name)
def test_valid_files_load(path: Path) -> None:
    """Every jobspec Fluxion accepts in validation/valid/ loads."""
    js = load_jobspec(path)
    assert isinstance(js, Jobspec)
    assert js.source == str(path)
    assert js.resources and js.tasks


@needs_data
@pytest.mark.parametrize("path", files_or_skip(INVALID, _files(INVALID)), ids=_name)
def test_invalid_files_are_rejected_naming_the_field(path: Path) -> None:
    """Every jobspec Fluxion rejects raises one line naming the file and the field."""
    with pytest.raises(JobspecError) as info:
        load_jobspec(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(str(path))
    assert path.name in message
    assert _expected_field(path.name) in message
    assert "Traceback" not in message


def test_field_derivation_from_file_names() -> None:
    """The field derived from each file name is part of the exact path in the table."""
    for name, field in INVALID_FIELDS.items():
        if name not in NAME_DOES_NOT_SAY:
            assert _field_from_name(name) in field, name


@needs_data
@pytest.mark.parametrize(
    "path", files_or_skip(JOBSPECS, _files(JOBSPECS, exclude_invalid=True)), ids=_relative
)
def test_every_conformance_jobspec_loads(path: Path) -> None:
    """Every jobspec of Fluxion's resource test suite (bar validation/invalid) loads."""
    js = load_jobspec(path)
    assert all(isinstance(r, Resource) for _, r in js.walk())


@needs_data
@pytest.mark.parametrize(
    "path", files_or_skip(JOBSPECS, _files(JOBSPECS, exclude_invalid=True)), ids=_relative
)
def test_round_trip(path: Path) -> None:
    """A jobspec equals what its canonical form (as JSON, YAML, re-dumped YAML) parses back to."""
    js = load_jobspec(path)
    canonical = js.to_dict()
    assert parse_jobspec(orjson.dumps(canonical)) == js
    assert parse_jobspec(js.to_json()) == js
    assert parse_jobspec(js.to_yaml()) == js
    assert parse_jobspec(js.to_yaml()).to_dict() == canonical
    if js.constraint is None:  # a plain YAML dump leaves properties unquoted, which Fluxion refuses
        assert parse_jobspec(yaml.safe_dump(canonical)) == js


@pytest.mark.parametrize("path", files_or_skip(BENCH_JOBSPECS, _files(BENCH_JOBSPECS)), ids=_name)
def test_bench_jobspecs_load(path: Path) -> None:
    """The bench jobspecs load and round-trip."""
    js = load_jobspec(path)
    assert parse_jobspec(js.to_yaml()) == js


@needs_data
def test_example1_model() -> None:
    """example1.yaml gives the expected tree, counts, task and duration."""
    js = load_jobspec(VALID / "example1.yaml")
    assert js.version == 9999
    (node,) = js.resources
    assert node.type == "node" and node.count == Count(4, 4, "+", 1)
    assert node.exclusive is Tristate.UNSPECIFIED
    (slot,) = node.with_
    assert slot.type == "slot" and slot.label == "default"
    (core,) = slot.with_
    assert core.count == Count(2, 2, "+", 1) and core.with_ == ()
    (task,) = js.tasks
    assert task.command == ("app",) and task.slot == "default" and task.count == {"per_slot": 1}
    assert js.duration == 3600.0 and js.queue == "" and js.constraint is None
    assert [r.type for r in js.slots] == ["slot"]
    assert js.slot_problems() == []


@needs_data
def test_range_count_defaults() -> None:
    """A count with only min gets Fluxion's defaults: max unbounded, '+', operand 1."""
    js = load_jobspec(VALID / "resource_count_min_only.yaml")
    assert js.resources[0].count == Count(1, UNBOUNDED, "+", 1)
    assert UNBOUNDED == 2**32 - 1
    js = load_jobspec(VALID / "use_case_1.2.yaml")
    assert js.resources[0].count == Count(3, 30, "+", 1)


def test_resources_are_distinct_by_identity() -> None:
    """Identical requests at different places are distinct, hashable objects."""
    js = parse_jobspec(
        "version: 1\nresources:\n  - {type: core, count: 1}\n  - {type: core, count: 1}\n"
        "tasks: []\nattributes:\n"
    )
    a, b = js.resources
    assert a is not b and a != b and len({a, b}) == 2
    assert a.to_dict() == b.to_dict()


def test_jobspec_equality_ignores_source() -> None:
    """Jobspecs compare by canonical form, not by where they came from."""
    text = "version: 1\nresources: [{type: node, count: 2}]\ntasks: []\nattributes:\n"
    assert parse_jobspec(text, source="a.yaml") == parse_jobspec(text, source="b.yaml")
    assert parse_jobspec(text) != parse_jobspec(text.replace("count: 2", "count: 3"))


def test_yaml_and_json_give_the_same_jobspec() -> None:
    """The same document as YAML, JSON text and JSON bytes parses alike."""
    doc = {
        "version": 1,
        "resources": [
            {"type": "slot", "count": {"min": 2}, "label": "s", "with": [{"type": "core", "count": 1}]}
        ],
        "tasks": [{"command": ["app", "-v"], "slot": "s", "count": {"total": 4}}],
        "attributes": {"system": {"duration": 60, "queue": "batch", "constraints": {"properties": ["^x"]}}},
    }
    from_json = parse_jobspec(orjson.dumps(doc).decode())
    assert parse_jobspec(orjson.dumps(doc)) == from_json
    all_quoted = parse_jobspec(yaml.safe_dump(doc, default_style='"'))  # Fluxion converts quoted numbers too
    assert all_quoted.resources[0].to_dict() == from_json.resources[0].to_dict()
    assert all_quoted.duration == 60.0 and all_quoted.version == 1
    assert from_json.queue == "batch" and from_json.duration == 60.0
    assert from_json.resources[0].count == Count(2, UNBOUNDED, "+", 1)
    assert from_json.tasks[0].count == {"total": 4}


def test_a_mapping_parses_as_its_json_text() -> None:
    """A document built in Python parses as its JSON text would; anything else is a one-line error."""
    doc = {
        "version": 1,
        "resources": [{"type": "node", "count": 2, "with": [{"type": "slot", "count": 1, "label": "s",
                                                             "with": [{"type": "core", "count": 4}]}]}],
        "tasks": [{"command": ("app", "-v"), "slot": "s", "count": {"per_slot": 1}}],
        "attributes": {"system": {"duration": 60}},
    }  # fmt: skip
    assert parse_jobspec(doc) == parse_jobspec(orjson.dumps(doc).decode())
    with pytest.raises(JobspecError, match=r"^j: version: only versions 1 to 9999"):
        parse_jobspec({**doc, "version": 0}, source="j")
    with pytest.raises(JobspecError, match=r"^j: not a JSON document"):
        parse_jobspec({**doc, "attributes": {"system": {"duration": {1, 2}}}}, source="j")
    for bad in (42, None, ["version", 1]):
        with pytest.raises(JobspecError, match=r"^j: a jobspec is YAML or JSON text, bytes or a mapping, not "):
            parse_jobspec(bad, source="j")  # type: ignore[arg-type]


def test_yaml_syntax_error_is_one_line_with_file_and_line(tmp_path: Path) -> None:
    """A YAML syntax error names the file, line and column on one line."""
    path = tmp_path / "broken.yaml"
    path.write_text("version: 1\nresources:\n  - type: node\n    count: [1, 2\ntasks: []\n")
    with pytest.raises(JobspecError) as info:
        load_jobspec(path)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith(f"{path}:")
    assert "invalid YAML" in message
    line = int(message[len(str(path)) + 1 :].split(":", 1)[0])
    assert 4 <= line <= 5


def test_yaml_syntax_error_in_string_source() -> None:
    """A string source is named in syntax errors too."""
    with pytest.raises(JobspecError, match=r"^job\.yaml:1:9: invalid YAML: "):
        parse_jobspec("foo: bar: baz", source="job.yaml")


def test_field_errors_carry_context_and_line() -> None:
    """A rejection gives 'source: field: reason (line N)' and structured context."""
    text = "version: 1\nresources:\n  - type: node\n    count:\n      min: 0\ntasks: []\nattributes:\n"
    with pytest.raises(JobspecError) as info:
        parse_jobspec(text, source="job.yaml")
    err = info.value
    assert str(err) == "job.yaml: resources[0].count.min: must be an integer >= 1, got 0 (line 5)"
    assert err.context == {"source": "job.yaml", "field": "resources[0].count.min", "line": 5}
    assert isinstance(err, InputError)


def test_json_errors_have_no_line() -> None:
    """JSON input reports the field without a line number."""
    with pytest.raises(JobspecError) as info:
        parse_jobspec('{"version": 0, "resources": [], "tasks": [], "attributes": null}', source="j.json")
    assert str(info.value) == "j.json: version: only versions 1 to 9999 are supported, got 0"


def test_unreadable_file_is_a_jobspec_error(tmp_path: Path) -> None:
    """A missing file raises JobspecError naming it, not OSError."""
    missing = tmp_path / "nope.yaml"
    with pytest.raises(JobspecError, match=r"nope\.yaml: cannot read"):
        load_jobspec(missing)


def test_non_utf8_bytes() -> None:
    """Bytes that are not UTF-8 give a one-line error."""
    with pytest.raises(JobspecError, match=r"^x: not UTF-8"):
        parse_jobspec(b"version: \xff\n", source="x")


def test_empty_and_non_mapping_documents() -> None:
    """Empty, scalar and sequence documents are rejected at the top level."""
    for text in ("", "# only a comment\n", "foo", "- a\n", "[1]"):
        with pytest.raises(JobspecError, match=r"^<string>: \(top level\): a jobspec must be a mapping"):
            parse_jobspec(text)


def test_only_first_yaml_document_counts() -> None:
    """Like yaml-cpp's Load, only the first document is read; later ones are ignored."""
    text = "version: 1\nresources: []\ntasks: []\nattributes:\n---\nthis: [is not read\n"
    assert parse_jobspec(text).version == 1


def test_recursive_alias_is_rejected() -> None:
    """A self-referencing alias is an error, not a hang or a traceback."""
    text = "version: 1\nresources: &a\n  - type: node\n    count: 1\n    with: *a\ntasks: []\nattributes:\n"
    with pytest.raises(JobspecError, match="recursive alias"):
        parse_jobspec(text)


def test_aliases_are_followed() -> None:
    """Anchors and aliases work (through libyaml)."""
    text = (
        "version: 1\nresources:\n  - &core {type: core, count: 2}\n  - *core\n"
        "tasks: []\nattributes: {system: {duration: 5}}\n"
    )
    js = parse_jobspec(text)
    assert [r.count.min for r in js.resources] == [2, 2]
    assert js.resources[0] is not js.resources[1]


def test_slot_problems_reports_rfc_slot_rules() -> None:
    """slot_problems flags paths without a slot, nested slots and unknown task slots."""
    text = """
version: 1
resources:
  - type: slot
    count: 1
    label: a
    with:
      - type: slot
        count: 1
        label: b
        with: [{type: core, count: 1}]
  - type: node
    count: 1
tasks:
  - command: [x]
    slot: c
    count: {per_slot: 1}
attributes:
"""
    problems = parse_jobspec(text).slot_problems()
    assert any("resources[0].with[0]" in p and "nested" in p for p in problems)
    assert any(p.startswith("resources[1]") and "no slot" in p for p in problems)
    assert any(p.startswith("tasks[0].slot") for p in problems)


@pytest.mark.parametrize(
    "text",
    ["[" * 5000 + "]" * 5000, "{a: " * 50000 + "}" * 50000, '{"a":' * 3000 + "1" + "}" * 3000],
    ids=["yaml-flow-seq", "yaml-flow-map", "json"],
)
def test_deeply_nested_documents_are_rejected(text: str) -> None:
    """Absurd nesting gives a JobspecError, not a RecursionError or a crash in libyaml."""
    with pytest.raises(JobspecError, match="nested too deeply"):
        parse_jobspec(text)


def test_deep_resource_tree_from_json() -> None:
    """A resource chain nested past Python's recursion limit is refused cleanly."""
    depth = 500  # 1000 JSON levels: within orjson's limit, past the validator's recursion
    res = '{"type": "g", "count": 1, "with": [' * depth + '{"type": "core", "count": 1}' + "]}" * depth
    text = '{"version": 1, "resources": [' + res + '], "tasks": [], "attributes": {}}'
    with pytest.raises(JobspecError, match="nested too deeply"):
        parse_jobspec(text)


def test_load_reparses_a_changed_file_and_never_caches_errors(tmp_path: Path) -> None:
    from fluxlite.jobspec import load_jobspec

    f = tmp_path / "job.yaml"
    one = (
        "version: 1\nresources:\n  - type: slot\n    count: 1\n    label: default\n    with:\n"
        "      - type: core\n        count: {n}\nattributes: {{}}\n"
        "tasks:\n  - command: [app]\n    slot: default\n    count:\n      per_slot: 1\n"
    )
    f.write_text(one.format(n=1))
    a = load_jobspec(f)
    assert load_jobspec(f) is a  # same bytes: parsed once
    f.write_text(one.format(n=3))
    assert load_jobspec(f).resources[0].with_[0].count.min == 3
    f.write_text("version: 1\nresources: []\n")
    with pytest.raises(JobspecError):
        load_jobspec(f)
    with pytest.raises(JobspecError):
        load_jobspec(f)
