from collections.abc import Iterable as _Iterable
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar

from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from google.protobuf.internal import containers as _containers

DESCRIPTOR: _descriptor.FileDescriptor

class LevelTiming(_message.Message):
    __slots__ = ("attach_update_s", "depth", "instance", "match_s", "outcome", "server_s", "upstream_s")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    MATCH_S_FIELD_NUMBER: _ClassVar[int]
    ATTACH_UPDATE_S_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_S_FIELD_NUMBER: _ClassVar[int]
    SERVER_S_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    instance: str
    depth: int
    match_s: float
    attach_update_s: float
    upstream_s: float
    server_s: float
    outcome: str
    def __init__(
        self,
        instance: str | None = ...,
        depth: int | None = ...,
        match_s: float | None = ...,
        attach_update_s: float | None = ...,
        upstream_s: float | None = ...,
        server_s: float | None = ...,
        outcome: str | None = ...,
    ) -> None: ...

class MatchAllocateRequest(_message.Message):
    __slots__ = ("child_address", "child_name", "jobspec", "lease", "request_id")
    JOBSPEC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    CHILD_NAME_FIELD_NUMBER: _ClassVar[int]
    CHILD_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    jobspec: bytes
    request_id: str
    lease: bool
    child_name: str
    child_address: str
    def __init__(
        self,
        jobspec: bytes | None = ...,
        request_id: str | None = ...,
        lease: bool | None = ...,
        child_name: str | None = ...,
        child_address: str | None = ...,
    ) -> None: ...

class MatchGrowRequest(_message.Message):
    __slots__ = ("jobid", "jobspec", "lease_token", "request_id")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    JOBSPEC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    jobspec: bytes
    request_id: str
    lease_token: str
    def __init__(
        self,
        jobid: int | None = ...,
        jobspec: bytes | None = ...,
        request_id: str | None = ...,
        lease_token: str | None = ...,
    ) -> None: ...

class MatchReply(_message.Message):
    __slots__ = ("edges", "grace_s", "jgf", "jobid", "lease_token", "replayed", "timings", "vertices")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    JGF_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    jgf: bytes
    lease_token: str
    grace_s: float
    replayed: bool
    vertices: int
    edges: int
    timings: _containers.RepeatedCompositeFieldContainer[LevelTiming]
    def __init__(
        self,
        jobid: int | None = ...,
        jgf: bytes | None = ...,
        lease_token: str | None = ...,
        grace_s: float | None = ...,
        replayed: bool | None = ...,
        vertices: int | None = ...,
        edges: int | None = ...,
        timings: _Iterable[LevelTiming | _Mapping] | None = ...,
    ) -> None: ...

class ShrinkRequest(_message.Message):
    __slots__ = ("jgf", "jobid", "lease_token", "paths", "request_id")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    JGF_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    jgf: bytes
    paths: _containers.RepeatedScalarFieldContainer[str]
    lease_token: str
    request_id: str
    def __init__(
        self,
        jobid: int | None = ...,
        jgf: bytes | None = ...,
        paths: _Iterable[str] | None = ...,
        lease_token: str | None = ...,
        request_id: str | None = ...,
    ) -> None: ...

class ShrinkReply(_message.Message):
    __slots__ = ("job_gone", "pending", "released", "replayed", "returned", "timings")
    JOB_GONE_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    RETURNED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    job_gone: bool
    released: int
    returned: int
    pending: int
    replayed: bool
    timings: _containers.RepeatedCompositeFieldContainer[LevelTiming]
    def __init__(
        self,
        job_gone: bool | None = ...,
        released: int | None = ...,
        returned: int | None = ...,
        pending: int | None = ...,
        replayed: bool | None = ...,
        timings: _Iterable[LevelTiming | _Mapping] | None = ...,
    ) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("jobid", "lease_token")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    lease_token: str
    def __init__(self, jobid: int | None = ..., lease_token: str | None = ...) -> None: ...

class ReleaseReply(_message.Message):
    __slots__ = ("pending", "returned", "timings")
    RETURNED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    returned: int
    pending: int
    timings: _containers.RepeatedCompositeFieldContainer[LevelTiming]
    def __init__(
        self,
        returned: int | None = ...,
        pending: int | None = ...,
        timings: _Iterable[LevelTiming | _Mapping] | None = ...,
    ) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("jobid", "lease_token")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    lease_token: str
    def __init__(self, jobid: int | None = ..., lease_token: str | None = ...) -> None: ...

class HeartbeatReply(_message.Message):
    __slots__ = ("grace_s",)
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    grace_s: float
    def __init__(self, grace_s: float | None = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ("graph", "jobid", "recount")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    RECOUNT_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    recount: bool
    graph: bool
    def __init__(
        self, jobid: int | None = ..., recount: bool | None = ..., graph: bool | None = ...
    ) -> None: ...

class InfoReply(_message.Message):
    __slots__ = ("jgf", "json")
    JSON_FIELD_NUMBER: _ClassVar[int]
    JGF_FIELD_NUMBER: _ClassVar[int]
    json: bytes
    jgf: bytes
    def __init__(self, json: bytes | None = ..., jgf: bytes | None = ...) -> None: ...

class StatRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatReply(_message.Message):
    __slots__ = ("by_type", "children", "counters", "edges", "free", "jobs", "uptime_s", "vertices")
    class ByTypeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: str | None = ..., value: int | None = ...) -> None: ...

    class FreeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: str | None = ..., value: int | None = ...) -> None: ...

    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: str | None = ..., value: int | None = ...) -> None: ...

    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    JOBS_FIELD_NUMBER: _ClassVar[int]
    CHILDREN_FIELD_NUMBER: _ClassVar[int]
    BY_TYPE_FIELD_NUMBER: _ClassVar[int]
    FREE_FIELD_NUMBER: _ClassVar[int]
    COUNTERS_FIELD_NUMBER: _ClassVar[int]
    UPTIME_S_FIELD_NUMBER: _ClassVar[int]
    vertices: int
    edges: int
    jobs: int
    children: int
    by_type: _containers.ScalarMap[str, int]
    free: _containers.ScalarMap[str, int]
    counters: _containers.ScalarMap[str, int]
    uptime_s: float
    def __init__(
        self,
        vertices: int | None = ...,
        edges: int | None = ...,
        jobs: int | None = ...,
        children: int | None = ...,
        by_type: _Mapping[str, int] | None = ...,
        free: _Mapping[str, int] | None = ...,
        counters: _Mapping[str, int] | None = ...,
        uptime_s: float | None = ...,
    ) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealthReply(_message.Message):
    __slots__ = ("depth", "instance", "parent", "pid", "status")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    status: str
    instance: str
    depth: int
    pid: int
    parent: str
    def __init__(
        self,
        status: str | None = ...,
        instance: str | None = ...,
        depth: int | None = ...,
        pid: int | None = ...,
        parent: str | None = ...,
    ) -> None: ...
