"""jansson-compatible JSON text: separators, indentation, escapes, reals, key order."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from fluxlite.writers._jansson import _iterdump, dumps, quote

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=20,
)


def test_indent0_separators_and_nesting() -> None:
    """JSON_INDENT(0) prints one line with ", " and ": " separators."""
    obj = {"graph": {"nodes": [{"id": "1", "metadata": {"type": "rack", "id": 0}}], "edges": []}}
    assert (
        dumps(obj)
        == '{"graph": {"nodes": [{"id": "1", "metadata": {"type": "rack", "id": 0}}], "edges": []}}'
    )


def test_empty_containers() -> None:
    """Empty arrays and objects print as [] and {} at every indentation."""
    for indent in (0, 2):
        assert dumps({"a": [], "b": {}}, indent=indent).count("[]") == 1
    assert dumps([], indent=4) == "[]"
    assert dumps({}, compact=True) == "{}"


def test_compact_drops_spaces() -> None:
    """JSON_COMPACT uses "," and ":" without spaces."""
    assert dumps({"a": [1, 2], "b": {"c": None}}, compact=True) == '{"a":[1,2],"b":{"c":null}}'


def test_positive_indent_layout() -> None:
    """JSON_INDENT(n) puts each item on its own line, n spaces per depth."""
    assert dumps({"a": [1, True], "b": "x"}, indent=2) == '{\n  "a": [\n    1,\n    true\n  ],\n  "b": "x"\n}'


def test_insertion_order_kept_and_sort_keys() -> None:
    """Keys keep insertion order unless JSON_SORT_KEYS is given."""
    assert dumps({"b": 1, "a": 2}) == '{"b": 1, "a": 2}'
    assert dumps({"b": 1, "a": 2}, sort_keys=True) == '{"a": 2, "b": 1}'


def test_string_escapes_match_jansson() -> None:
    """Named escapes, upper-case \\u00XX for other control chars, raw UTF-8 and slash."""
    assert quote('a"b\\c') == '"a\\"b\\\\c"'
    assert quote("\b\f\n\r\t") == '"\\b\\f\\n\\r\\t"'
    assert quote("\x01\x1f\x7f") == '"\\u0001\\u001F\x7f"'
    assert quote("é/ü") == '"é/ü"'
    assert dumps(["\x1f", "\\u001f"]) == '["\\u001F", "\\\\u001f"]'


def test_reals_like_jansson() -> None:
    """Reals print with %.17g, a forced ".0" and a trimmed exponent."""
    assert dumps([1.0, 0.5, 1e20, 1e-5, -2.0]) == "[1.0, 0.5, 1e20, 1.0000000000000001e-5, -2.0]"
    assert dumps(0.1) == "0.10000000000000001"


def test_scalars_and_bools() -> None:
    """true/false/null and integers print as jansson does."""
    assert dumps([True, False, None, -1, 2**62]) == f"[true, false, null, -1, {2**62}]"


@given(JSON)
def test_fast_path_equals_reference_encoder(obj: object) -> None:
    """The C-encoder fast path yields exactly the reference encoder's text."""
    assert dumps(obj) == "".join(_iterdump(obj, 0, False, False, 0))


@given(JSON)
def test_output_parses_back(obj: object) -> None:
    """Every dump is valid JSON that decodes to the input."""
    assert json.loads(dumps(obj)) == obj
    assert json.loads(dumps(obj, indent=3)) == obj
    assert json.loads(dumps(obj, compact=True)) == obj
