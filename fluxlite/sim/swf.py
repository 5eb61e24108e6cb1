"""Standard Workload Format (SWF) of the Parallel Workloads Archive: read and write job traces.

An SWF file (https://www.cs.huji.ac.il/labs/parallel/workload/swf.html) is
plain text, one job per line, 18 whitespace-separated numeric fields; ``-1``
means "missing" (this module keeps it as ``-1`` so a round trip is exact).
Lines starting with ``;`` are comments; in the header, ``; Key: value``
comments carry the trace's metadata (``MaxNodes``, ``MaxProcs``,
``UnixStartTime``, ``Version``, ...), kept in :attr:`SwfTrace.header`.

====  =====================  ==========================================
 #    field                  unit / meaning
====  =====================  ==========================================
 1    job_id                 job number (>= 1)
 2    submit_time            seconds since the trace's start
 3    wait_time              seconds in the queue
 4    run_time               seconds of wall clock actually used
 5    allocated_procs        processors allocated
 6    avg_cpu_time           seconds of CPU per processor (float)
 7    used_memory            KB per processor (float)
 8    requested_procs        processors requested
 9    requested_time         seconds requested (wall clock limit)
 10   requested_memory       KB per processor requested (float)
 11   status                 1 completed, 0 failed, 5 cancelled, ...
 12   user_id
 13   group_id
 14   executable             application number
 15   queue                  queue number
 16   partition              partition number
 17   preceding_job          job this one depends on (-1: none)
 18   think_time             seconds after the preceding job ended
====  =====================  ==========================================

Extension columns: fields after the 18th are kept, as numbers, in
:attr:`SwfJob.extra`; a header line ``; Extensions: name name ...`` names
them (the deadline simulator writes ``type earliest_start deadline`` there,
see :mod:`fluxlite.sim.deadline.workload`).  A file without extensions is
plain SWF.

Errors are :class:`SwfFormatError` (an :class:`~fluxlite.errors.InputError`)
naming the file, the line number and the field.  Reading is streaming
(:func:`iter_swf`) or whole-file (:func:`read_swf`); ``.gz`` files are
decompressed on the fly.  Cost: O(lines).
"""

from __future__ import annotations

import contextlib
import gzip
import io
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import IO

from fluxlite.errors import InputError

__all__ = [
    "SWF_FIELDS",
    "SwfFormatError",
    "SwfJob",
    "SwfTrace",
    "format_swf_line",
    "iter_swf",
    "parse_swf_line",
    "read_swf",
    "write_swf",
]

#: the 18 standard fields, in file order
SWF_FIELDS: tuple[str, ...] = (
    "job_id",
    "submit_time",
    "wait_time",
    "run_time",
    "allocated_procs",
    "avg_cpu_time",
    "used_memory",
    "requested_procs",
    "requested_time",
    "requested_memory",
    "status",
    "user_id",
    "group_id",
    "executable",
    "queue",
    "partition",
    "preceding_job",
    "think_time",
)
_FLOAT_FIELDS = frozenset({"avg_cpu_time", "used_memory", "requested_memory"})
#: header keys whose values are integers
_INT_HEADER = frozenset(
    {"MaxJobs", "MaxRecords", "MaxNodes", "MaxProcs", "UnixStartTime", "MaxQueues", "MaxPartitions"}
)


class SwfFormatError(InputError):
    """An SWF file is malformed; the message names the file, the line and the field."""


@dataclass(frozen=True, slots=True)
class SwfJob:
    """One job (one line) of an SWF trace; ``-1`` marks a missing value, as in the file."""

    job_id: int
    submit_time: int
    wait_time: int = -1
    run_time: int = -1
    allocated_procs: int = -1
    avg_cpu_time: float = -1.0
    used_memory: float = -1.0
    requested_procs: int = -1
    requested_time: int = -1
    requested_memory: float = -1.0
    status: int = -1
    user_id: int = -1
    group_id: int = -1
    executable: int = -1
    queue: int = -1
    partition: int = -1
    preceding_job: int = -1
    think_time: int = -1
    #: extension columns (19th field on), see the module docstring
    extra: tuple[float, ...] = ()

    @property
    def procs(self) -> int:
        """Processors the job asks for: requested, else allocated (-1 if both are missing)."""
        return self.requested_procs if self.requested_procs > 0 else self.allocated_procs

    @property
    def walltime(self) -> int:
        """Wall-clock limit: requested time, else the run time (-1 if both are missing)."""
        return self.requested_time if self.requested_time > 0 else self.run_time

    def fields(self) -> tuple[float, ...]:
        """The 18 standard values followed by the extension columns, in file order."""
        return tuple(getattr(self, name) for name in SWF_FIELDS) + self.extra


@dataclass(slots=True)
class SwfTrace:
    """A whole trace: header metadata (``; Key: value`` lines), free comments, and the jobs."""

    jobs: list[SwfJob] = field(default_factory=list)
    header: dict[str, str | int] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)

    @property
    def max_nodes(self) -> int | None:
        v = self.header.get("MaxNodes")
        return v if isinstance(v, int) and v > 0 else None

    @property
    def max_procs(self) -> int | None:
        v = self.header.get("MaxProcs")
        return v if isinstance(v, int) and v > 0 else None

    @property
    def extensions(self) -> tuple[str, ...]:
        """Names of the extension columns (``; Extensions: ...``), empty for plain SWF."""
        v = self.header.get("Extensions")
        return tuple(str(v).split()) if v else ()


def _number(tok: str, name: str, lineno: int, source: str, as_float: bool) -> int | float:
    try:
        if as_float:
            return float(tok)
        try:
            return int(tok)
        except ValueError:
            f = float(tok)  # some archive traces write integers as "12.0"
            if not f.is_integer():
                raise ValueError(tok) from None
            return int(f)
    except ValueError:
        kind = "a number" if as_float else "an integer"
        raise SwfFormatError(
            f"{source}:{lineno}: field {name} must be {kind}, got {tok!r}", line=lineno, field=name
        ) from None


def parse_swf_line(line: str, lineno: int = 1, source: str = "<swf>") -> SwfJob:
    """Parse one job line (not a comment); raises :class:`SwfFormatError` naming the line and field."""
    toks = line.split()
    if len(toks) < len(SWF_FIELDS):
        raise SwfFormatError(
            f"{source}:{lineno}: expected {len(SWF_FIELDS)} fields, got {len(toks)}",
            line=lineno,
        )
    values: dict[str, int | float] = {}
    for i, name in enumerate(SWF_FIELDS):
        v = _number(toks[i], name, lineno, source, name in _FLOAT_FIELDS)
        if v < -1:
            raise SwfFormatError(
                f"{source}:{lineno}: field {name} is {toks[i]} (negative values other than -1 are invalid)",
                line=lineno,
                field=name,
            )
        values[name] = v
    if values["job_id"] < 1:
        raise SwfFormatError(f"{source}:{lineno}: field job_id must be >= 1", line=lineno, field="job_id")
    if values["submit_time"] < 0:
        raise SwfFormatError(
            f"{source}:{lineno}: field submit_time must be >= 0", line=lineno, field="submit_time"
        )
    extra = tuple(
        float(_number(tok, f"extension {i + 1}", lineno, source, True))
        for i, tok in enumerate(toks[len(SWF_FIELDS) :])
    )
    return SwfJob(**values, extra=extra)  # type: ignore[arg-type]


def _open(src: str | os.PathLike[str] | IO[str]) -> tuple[IO[str], str, bool]:
    if isinstance(src, (str, os.PathLike)):
        path = os.fspath(src)
        try:
            if path.endswith(".gz"):
                return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8"), path, True
            return open(path, encoding="utf-8"), path, True
        except OSError as exc:
            raise InputError(f"cannot read SWF file {path}: {exc.strerror or exc}", path=path) from exc
    return src, getattr(src, "name", "<swf>"), False


def _iter(
    src: str | os.PathLike[str] | IO[str], header: dict[str, str | int] | None, comments: list[str] | None
) -> Iterator[SwfJob]:
    fh, source, close = _open(src)
    seen: set[int] = set()
    last_submit = -1
    try:
        for lineno, raw in enumerate(fh, 1):
            line = raw.strip()
            if not line:
                continue
            if line.startswith(";"):
                body = line[1:].strip()
                key, sep, value = body.partition(":")
                key = key.strip()
                if sep and key and " " not in key and header is not None:
                    value = value.strip()
                    if key in _INT_HEADER:
                        try:
                            header[key] = int(value.split()[0]) if value else -1
                        except ValueError:
                            raise SwfFormatError(
                                f"{source}:{lineno}: header {key} must be an integer, got {value!r}",
                                line=lineno,
                                field=key,
                            ) from None
                    else:
                        header[key] = value
                elif comments is not None:
                    comments.append(body)
                continue
            job = parse_swf_line(line, lineno, source)
            if job.job_id in seen:
                raise SwfFormatError(
                    f"{source}:{lineno}: job_id {job.job_id} appears twice", line=lineno, field="job_id"
                )
            if job.submit_time < last_submit:
                raise SwfFormatError(
                    f"{source}:{lineno}: submit_time {job.submit_time} is before the previous job's "
                    f"{last_submit} (SWF lines are sorted by submit time)",
                    line=lineno,
                    field="submit_time",
                )
            seen.add(job.job_id)
            last_submit = job.submit_time
            yield job
    except UnicodeDecodeError as exc:
        raise SwfFormatError(f"{source}: not a text file ({exc.reason})") from exc
    except (OSError, EOFError) as exc:  # truncated .gz
        raise SwfFormatError(f"{source}: cannot read: {exc}") from exc
    finally:
        if close:
            fh.close()


def iter_swf(src: str | os.PathLike[str] | IO[str]) -> Iterator[SwfJob]:
    """Stream the jobs of an SWF file (path, ``.gz`` path or open text file), validating each line."""
    return _iter(src, None, None)


def read_swf(src: str | os.PathLike[str] | IO[str]) -> SwfTrace:
    """Read a whole SWF file: header (``MaxNodes``, ``MaxProcs``, ...), comments and jobs."""
    trace = SwfTrace()
    trace.jobs = list(_iter(src, trace.header, trace.comments))
    return trace


def _fmt(v: float) -> str:
    if isinstance(v, float) and not v.is_integer():
        return f"{v:.6g}"
    return str(int(v))


def format_swf_line(job: SwfJob) -> str:
    """One job as an SWF line (18 fields, then the extension columns)."""
    return " ".join(_fmt(v) for v in job.fields())


def write_swf(trace: SwfTrace | Iterable[SwfJob], dest: str | os.PathLike[str] | IO[str]) -> None:
    """Write a trace (header ``; Key: value`` lines first, then one line per job); ``.gz`` compresses."""
    if not isinstance(trace, SwfTrace):
        trace = SwfTrace(jobs=list(trace))
    with contextlib.ExitStack() as stack:
        if isinstance(dest, (str, os.PathLike)):
            path = os.fspath(dest)
            opener = gzip.open if path.endswith(".gz") else open
            raw = stack.enter_context(opener(path, "wt", encoding="utf-8"))
            fh: IO[str] = raw  # type: ignore[assignment]
        else:
            fh = dest
        for key, value in trace.header.items():
            fh.write(f"; {key}: {value}\n")
        for c in trace.comments:
            fh.write(f"; {c}\n")
        for job in trace.jobs:
            fh.write(format_swf_line(job) + "\n")
