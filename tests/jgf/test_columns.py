"""The columnar JGF path (jgf.read_columns + the reader's bulk build) gives the graph the ordinary path gives.

The reference is ``_unpack`` over ``jgf.read`` (one Node object per vertex), the
code the reader used before the columnar path existed.  Every document is read
with pieces of a few bytes too, so that cutting the arrays is exercised.
"""

from __future__ import annotations

import contextlib
import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

import jgf
import jgf._columns as columns
from fluxlite.errors import FluxliteError, GraphFormatError
from fluxlite.graph import ResourceGraph
from fluxlite.readers import load_graph
from fluxlite.readers.generate import generate_graph
from fluxlite.readers.jgf import JgfReader, _load_columns, _unpack, graph_to_jgf, parse_jgf
from tests.conftest import BENCH, RESOURCE, files_or_skip

CONF_JGF = RESOURCE / "jgfs"
SHARED_DOCS = [
    p
    for p in (
        CONF_JGF / "tiny.json",
        CONF_JGF / "power.json",
        *sorted((CONF_JGF / "elastic").glob("*.json")),
        BENCH / "jgf" / "L4.json",
        BENCH / "jgf" / "L0.json",
    )
    if p.is_file()
]


def reference(text: bytes) -> ResourceGraph:
    g = ResourceGraph()
    _unpack(g, parse_jgf(text), "<ref>", require_root=True)
    return g


def state(g: ResourceGraph) -> dict[str, Any]:
    """Everything a reader sets, in the order it holds it."""
    return {
        "cols": [
            g.v_type,
            g.v_basename,
            g.v_name,
            g.v_id,
            g.v_uniq,
            g.v_rank,
            g.v_size,
            g.v_unit,
            g.v_status,
        ],
        "props": list(g.v_props.items()),
        "paths": [(ss, list(col.items())) for ss, col in g.paths.items()],
        "by_path": list(g.by_path.items()),
        "by_rank": list(g.by_rank.items()),
        "roots": list(g.roots.items()),
        "edges": [g.e_src, g.e_dst, g.e_ss, g.e_rel, g.e_seq],
        "out": [(ss, [list(x) for x in col]) for ss, col in g.out.items()],
        "parent": list(g.parent_edge.items()),
        "rx": (list(g.rx.node_indices()), list(g.rx.weighted_edge_list())),
        "uniq": g.next_uniq_id(),
        "version": g.version,
        "jgf": graph_to_jgf(g),
    }


def same_as_reference(text: bytes, monkeypatch: pytest.MonkeyPatch, chunk: int) -> ResourceGraph:
    monkeypatch.setattr(columns, "CHUNK", chunk)
    cols = jgf.read_columns(text)
    assert cols is not None, "the columnar path refused a valid document"
    got = ResourceGraph()
    assert _load_columns(got, cols), "the columnar build refused a valid document"
    assert state(got) == state(JgfReader().load(text))
    assert state(got) == state(reference(text))
    return got


def variants() -> list[tuple[str, bytes]]:
    """Documents off Fluxion's exact layout: every branch of the fast and per-piece paths."""
    base = orjson.loads(graph_to_jgf(generate_graph(nodes=3, sockets=2, cores=2)))
    out = []

    def add(name: str, doc: dict[str, Any]) -> None:
        out.append((name, orjson.dumps(doc)))

    d = copy.deepcopy(base)
    for k, n in enumerate(d["graph"]["nodes"]):
        if k % 3 == 0:
            n["metadata"]["properties"] = {"color": "red", "k": str(k)}
        if k % 4 == 1:
            n["metadata"]["status"] = 1
        if k % 5 == 2:
            n["metadata"]["status"] = 0
    add("properties-status", d)
    d = copy.deepcopy(base)
    for n in d["graph"]["nodes"][2:]:
        md = n["metadata"]
        for key in ("basename", "name", "id", "rank", "size", "unit", "exclusive"):
            md.pop(key, None)
        md["uniq_id"] = -1
    d["graph"]["nodes"][3]["metadata"]["status"] = "down"
    add("defaults", d)
    d = copy.deepcopy(base)
    for k, n in enumerate(d["graph"]["nodes"]):
        p = n["metadata"]["paths"]["containment"]
        if k % 2 == 0:
            n["metadata"]["paths"]["power"] = "/pdu0" + ("" if k == 0 else p)
    d["graph"]["edges"] += [
        {"source": d["graph"]["nodes"][0]["id"], "target": n["id"], "metadata": {"subsystem": "power"}}
        for k, n in enumerate(d["graph"]["nodes"])
        if k and k % 2 == 0
    ]
    add("two-subsystems", d)
    d = copy.deepcopy(base)
    for k, e in enumerate(d["graph"]["edges"]):
        if k % 2:
            e["metadata"] = {"name": {"containment": "contains"}}
        elif k % 3:
            e["metadata"] = {"subsystem": "containment", "relation": "in"}
    d["graph"]["edges"][0].pop("metadata")
    d["free_ranks"] = "0-2"
    add("legacy-edges", d)
    out.append(("spaced", orjson.dumps(base, option=orjson.OPT_INDENT_2)))
    return out


@pytest.mark.parametrize(
    "path", files_or_skip(CONF_JGF, SHARED_DOCS), ids=lambda p: p.name if p else "missing-data"
)
def test_shared_documents(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = path.read_bytes()
    try:
        reference(text)
    except GraphFormatError:  # a partial-cancel document, not a whole graph: same error either way
        same_outcome(text, monkeypatch)
        return
    for chunk in (1, 200, columns.CHUNK):
        same_as_reference(text, monkeypatch, chunk)


@pytest.mark.parametrize("name", [n for n, _ in variants()])
def test_variants(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = dict(variants())[name]
    for chunk in (1, 300, columns.CHUNK):
        g = same_as_reference(text, monkeypatch, chunk)
    assert len(g) > 0


def test_load_graph_file_and_query_output(tmp_path: Path) -> None:
    """Through load_graph (the path the CLI and the benchmark take)."""
    src = generate_graph(nodes=40, sockets=2, cores=4)
    f = tmp_path / "g.json"
    f.write_bytes(graph_to_jgf(src))
    g = load_graph(f, format="jgf")
    assert state(g) == state(reference(f.read_bytes()))
    assert graph_to_jgf(g) == f.read_bytes()


BAD = [
    b"",
    b"[]",
    b'{"graph": {"nodes": [], "edges": []}}',
    b'{"graph": {"edges": [], "nodes": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}}, '
    b'{"id": "0", "metadata": {"type": "node", "paths": {"containment": "/c0/n0"}}}], "edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}}, '
    b'{"id": "1", "metadata": {"type": "node", "paths": {"containment": "/c0"}}}], "edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}}, '
    b'{"id": "1", "metadata": {"type": "node", "paths": {"containment": "/c1"}}}], "edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}}], '
    b'"edges": [{"source": "0", "target": "7"}]}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "size": true, '
    b'"paths": {"containment": "/c0"}}}], "edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "c0"}}}], '
    b'"edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/c0"}, '
    b'"properties": {"a": 1}}}], "edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/c0 ], \\"edges\\": ['
    b'"}}}], "edges": []}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/c0"}}}], '
    b'"edges": [{"source": "0", "target": "0", "metadata": {"subsystem": ""}}]}}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/c0"}}}], '
    b'"edges": []}, "free_ranks": 1.5}',
    b'{"graph": {"nodes": [{"id": "0", "metadata": {"type": "x", "paths": {"containment": "/c0"}}},], '
    b'"edges": []}}',
]


@pytest.mark.parametrize("text", BAD)
def test_bad_and_odd_documents_give_the_reference_answer(
    text: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Invalid documents (and valid ones off the expected layout) end as the ordinary reader ends."""
    same_outcome(text, monkeypatch)


def same_outcome(text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    for chunk in (1, columns.CHUNK):
        monkeypatch.setattr(columns, "CHUNK", chunk)
        try:
            want: Any = state(reference(text))
        except GraphFormatError as exc:
            want = str(exc).replace("<ref>", "<string>")
        try:
            got: Any = state(JgfReader().load(text))
        except GraphFormatError as exc:
            got = str(exc)
        assert got == want


def test_cut_inside_a_string_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    """A '},{' inside a property value is not an element boundary."""
    trap = '"}, {"id": "9", "metadata": {"type": "x", "paths": {"containment": "/trap"}}}, {"'
    doc = {
        "graph": {
            "nodes": [
                {"id": "0", "metadata": {"type": "cluster", "paths": {"containment": "/c0"}}},
                {
                    "id": "1",
                    "metadata": {
                        "type": "node",
                        "properties": {"p": trap},
                        "paths": {"containment": "/c0/n1"},
                    },
                },
                {"id": "2", "metadata": {"type": "node", "paths": {"containment": "/c0/n2"}}},
            ],
            "edges": [{"source": "0", "target": "1"}, {"source": "0", "target": "2"}],
        }
    }
    text = orjson.dumps(doc)
    for chunk in range(1, len(text), 7):
        monkeypatch.setattr(columns, "CHUNK", chunk)
        cols = jgf.read_columns(text)
        if cols is not None:  # a cut that happened to miss the trap
            assert len(cols) == 3 and cols.name == ["cluster0", "node1", "node2"]
        g = JgfReader().load(text)
        assert state(g) == state(reference(text))
        assert g.properties(1) == {"p": trap}


# ---------------------------------------------------------------------------- edges read from the bytes
def _fluxion_text() -> bytes:
    return graph_to_jgf(generate_graph(nodes=3, sockets=2, cores=2))


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    taken: list[bool] = []
    real = columns._fluxion_edges

    def spy(*args: Any) -> bool:
        taken.append(real(*args))
        return taken[-1]

    monkeypatch.setattr(columns, "_fluxion_edges", spy)
    return taken


def test_fluxion_layout_edges_come_from_the_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fluxion's layout (ids 0.., edges '{"source": "S", "target": "T", ...}, ') takes the byte path,
    and gives the graph the ordinary reader gives."""
    taken = _spy(monkeypatch)
    text = _fluxion_text()
    assert text.count(b', "metadata": {"subsystem": "containment"}}, {"source"') > 10
    same_as_reference(text, monkeypatch, columns.CHUNK)
    assert taken and all(taken)


ODD_EDGES = [
    # (name, bytes -> bytes edit of a Fluxion-layout document, still valid JSON?)
    ("comma-only separator", lambda t: t.replace(b'}}, {"source"', b'}},{"source"', 1), True),
    ("newline separator", lambda t: t.replace(b'}}, {"source"', b'}},\n{"source"', 1), True),
    (
        "power edge",
        lambda t: t.replace(b'"subsystem": "containment"}}]', b'"subsystem": "power"}}]', 1),
        True,
    ),
    ("leading zero id", lambda t: t.replace(b'{"source": "1", ', b'{"source": "01", ', 1), False),
    ("endpoint out of range", lambda t: t.replace(b'"target": "1", ', b'"target": "999", ', 1), False),
    ("garbage between", lambda t: t.replace(b'}}, {"source"', b'}}xy{"source"', 1), False),
    ("garbage near the end", lambda t: b'}}xy{"source"'.join(t.rsplit(b'}}, {"source"', 1)), False),
    ("trailing comma", lambda t: t.replace(b'"containment"}}]}', b'"containment"}}, ]}', 1), False),
    ("ids not positions", lambda t: t.replace(b'{"id": "1", ', b'{"id": "x1", ', 1), False),
]


@pytest.mark.parametrize(("name", "edit", "valid"), ODD_EDGES, ids=[x[0] for x in ODD_EDGES])
def test_edges_off_fluxion_layout_give_the_reference_answer(
    name: str, edit: Any, valid: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Off the exact layout (between pieces any JSON separator is fine, as the pieces are cut
    at '},{' with spaces), the byte path declines or still reads it right: the same graph, or
    the same error, as the reference."""
    text = edit(_fluxion_text())
    assert text != _fluxion_text()
    same_outcome(text, monkeypatch)
    if valid:
        same_as_reference(text, monkeypatch, columns.CHUNK)


def _writer_documents() -> list[bytes]:
    """Match writers' JGF (what a MatchGrow hands down): random requests on random graphs, memory with units."""
    import random

    from fluxlite.api import Engine
    from fluxlite.jobspec import parse_jobspec

    rng = random.Random(19)
    out = []
    for _ in range(6):
        g = generate_graph(
            nodes=rng.randint(2, 5), sockets=rng.randint(1, 2), cores=rng.randint(1, 4), memory=4
        )
        eng = Engine(g, policy=rng.choice(["first", "low", "high"]))
        for _ in range(3):
            cores = rng.randint(1, 2)
            mem = f", {{type: memory, count: {rng.randint(1, 3)}}}" if rng.random() < 0.5 else ""
            node = (
                f"type: node, count: 1, exclusive: {str(rng.random() < 0.5).lower()}, "
                if rng.random() < 0.5
                else ""
            )
            slot = f"{{type: slot, count: 1, label: s, with: [{{type: core, count: {cores}}}{mem}]}}"
            res = f"[{{{node}with: [{slot}]}}]" if node else f"[{slot}]"
            js = parse_jobspec(
                f"version: 1\nresources: {res}\nattributes: {{system: {{duration: 3600}}}}\n"
                "tasks: [{command: [app], slot: s, count: {per_slot: 1}}]\n"
            )
            with contextlib.suppress(FluxliteError):  # a full graph: fewer documents
                out.append(eng.allocate(js, fmt="jgf").text.encode())
    # sizes other than 1 (a writer writes "size" where a vertex's needs are not 1)
    out.append(out[-1].replace(b'"exclusive": true, "paths"', b'"exclusive": true, "size": 4, "paths"', 3))
    return out


def test_a_match_writers_layout_is_read_from_the_bytes_as_the_general_path_reads_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    docs = _writer_documents()
    assert len(docs) >= 10
    seen_units = seen_sizes = False
    for text in docs:
        fast = jgf.read_columns(text)
        assert fast is not None
        assert columns._writer_nodes(columns.Columns(), *_node_range(text), []), "the byte path declined"
        with monkeypatch.context() as m:
            m.setattr(columns, "_writer_nodes", lambda *_a: False)
            m.setattr(columns, "_writer_edges", lambda *_a: False)
            slow = jgf.read_columns(text)
        assert fast == slow
        seen_units = seen_units or "GB" in fast.unit
        seen_sizes = seen_sizes or any(s != 1 for s in fast.size)
    assert seen_units and seen_sizes


def _node_range(text: bytes) -> tuple[bytes, int, int]:
    n0 = columns._PREFIX.match(text).end()  # type: ignore[union-attr]
    return text, n0, columns._NODES_END.search(text, n0).start()  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "edit",
    [
        (b'"rank": -1', b'"rank": -2'),  # off the writer's values: the general path
        (b'"exclusive": true', b'"exclusive": false'),
        (b'{"id": "', b'{"id" : "'),  # other spacing
        (b'"}}}, {"id"', b'"}, "x": 1}}, {"id"'),  # an extra key
        (b'"target": "', b'"target": "9999'),  # an edge to no node
        (b'"type": "core"', b'"type": "co\\u0072e"'),  # an escape
        (b'"type": "core"', '"type": "cor\u00e9"'.encode()),  # not ASCII
    ],
)
def test_documents_off_the_writers_layout_give_the_general_paths_answer(
    edit: tuple[bytes, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    text = _writer_documents()[0]
    assert edit[0] in text
    changed = text.replace(edit[0], edit[1], 1)
    got = jgf.read_columns(changed)
    with monkeypatch.context() as m:
        m.setattr(columns, "_writer_nodes", lambda *_a: False)
        m.setattr(columns, "_writer_edges", lambda *_a: False)
        assert got == jgf.read_columns(changed)


def test_a_whole_graph_is_not_copied_or_scanned_by_the_writer_layout_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """A document in another layout is turned away by a probe of its first element, before any copy."""
    text = graph_to_jgf(generate_graph(nodes=4, sockets=2, cores=2))
    data = text.encode() if isinstance(text, str) else text
    scanned: list[int] = []
    real = columns._WRITER_NODE

    class Spy:
        def match(self, s: str) -> Any:
            assert len(s) <= 1024
            return real.match(s)

        def findall(self, s: str) -> Any:
            scanned.append(len(s))
            return real.findall(s)

    monkeypatch.setattr(columns, "_WRITER_NODE", Spy())
    assert jgf.read_columns(data) is not None
    assert scanned == []


def test_the_writer_layouts_numbers_are_read_exactly_up_to_eighteen_digits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ids, uniq ids and ranks come from one JSON array per column: the same ints as int() of each."""
    text = _writer_documents()[0]
    big = b"999999999999999999"
    changed = text.replace(b'"id": 0, "rank": -1', b'"id": ' + big + b', "rank": 123456789012345678', 1)
    assert changed != text
    assert columns._writer_nodes(columns.Columns(), *_node_range(changed), []), "the byte path declined"
    fast = jgf.read_columns(changed)
    assert fast is not None and int(big) in fast.id and 123456789012345678 in fast.rank
    assert -1 in fast.rank and all(type(x) is int for x in (*fast.id, *fast.uniq_id, *fast.rank))
    with monkeypatch.context() as m:
        m.setattr(columns, "_writer_nodes", lambda *_a: False)
        m.setattr(columns, "_writer_edges", lambda *_a: False)
        assert fast == jgf.read_columns(changed)


_ONE = '{"id": "7", "metadata": {"type": "core", "id": 3, "rank": -1%s, "paths": {"containment": "/core3"}}}'
_MEM = '{"id": "9", "metadata": {"type": "memory", "id": 0, "rank": 2, "unit": "GB"%s, "paths": {"containment": "/node0/memory0"}}}'
_NODE = '{"id": "8", "metadata": {"type": "node", "id": 0, "rank": 2, "paths": {"containment": "/node0"}}}'


@pytest.mark.parametrize(
    "text",
    [
        '{"graph": {"nodes": [' + _ONE % "" + '], "edges": []}}\n',
        '{"graph": {"nodes": [' + _ONE % ', "exclusive": true' + '], "edges": []}}\n',
        '{"graph": {"nodes": [' + _NODE + ", " + _MEM % ', "size": 16' + '], "edges": [{"source": "8", "target": "9"}]}}\n',
        '{"graph": {"nodes": [' + _NODE + ", " + _MEM % ', "exclusive": true, "size": 4' + '], "edges": [{"source": "8", "target": "9"}]}}\n',
        '{"graph": {"nodes": [' + _MEM % "" + ", " + _NODE + '], "edges": [{"source": "8", "target": "9"}]}}\n',
    ],
)  # fmt: skip
def test_columns_are_written_back_in_the_match_writers_layout_at_the_smallest_sizes(text: str) -> None:
    """One node and no edge, one edge, units, sizes and exclusivity: columns_jgf gives back the match
    writer's text byte for byte (the interleaving of its pieces at the edges of its range)."""
    cols = jgf.read_columns(text)
    assert cols is not None and len(cols) in (1, 2)
    assert jgf.columns_jgf(cols) == text.encode()


@pytest.mark.parametrize(
    "change, layout",
    [
        (None, True),
        (lambda c: c.paths["containment"].__setitem__(1, '/node0/me"m0'), False),  # a quote
        (lambda c: c.paths["containment"].__setitem__(1, "/node0/me\\m0"), False),  # a backslash
        (lambda c: c.paths["containment"].__setitem__(1, "/node0/mem\t0"), False),  # a control character
        (lambda c: c.paths["containment"].__setitem__(1, "/node0/mém0"), False),  # not ASCII
        (lambda c: c.paths["containment"].__setitem__(1, "/node0/mem~0 "), True),  # printable: as is
        (lambda c: c.name.__setitem__(1, "memory1"), False),  # a name that is not type + id
        (lambda c: c.name.__setitem__(0, "node\n0"), False),  # a newline in a name
        (lambda c: (c.type.__setitem__(0, "no\nde"), c.basename.__setitem__(0, "no\nde")), False),
    ],
)
def test_the_writer_layout_is_taken_only_for_plain_strings_and_default_names(
    change: Any, layout: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """columns_jgf writes the match writer's layout only when no string needs an escape and every name
    is its type and id; otherwise the general writer, and either way the document says the same."""
    from jgf import _columns

    text = '{"graph": {"nodes": [' + _NODE + ", " + _MEM % "" + '], "edges": [{"source": "8", "target": "9"}]}}\n'
    cols = jgf.read_columns(text)
    assert cols is not None
    if change is not None:
        change(cols)
    got = jgf.columns_jgf(cols)
    assert (_columns._writer_text(cols) is not None) is layout
    monkeypatch.setattr(_columns, "_writer_text", lambda c: None)
    general = jgf.columns_jgf(cols)
    for doc in (got, general):  # either text says the same: each node's strings and numbers as written
        nodes = orjson.loads(doc)["graph"]["nodes"]
        md = [nd["metadata"] for nd in nodes]
        assert [m["paths"]["containment"] for m in md] == cols.paths["containment"]
        assert [m["type"] for m in md] == cols.type
        assert [m.get("name", m["type"] + str(m["id"])) for m in md] == cols.name
        assert [m["id"] for m in md] == cols.id and [nd["id"] for nd in nodes] == list(map(str, cols.uniq_id))
