"""The SWF reader/writer: fields, header, extensions, round trip, and errors that name the line."""

from __future__ import annotations

import io

import pytest

from fluxlite.errors import InputError
from fluxlite.sim.swf import (
    SWF_FIELDS,
    SwfFormatError,
    SwfJob,
    SwfTrace,
    iter_swf,
    parse_swf_line,
    read_swf,
    write_swf,
)

SAMPLE = """\
; Version: 2.2
; Computer: Test machine
; MaxNodes: 128
; MaxProcs: 512
; UnixStartTime: 1000000
; Note: a free comment line without a key
;   hello world
1 0 10 3600 16 3500.5 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1
2 5 0 60 1 -1 -1 -1 120 -1 0 4 1 2 1 1 1 30

3 5 2 10.0 4 -1 -1 8 -1 -1 1 5 2 -1 -1 -1 -1 -1
"""


def test_reads_header_fields_and_missing_values() -> None:
    """Header keys become typed metadata; each job keeps its 18 fields with -1 as missing."""
    t = read_swf(io.StringIO(SAMPLE))
    assert t.max_nodes == 128 and t.max_procs == 512
    assert t.header["UnixStartTime"] == 1000000 and t.header["Computer"] == "Test machine"
    assert [j.job_id for j in t.jobs] == [1, 2, 3]
    j1, j2, j3 = t.jobs
    assert j1.run_time == 3600 and j1.avg_cpu_time == 3500.5 and j1.requested_time == 7200
    assert j2.requested_procs == -1 and j2.procs == 1  # falls back on allocated
    assert j2.walltime == 120 and j3.walltime == 10  # run time when no request
    assert j3.procs == 8 and j2.preceding_job == 1 and j2.think_time == 30
    assert j1.extra == ()
    assert "hello world" in t.comments


def test_round_trip_with_extension_columns(tmp_path) -> None:
    """write_swf then read_swf gives the same jobs, header and extension columns (also gzipped)."""
    jobs = [
        SwfJob(job_id=i, submit_time=10 * i, run_time=100 + i, requested_procs=i, extra=(i % 4, 5.0 * i, 1e6))
        for i in range(1, 30)
    ]
    t = SwfTrace(
        jobs=jobs, header={"MaxNodes": 128, "MaxProcs": 512, "Extensions": "type earliest_start deadline"}
    )
    for name in ("t.swf", "t.swf.gz"):
        write_swf(t, tmp_path / name)
        back = read_swf(tmp_path / name)
        assert back.jobs == jobs
        assert back.extensions == ("type", "earliest_start", "deadline")
        assert back.max_procs == 512
    assert list(iter_swf(tmp_path / "t.swf")) == jobs


@pytest.mark.parametrize(
    ("line", "lineno", "needle"),
    [
        ("1 0 10 3600 16", 9, "line 9"),
        ("1 0 10 abc 16 -1 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1", 4, "run_time"),
        ("1 0 10 36.5 16 -1 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1", 4, "run_time"),
        ("0 0 10 3600 16 -1 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1", 2, "job_id"),
        ("1 0 10 3600 -5 -1 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1", 2, "allocated_procs"),
        ("1 0 10 3600 16 -1 -1 16 7200 -1 1 3 1 -1 1 -1 -1 -1 x", 2, "extension 1"),
    ],
)
def test_line_errors_name_the_line_and_field(line: str, lineno: int, needle: str) -> None:
    """A malformed line raises SwfFormatError (an InputError) naming the line number and field."""
    with pytest.raises(SwfFormatError) as ei:
        parse_swf_line(line, lineno, "trace.swf")
    msg = str(ei.value)
    assert f"trace.swf:{lineno}:" in msg and needle.replace("line ", "") in msg
    assert isinstance(ei.value, InputError)


def test_file_errors_name_the_line(tmp_path) -> None:
    """Errors found while reading a file name its path and the 1-based line (comments counted)."""
    good = "1 0 1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n"
    cases = {
        "short.swf": "; MaxProcs: 4\n" + good + "2 0 1\n",
        "dup.swf": good + good,
        "order.swf": "2 50 1 10 1 -1 -1 1 10 -1 1 1 1 -1 -1 -1 -1 -1\n" + good.replace("1 0 ", "3 0 ", 1),
        "header.swf": "; MaxProcs: many\n" + good,
    }
    expect = {"short.swf": 3, "dup.swf": 2, "order.swf": 2, "header.swf": 1}
    for name, text in cases.items():
        p = tmp_path / name
        p.write_text(text)
        with pytest.raises(SwfFormatError, match=rf"{name}:{expect[name]}:"):
            read_swf(p)
    with pytest.raises(InputError, match="cannot read SWF file"):
        read_swf(tmp_path / "missing.swf")


def test_field_table_is_the_standard_18() -> None:
    """The field order is the archive's (job number first, think time last)."""
    assert len(SWF_FIELDS) == 18 and SWF_FIELDS[0] == "job_id" and SWF_FIELDS[-1] == "think_time"
    assert SWF_FIELDS[7] == "requested_procs" and SWF_FIELDS[8] == "requested_time"
