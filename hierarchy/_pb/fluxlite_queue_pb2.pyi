from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SubmitRequest(_message.Message):
    __slots__ = ("size", "unit", "walltime", "priority", "user", "hold_backfill")
    SIZE_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    WALLTIME_FIELD_NUMBER: _ClassVar[int]
    PRIORITY_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    HOLD_BACKFILL_FIELD_NUMBER: _ClassVar[int]
    size: int
    unit: str
    walltime: int
    priority: int
    user: str
    hold_backfill: bool
    def __init__(self, size: _Optional[int] = ..., unit: _Optional[str] = ..., walltime: _Optional[int] = ..., priority: _Optional[int] = ..., user: _Optional[str] = ..., hold_backfill: _Optional[bool] = ...) -> None: ...

class JobRef(_message.Message):
    __slots__ = ("jobid",)
    JOBID_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    def __init__(self, jobid: _Optional[int] = ...) -> None: ...

class JobsRequest(_message.Message):
    __slots__ = ("jobids",)
    JOBIDS_FIELD_NUMBER: _ClassVar[int]
    jobids: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, jobids: _Optional[_Iterable[int]] = ...) -> None: ...

class JobInfo(_message.Message):
    __slots__ = ("jobid", "state", "size", "unit", "walltime", "submit", "start", "end", "reserved_at", "user", "grants", "refusals", "paths")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    WALLTIME_FIELD_NUMBER: _ClassVar[int]
    SUBMIT_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    RESERVED_AT_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    GRANTS_FIELD_NUMBER: _ClassVar[int]
    REFUSALS_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    state: str
    size: int
    unit: str
    walltime: int
    submit: int
    start: int
    end: int
    reserved_at: int
    user: str
    grants: int
    refusals: int
    paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobid: _Optional[int] = ..., state: _Optional[str] = ..., size: _Optional[int] = ..., unit: _Optional[str] = ..., walltime: _Optional[int] = ..., submit: _Optional[int] = ..., start: _Optional[int] = ..., end: _Optional[int] = ..., reserved_at: _Optional[int] = ..., user: _Optional[str] = ..., grants: _Optional[int] = ..., refusals: _Optional[int] = ..., paths: _Optional[_Iterable[str]] = ...) -> None: ...

class JobsReply(_message.Message):
    __slots__ = ("jobs", "now", "policy")
    JOBS_FIELD_NUMBER: _ClassVar[int]
    NOW_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[JobInfo]
    now: int
    policy: str
    def __init__(self, jobs: _Optional[_Iterable[_Union[JobInfo, _Mapping]]] = ..., now: _Optional[int] = ..., policy: _Optional[str] = ...) -> None: ...

class DyngetRequest(_message.Message):
    __slots__ = ("jobid", "count", "per_node_cores")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    PER_NODE_CORES_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    count: int
    per_node_cores: int
    def __init__(self, jobid: _Optional[int] = ..., count: _Optional[int] = ..., per_node_cores: _Optional[int] = ...) -> None: ...

class DyngetReply(_message.Message):
    __slots__ = ("granted", "job")
    GRANTED_FIELD_NUMBER: _ClassVar[int]
    JOB_FIELD_NUMBER: _ClassVar[int]
    granted: bool
    job: JobInfo
    def __init__(self, granted: _Optional[bool] = ..., job: _Optional[_Union[JobInfo, _Mapping]] = ...) -> None: ...

class DynfreeRequest(_message.Message):
    __slots__ = ("jobid", "paths")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    paths: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, jobid: _Optional[int] = ..., paths: _Optional[_Iterable[str]] = ...) -> None: ...
