"""The flexible traverser (``-T flexible``): or_slot and xor_slot alternatives as Fluxion's dfu_flexible.

Expected choices are derived by hand from dfu_flexible's rules (union of the
alternatives' types, exhaustive choice of the sequence that places the most
slots, first alternative on ties, xor_slot variants tried in order) on small
graphs built here.
"""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fluxlite.api import Engine
from fluxlite.cli import query
from fluxlite.cli.graph import recipe_to_graphml
from fluxlite.errors import BusyError, InputError, JobspecError, UnsatisfiableError
from fluxlite.jobspec import parse_jobspec
from fluxlite.match.flexible import MAX_XOR_EXPANSION, FlexibleTraverser, split_xor_slots
from fluxlite.readers.generate import generate_graph, generate_recipe
from tests.fluxlite.helpers import jobspec, snapshot


def slot(label: str, items: dict[str, int], count: int = 1, kind: str = "slot", indent: int = 6) -> str:
    """A YAML slot entry (``kind`` slot or xor_slot) holding ``items`` (type -> count)."""
    p = " " * indent
    lines = [f"{p}- type: {kind}", f"{p}  count: {count}", f"{p}  label: {label}", f"{p}  with:"]
    for t, n in items.items():
        lines += [f"{p}    - type: {t}", f"{p}      count: {n}"]
    return "\n".join(lines)


def socket_with(*slots: str) -> Any:
    """socket[1] -> the given slot entries (alternatives)."""
    return jobspec("  - type: socket\n    count: 1\n    with:\n" + "\n".join(slots))


SMALL = slot("small", {"core": 2, "gpu": 1})
BIG = slot("big", {"core": 4})
OR_JOB = socket_with(SMALL, BIG)
XOR_JOB = socket_with(
    slot("small", {"core": 2, "gpu": 1}, kind="xor_slot"), slot("big", {"core": 4}, kind="xor_slot")
)


def engine(gpus: int = 1, policy: str = "first", nodes: int = 1, flexible: bool = True) -> Engine:
    """cluster0 -> node[nodes] -> socket[2] -> core[4] (+ gpu[gpus] per socket)."""
    return Engine(
        generate_graph(nodes=nodes, sockets=2, cores=4, gpus=gpus),
        policy=policy,
        traverser_policy="flexible" if flexible else "simple",
    )


def held(eng: Engine, jobid: int) -> Counter[str]:
    """Exclusively held units per leaf type of job ``jobid``."""
    got: Counter[str] = Counter()
    for path, units, excl in eng.job_items(jobid):
        if excl:
            got[path.rsplit("/", 1)[1].rstrip("0123456789")] += units
    return got


def sockets_of(eng: Engine, jobid: int) -> set[str]:
    return {"/".join(p.split("/")[:4]) for p, _u, x in eng.job_items(jobid) if x}


# ------------------------------------------------------------------ parsing (libjobspec's rules)

DOC = "version: 1\nresources:\n{r}\ntasks:\n  - command: [app]\n    slot: a\n    count:\n      per_slot: 1\nattributes:\n"


def test_or_slot_jobspecs_parse_as_fluxion() -> None:
    """Several labelled slot siblings parse; a slot alternative without a label is named; xor_slot needs none."""
    two = slot("a", {"core": 1}, indent=2) + "\n" + slot("b", {"core": 2}, indent=2)
    js = parse_jobspec(DOC.format(r=two))
    assert [r.label for r in js.slots] == ["a", "b"]
    with pytest.raises(JobspecError, match=r"resources\[1\]\.label: missing \(every slot needs a label\)"):
        parse_jobspec(DOC.format(r=two.replace("    label: b\n", "")))
    xor = "  - type: xor_slot\n    count: 1\n    with:\n      - type: core\n        count: 1\n"
    assert parse_jobspec(DOC.format(r=xor)).resources[0].type == "xor_slot"


def test_unknown_type_in_an_alternative_is_refused_by_the_repl(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A type no graph or filter knows, inside one alternative: Fluxion's jobspec error, no match, no state."""
    js = write(tmp_path / "u.yaml", socket_with(slot("a", {"core": 2, "does-not-exist": 1}), BIG))
    rc, out, err = run_query(monkeypatch, capsys, ["-T", "flexible"], f"match allocate {js}\nquit\n")
    assert rc == 0 and "RESOURCES=ALLOCATED" not in out
    assert 'Value of "type" must be a resource type known to fluxion' in err


# ------------------------------------------------------------------ engine and API


def test_flexible_engine_builds_the_flexible_traverser() -> None:
    assert isinstance(engine().traverser, FlexibleTraverser)
    assert not isinstance(engine(flexible=False).traverser, FlexibleTraverser)
    with pytest.raises(InputError, match="unknown traverser policy 'sideways'"):
        Engine(generate_graph(nodes=1), traverser_policy="sideways")


def test_or_slot_first_alternative_that_places_most_slots() -> None:
    """Both alternatives fit one slot on a socket of 4 cores + 1 gpu: the first listed (small) wins."""
    eng = engine(gpus=1)
    r = eng.allocate(OR_JOB)
    assert held(eng, r.jobid) == Counter(core=2, gpu=1)
    # listed the other way round, big comes first and wins the tie
    eng2 = engine(gpus=1)
    r2 = eng2.allocate(socket_with(BIG, SMALL))
    assert held(eng2, r2.jobid) == Counter(core=4)


def test_or_slot_skips_an_alternative_the_graph_lacks() -> None:
    """Without gpus the small alternative can never be formed: big (4 cores) is chosen."""
    eng = engine(gpus=0)
    r = eng.allocate(OR_JOB)
    assert held(eng, r.jobid) == Counter(core=4)


def test_or_slot_alternative_changes_as_resources_are_used() -> None:
    """small, small (one per socket), then each socket has 2 cores and no gpu: busy, then a reservation."""
    eng = engine(gpus=1)
    a = eng.allocate(OR_JOB)
    b = eng.allocate(OR_JOB)
    assert held(eng, a.jobid) == held(eng, b.jobid) == Counter(core=2, gpu=1)
    assert sockets_of(eng, a.jobid) != sockets_of(eng, b.jobid)
    before = snapshot(eng)
    with pytest.raises(BusyError):
        eng.allocate(OR_JOB)
    assert snapshot(eng) == before
    r = eng.allocate_orelse_reserve(OR_JOB)
    assert r.reserved and r.at == 3600
    assert eng.jobs[r.jobid] == "reserved"
    # after a's end, a's socket is whole again: small is formed there
    assert held(eng, r.jobid) == Counter(core=2, gpu=1)
    assert sockets_of(eng, r.jobid) == sockets_of(eng, a.jobid)


def test_big_alternative_taken_when_the_gpu_is_gone() -> None:
    """A socket whose gpu is held but whose 4 cores are free gives the big alternative."""
    eng = engine(gpus=1, nodes=1)
    gpu_only = jobspec("  - type: socket\n    count: 1\n    with:\n" + slot("g", {"gpu": 1}) + "\n")
    g1 = eng.allocate(gpu_only)
    g2 = eng.allocate(gpu_only)
    assert held(eng, g1.jobid) == held(eng, g2.jobid) == Counter(gpu=1)
    r = eng.allocate(OR_JOB)
    assert held(eng, r.jobid) == Counter(core=4)


def test_satisfiability_considers_every_alternative() -> None:
    eng = engine(gpus=0)
    never = socket_with(SMALL, slot("huge", {"core": 5}))
    assert not eng.satisfiable(never)
    before = snapshot(eng)
    with pytest.raises(UnsatisfiableError):
        eng.allocate(never)
    with pytest.raises(UnsatisfiableError):
        eng.allocate_orelse_reserve(never)
    assert snapshot(eng) == before
    assert eng.satisfiable(OR_JOB)
    # satisfiable while busy: everything taken, still satisfiable
    full = engine(gpus=0)
    full.allocate(
        jobspec("  - type: node\n    count: 1\n    exclusive: true\n    with:\n" + slot("d", {"socket": 2}))
    )
    assert full.satisfiable(OR_JOB)
    with pytest.raises(BusyError):
        full.allocate(OR_JOB)


def test_cancel_returns_the_state_exactly() -> None:
    eng = engine(gpus=1)
    start = snapshot(eng)
    a = eng.allocate(OR_JOB)
    b = eng.allocate_orelse_reserve(socket_with(BIG, SMALL))
    assert a.jobid != b.jobid
    eng.cancel(b.jobid)
    eng.cancel(a.jobid)
    assert snapshot(eng) == start


def test_the_search_prefers_more_slots_over_jobspec_order() -> None:
    """socket -> [a{core 3}, b{core 2}] (slot counts {min: 1}) on 4 cores: a gives 1 slot, b, b gives 2.

    The socket keeps every slot formed, so the job holds all 4 cores as two b slots.
    """
    js = jobspec(
        "  - type: socket\n    count: 1\n    with:\n"
        "      - type: slot\n        count:\n          min: 1\n        label: a\n        with:\n"
        "          - type: core\n            count: 3\n"
        "      - type: slot\n        count:\n          min: 1\n        label: b\n        with:\n"
        "          - type: core\n            count: 2\n"
    )
    eng = engine(gpus=0)
    r = eng.allocate(js)
    assert held(eng, r.jobid) == Counter(core=4) and len(sockets_of(eng, r.jobid)) == 1


def test_slot_is_formed_only_right_below_its_resource() -> None:
    """node -> slot -> core with cores under sockets never matches with dfu_flexible.

    In dfu_flexible's test(), a resource holding slots that cannot be formed
    at that vertex is no match at all (not a resource match), so the walk
    never reaches the cores.  Fluxion behaves so; so does fluxlite.
    """
    js = jobspec(
        "  - type: node\n    count: 1\n    with:\n" + slot("a", {"core": 2}) + "\n" + slot("b", {"core": 1})
    )
    one = jobspec("  - type: node\n    count: 1\n    with:\n" + slot("a", {"core": 2}))
    eng = engine()
    before = snapshot(eng)
    for bad in (js, one):
        with pytest.raises(UnsatisfiableError):
            eng.allocate(bad)
    assert snapshot(eng) == before


def test_single_unbounded_slot_fails_as_in_fluxion() -> None:
    """One slot alternative with count {min: 1}: dfu_flexible keeps the bound in a C int (-1), then fails.

    Its slot loop reads -1 back as 4294967295, uses up every edge group and
    stops at "not enough slots"; a bounded count works.  State unchanged.
    """
    unbounded = jobspec(
        "  - type: socket\n    count: 1\n    with:\n"
        "      - type: slot\n        count:\n          min: 1\n        label: a\n        with:\n"
        "          - type: core\n            count: 2\n"
    )
    bounded = jobspec(
        "  - type: socket\n    count: 1\n    with:\n"
        "      - type: slot\n        count:\n          min: 1\n          max: 2\n"
        "          operator: '+'\n          operand: 1\n        label: a\n        with:\n"
        "          - type: core\n            count: 2\n"
    )
    eng = engine(gpus=0)
    before = snapshot(eng)
    r = eng.match(unbounded)
    assert not r.ok and "dom_slot: not enough slots" in eng.traverser.err_msg
    assert snapshot(eng) == before
    r = eng.allocate(bounded)
    assert held(eng, r.jobid) == Counter(core=4)
    # the simple traverser has no such bound
    simple = engine(gpus=0, flexible=False)
    assert held(simple, simple.allocate(unbounded).jobid) == Counter(core=4)


def test_select_or_config_search() -> None:
    """The memoized search itself: most slots, first alternative on ties, the sequence replayed from the memo."""
    tr = engine(gpus=0).traverser
    assert isinstance(tr, FlexibleTraverser)
    js = jobspec(
        "  - type: slot\n    count: 1\n    label: x\n" + "\n".join([]) + "    with:\n"
        "      - type: core\n        count: 1\n      - type: gpu\n        count: 1\n"
        "  - type: slot\n    count: 1\n    label: y\n    with:\n      - type: core\n        count: 2\n"
    )
    a, b = js.resources
    memo: dict = {}
    left, placed, first = tr.select_or_config([a, b], {"core": 4, "gpu": 1}, 1, memo)
    # (4,1): A -> (3,0) -> B -> (1,0): 2 slots; B -> (2,1) -> A or B: 2 slots; tie: A first
    assert (placed, first) == (2, 0) and left == {"core": 3, "gpu": 0}
    seq = []
    cfg = (left, placed, first)
    cfg = memo[tuple(sorted({"core": 4, "gpu": 1}.items()))]
    for _ in range(placed):
        seq.append(cfg[2])
        cfg = memo[tuple(sorted(cfg[0].items()))]
    assert seq == [0, 1]
    # (6,1): A,B,B = 3 slots vs B,B,B = 3 slots: A first; B,B,A needs the search too
    assert tr.select_or_config([a, b], {"core": 6, "gpu": 1}, 1, {})[1:] == (3, 0)
    assert tr.select_or_config([b, a], {"core": 6, "gpu": 1}, 1, {})[1:] == (3, 0)
    # nothing fits: 0 slots and no choice
    assert tr.select_or_config([a, b], {"core": 1, "gpu": 0}, 1, {})[1:] == (0, -1)
    # one alternative: bounded by nslots, else by counts // per-slot
    assert tr.select_or_config([b], {"core": 9}, 3, {})[1] == 3
    assert tr.select_or_config([b], {"core": 5}, 3, {})[1] == 2


# ------------------------------------------------------------------ xor_slot


def test_xor_slot_variants_tried_in_order() -> None:
    eng = engine(gpus=1)
    r = eng.allocate(XOR_JOB)
    assert held(eng, r.jobid) == Counter(core=2, gpu=1)
    tr = eng.traverser
    assert isinstance(tr, FlexibleTraverser) and tr.chosen_variant is not None
    assert tr.chosen_variant[0].with_[0].label == "small"
    eng0 = engine(gpus=0)
    r0 = eng0.allocate(XOR_JOB)
    assert held(eng0, r0.jobid) == Counter(core=4)


def test_split_xor_slots_expansion() -> None:
    js = parse_jobspec(
        "version: 1\nresources:\n  - type: node\n    count: 1\n    with:\n"
        "      - type: xor_slot\n        count: 1\n        with:\n          - type: core\n            count: 1\n"
        "      - type: xor_slot\n        count: 1\n        with:\n          - type: gpu\n            count: 1\n"
        "tasks:\n  - command: [app]\n    slot: s\n    count:\n      per_slot: 1\nattributes:\n"
    )
    variants = split_xor_slots(js.resources)
    assert len(variants) == 2
    kinds = [[c.type for c in v[0].with_] for v in variants]
    assert kinds == [["slot"], ["slot"]]
    assert [v[0].with_[0].with_[0].type for v in variants] == ["core", "gpu"]
    # without xor_slot: one variant, the very same requests
    assert split_xor_slots(OR_JOB.resources) == [OR_JOB.resources]


def many_xor(n: int) -> Any:
    body = "\n".join(slot(f"x{i}", {"core": 1}, kind="xor_slot", indent=2) for i in range(n))
    return jobspec(body)


def test_xor_expansion_limit() -> None:
    eng = engine(gpus=0)
    before = snapshot(eng)
    with pytest.raises(JobspecError, match="more than 1000 xor_slot variants"):
        eng.allocate(many_xor(MAX_XOR_EXPANSION + 1))
    r = eng.match(many_xor(MAX_XOR_EXPANSION + 1))
    assert not r.ok and "split_xor_slots failed" in r.error
    assert snapshot(eng) == before
    assert eng.allocate(many_xor(3)).ok


# ------------------------------------------------------------------ simple traverser refuses


def test_simple_traverser_refuses_alternatives() -> None:
    eng = engine(flexible=False)
    before = snapshot(eng)
    with pytest.raises(JobspecError, match=r"resources\[0\]\.with: 2 slot siblings \(or_slot\)"):
        eng.allocate(OR_JOB)
    with pytest.raises(JobspecError, match="xor_slot"):
        eng.allocate_orelse_reserve(XOR_JOB)
    # the REPL path (Engine.match) behaves as Fluxion's simple traverser: slot siblings at the
    # top level are refused when the root is tested ...
    top = jobspec(slot("small", {"core": 2, "gpu": 1}, indent=2) + "\n" + slot("big", {"core": 4}, indent=2))
    r = eng.match(top)
    assert not r.ok and "siblings in jobspec request same resource type : cluster" in r.error
    # ... and below a resource only the last slot counts (here: pruned, 2+4 cores > 4 per socket)
    r = eng.match(OR_JOB)
    assert not r.ok and r.errno == "EBUSY"
    wide = Engine(generate_graph(nodes=1, sockets=1, cores=8, gpus=1))
    r = wide.match(OR_JOB)
    assert r.ok and held(wide, r.jobid) == Counter(core=4)
    assert snapshot(eng) == before


# ------------------------------------------------------------------ the REPL


def run_query(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], args: list[str], cmds: str
) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(cmds))
    rc = query.main(args)
    got = capsys.readouterr()
    return rc, got.out, got.err


def write(path: Path, js: Any) -> Path:
    import yaml

    path.write_text(yaml.safe_dump(js.to_dict()))
    return path


def test_query_flexible_session(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """fluxlite query -T flexible: or_slot matches, reserves, cancels; a resource beside or_slots is refused."""
    graph = tmp_path / "g.graphml"
    graph.write_text(recipe_to_graphml(generate_recipe(0, 1, 2, 4, 1)))
    js = write(tmp_path / "or.yaml", OR_JOB)
    mixed = write(
        tmp_path / "mixed.yaml",
        jobspec(
            "  - type: socket\n    count: 1\n    with:\n      - type: core\n        count: 1\n"
            + slot("s", {"core": 1}, indent=2)
        ),
    )
    out = tmp_path / "out.txt"
    cmds = (
        f"match allocate {js}\nmatch allocate {js}\nmatch allocate {js}\n"
        f"match allocate_orelse_reserve {js}\nmatch satisfiability {js}\ninfo 4\ncancel 1\n"
        f"match allocate {mixed}\nquit\n"
    )
    rc, _stdout, err = run_query(
        monkeypatch, capsys, ["-L", str(graph), "-T", "flexible", "-t", str(out)], cmds
    )
    assert rc == 0
    text = out.read_text()
    assert text.count("RESOURCES=ALLOCATED") == 2
    assert "INFO: JOBID=3" in text and text.count("No matching resources found") == 2
    assert "RESOURCES=RESERVED" in text and "SCHEDULED AT=3600" in text
    assert "Satisfiable request" in text
    assert "gpu0[1:x]" in text and "gpu1[1:x]" in text
    assert "siblings in jobspec request same resource type : socket" in err
    # the simple traverser refuses top-level slot siblings with the message Fluxion prints
    top = write(
        tmp_path / "top.yaml",
        jobspec(slot("small", {"core": 2, "gpu": 1}, indent=2) + "\n" + slot("big", {"core": 4}, indent=2)),
    )
    rc, _stdout, err = run_query(
        monkeypatch, capsys, ["-L", str(graph), "-t", str(out)], f"match allocate {top}\nquit\n"
    )
    assert "siblings in jobspec request same resource type : cluster" in err
    assert "No matching resources found" in out.read_text()
    # ... which -T flexible matches: one slot, the first alternative (small)
    rc, _stdout, err = run_query(
        monkeypatch,
        capsys,
        ["-L", str(graph), "-T", "flexible", "-t", str(out)],
        f"match allocate {top}\nquit\n",
    )
    text = out.read_text()
    assert "RESOURCES=ALLOCATED" in text and text.count("[1:x]") == 3 and "gpu" in text, err


def test_example_or_slot_with_info_find_cancel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """examples/jobspecs/or-slot.yaml on the bundled graph: the gpu alternative; info, find and cancel see it."""
    example = Path(__file__).resolve().parents[2] / "examples" / "jobspecs" / "or-slot.yaml"
    cmds = (
        f"match allocate {example}\ninfo 1\nfind jobid-alloc=1\ncancel 1\ninfo 1\n"
        "find sched-now=allocated\nquit\n"
    )
    rc, out, err = run_query(monkeypatch, capsys, ["-T", "flexible"], cmds)
    assert rc == 0, err
    match_block, rest = out.split("INFO: RESOURCES=ALLOCATED", 1)
    # 8 cores and one gpu, exclusively, under one socket
    assert match_block.count("core") == 8 and match_block.count("gpu") == 1
    assert match_block.count("socket") == 1
    assert "INFO: 1, ALLOCATED, 0," in rest and "INFO: 1, CANCELED, 0," in rest
    found = rest.split('EXPRESSION="jobid-alloc=1"')[0]
    assert found.count("core") == 8 and found.count("gpu") == 1
    assert 'EXPRESSION="sched-now=allocated"' in rest
    after_cancel = rest.split("INFO: 1, CANCELED")[1].split('EXPRESSION="sched-now=allocated"')[0]
    assert "core" not in after_cancel and "gpu" not in after_cancel


# ------------------------------------------------------------------ flexible == simple without alternatives

SHAPES = [
    "  - type: slot\n    count: {a}\n    label: default\n    with:\n      - type: core\n        count: {b}\n",
    "  - type: node\n    count: {a}\n    with:\n      - type: slot\n        count: 1\n        label: default\n"
    "        with:\n          - type: socket\n            count: 1\n            with:\n"
    "              - type: core\n                count: {b}\n",
    "  - type: socket\n    count: {a}\n    with:\n      - type: slot\n        count: {b}\n        label: default\n"
    "        with:\n          - type: core\n            count: 1\n          - type: gpu\n            count: 1\n",
    "  - type: node\n    count: 1\n    exclusive: true\n    with:\n      - type: socket\n        count: {a}\n"
    "        with:\n          - type: slot\n            count: {b}\n            label: default\n"
    "            with:\n              - type: core\n                count: 1\n",
]

OPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "allocate",
                "allocate_orelse_reserve",
                "allocate_with_satisfiability",
                "satisfiability",
                "cancel",
            ]
        ),
        st.integers(0, len(SHAPES) - 1),
        st.integers(1, 3),
        st.integers(1, 4),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(["first", "low", "high", "lonode", "hinode", "firstnodex", "lonodex", "hinodex"]),
    ops=OPS,
)
def test_flexible_equals_simple_without_alternatives(
    policy: str, ops: list[tuple[str, int, int, int]]
) -> None:
    """One slot per level, right above its resources: -T flexible picks, writes and records what -T simple does.

    Where the two differ, as in Fluxion: a slot that is not right above its
    resources (node -> slot -> core on this graph, see
    test_slot_is_formed_only_right_below_its_resource), and ``locality``,
    which chooses among the slots a vertex offers: dfu_flexible offers at
    most the slot count per vertex, the simple traverser every slot it can pack.
    """
    engines = [engine(gpus=1, policy=policy, nodes=2, flexible=f) for f in (False, True)]
    for op, shape, a, b in ops:
        got = []
        for eng in engines:
            if op == "cancel":
                if eng.jobs:
                    eng.cancel(min(eng.jobs))
                got.append(sorted(eng.jobs))
                continue
            r = eng.match(jobspec(SHAPES[shape].format(a=a, b=b)), op=op)
            got.append((r.ok, r.jobid, r.at, r.text, r.errno, r.satisfiable))
        assert got[0] == got[1], (op, shape, a, b)
    assert snapshot(engines[0]) == snapshot(engines[1])


ALTERNATIVE = st.fixed_dictionaries(
    {"core": st.integers(1, 6)}, optional={"gpu": st.integers(1, 2), "memory": st.integers(1, 3)}
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    policy=st.sampled_from(["first", "low", "high", "locality"]),
    alts=st.lists(ALTERNATIVE, min_size=1, max_size=3),
    kind=st.sampled_from(["slot", "xor_slot"]),
    gpus=st.integers(0, 1),
)
def test_alternatives_satisfiable_iff_allocatable_on_empty_graph(
    policy: str, alts: list[dict[str, int]], kind: str, gpus: int
) -> None:
    """Random or_slot / xor_slot jobspecs: satisfiable <=> allocatable when empty; failures and cancel keep state."""
    eng = Engine(
        generate_graph(nodes=2, sockets=2, cores=4, gpus=gpus, memory=2),
        policy=policy,
        traverser_policy="flexible",
    )
    js = socket_with(*(slot(f"a{i}", a, kind=kind) for i, a in enumerate(alts)))
    start = snapshot(eng)
    sat = eng.satisfiable(js)
    assert snapshot(eng) == start
    if not sat:
        with pytest.raises(UnsatisfiableError):
            eng.allocate(js)
        assert snapshot(eng) == start
        return
    r = eng.allocate(js)
    got = held(eng, r.jobid)
    # what the job holds is one alternative's worth or more of some alternative, on one socket
    assert len(sockets_of(eng, r.jobid)) == 1
    assert any(all(got[t] >= n for t, n in a.items()) for a in alts), (got, alts)
    # keep allocating until busy: a busy failure changes nothing; every job cancels back to the start
    for _ in range(8):
        before = snapshot(eng)
        try:
            eng.allocate(js)
        except BusyError:
            assert snapshot(eng) == before
            break
    for j in sorted(eng.jobs):
        eng.cancel(j)
    assert snapshot(eng) == start
