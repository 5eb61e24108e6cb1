from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class LevelTiming(_message.Message):
    __slots__ = ("instance", "depth", "match_s", "attach_update_s", "upstream_s", "server_s", "outcome", "deferred")
    INSTANCE_FIELD_NUMBER: _ClassVar[int]
    DEPTH_FIELD_NUMBER: _ClassVar[int]
    MATCH_S_FIELD_NUMBER: _ClassVar[int]
    ATTACH_UPDATE_S_FIELD_NUMBER: _ClassVar[int]
    UPSTREAM_S_FIELD_NUMBER: _ClassVar[int]
    SERVER_S_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    DEFERRED_FIELD_NUMBER: _ClassVar[int]
    instance: str
    depth: int
    match_s: float
    attach_update_s: float
    upstream_s: float
    server_s: float
    outcome: str
    deferred: bool
    def __init__(self, instance: _Optional[str] = ..., depth: _Optional[int] = ..., match_s: _Optional[float] = ..., attach_update_s: _Optional[float] = ..., upstream_s: _Optional[float] = ..., server_s: _Optional[float] = ..., outcome: _Optional[str] = ..., deferred: _Optional[bool] = ...) -> None: ...

class MatchAllocateRequest(_message.Message):
    __slots__ = ("jobspec", "request_id", "lease", "child_name", "child_address", "lease_secret")
    JOBSPEC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_FIELD_NUMBER: _ClassVar[int]
    CHILD_NAME_FIELD_NUMBER: _ClassVar[int]
    CHILD_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    LEASE_SECRET_FIELD_NUMBER: _ClassVar[int]
    jobspec: bytes
    request_id: str
    lease: bool
    child_name: str
    child_address: str
    lease_secret: str
    def __init__(self, jobspec: _Optional[bytes] = ..., request_id: _Optional[str] = ..., lease: _Optional[bool] = ..., child_name: _Optional[str] = ..., child_address: _Optional[str] = ..., lease_secret: _Optional[str] = ...) -> None: ...

class MatchGrowRequest(_message.Message):
    __slots__ = ("jobid", "jobspec", "request_id", "lease_token", "accept_columns", "columns_version")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    JOBSPEC_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    ACCEPT_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_VERSION_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    jobspec: bytes
    request_id: str
    lease_token: str
    accept_columns: bool
    columns_version: int
    def __init__(self, jobid: _Optional[int] = ..., jobspec: _Optional[bytes] = ..., request_id: _Optional[str] = ..., lease_token: _Optional[str] = ..., accept_columns: _Optional[bool] = ..., columns_version: _Optional[int] = ...) -> None: ...

class MatchReply(_message.Message):
    __slots__ = ("jobid", "jgf", "lease_token", "grace_s", "replayed", "vertices", "edges", "timings", "columns", "columns_version")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    JGF_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    REPLAYED_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_VERSION_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    jgf: bytes
    lease_token: str
    grace_s: float
    replayed: bool
    vertices: int
    edges: int
    timings: _containers.RepeatedCompositeFieldContainer[LevelTiming]
    columns: bytes
    columns_version: int
    def __init__(self, jobid: _Optional[int] = ..., jgf: _Optional[bytes] = ..., lease_token: _Optional[str] = ..., grace_s: _Optional[float] = ..., replayed: _Optional[bool] = ..., vertices: _Optional[int] = ..., edges: _Optional[int] = ..., timings: _Optional[_Iterable[_Union[LevelTiming, _Mapping]]] = ..., columns: _Optional[bytes] = ..., columns_version: _Optional[int] = ...) -> None: ...

class IntColumn(_message.Message):
    __slots__ = ("value", "values", "width")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    WIDTH_FIELD_NUMBER: _ClassVar[int]
    value: int
    values: bytes
    width: int
    def __init__(self, value: _Optional[int] = ..., values: _Optional[bytes] = ..., width: _Optional[int] = ...) -> None: ...

class NodeName(_message.Message):
    __slots__ = ("node", "name")
    NODE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    node: int
    name: str
    def __init__(self, node: _Optional[int] = ..., name: _Optional[str] = ...) -> None: ...

class NodeProperties(_message.Message):
    __slots__ = ("node", "keys", "values")
    NODE_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    node: int
    keys: _containers.RepeatedScalarFieldContainer[str]
    values: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, node: _Optional[int] = ..., keys: _Optional[_Iterable[str]] = ..., values: _Optional[_Iterable[str]] = ...) -> None: ...

class ResourceColumns(_message.Message):
    __slots__ = ("version", "nodes", "edges", "strings", "type", "basename", "names", "id", "uniq_id", "rank", "size", "unit", "status", "exclusive", "properties", "subsystem", "paths", "source", "target", "edge_subsystem")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    STRINGS_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    BASENAME_FIELD_NUMBER: _ClassVar[int]
    NAMES_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    UNIQ_ID_FIELD_NUMBER: _ClassVar[int]
    RANK_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    UNIT_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    EXCLUSIVE_FIELD_NUMBER: _ClassVar[int]
    PROPERTIES_FIELD_NUMBER: _ClassVar[int]
    SUBSYSTEM_FIELD_NUMBER: _ClassVar[int]
    PATHS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TARGET_FIELD_NUMBER: _ClassVar[int]
    EDGE_SUBSYSTEM_FIELD_NUMBER: _ClassVar[int]
    version: int
    nodes: int
    edges: int
    strings: _containers.RepeatedScalarFieldContainer[str]
    type: IntColumn
    basename: IntColumn
    names: _containers.RepeatedCompositeFieldContainer[NodeName]
    id: IntColumn
    uniq_id: IntColumn
    rank: IntColumn
    size: IntColumn
    unit: IntColumn
    status: IntColumn
    exclusive: IntColumn
    properties: _containers.RepeatedCompositeFieldContainer[NodeProperties]
    subsystem: int
    paths: str
    source: IntColumn
    target: IntColumn
    edge_subsystem: IntColumn
    def __init__(self, version: _Optional[int] = ..., nodes: _Optional[int] = ..., edges: _Optional[int] = ..., strings: _Optional[_Iterable[str]] = ..., type: _Optional[_Union[IntColumn, _Mapping]] = ..., basename: _Optional[_Union[IntColumn, _Mapping]] = ..., names: _Optional[_Iterable[_Union[NodeName, _Mapping]]] = ..., id: _Optional[_Union[IntColumn, _Mapping]] = ..., uniq_id: _Optional[_Union[IntColumn, _Mapping]] = ..., rank: _Optional[_Union[IntColumn, _Mapping]] = ..., size: _Optional[_Union[IntColumn, _Mapping]] = ..., unit: _Optional[_Union[IntColumn, _Mapping]] = ..., status: _Optional[_Union[IntColumn, _Mapping]] = ..., exclusive: _Optional[_Union[IntColumn, _Mapping]] = ..., properties: _Optional[_Iterable[_Union[NodeProperties, _Mapping]]] = ..., subsystem: _Optional[int] = ..., paths: _Optional[str] = ..., source: _Optional[_Union[IntColumn, _Mapping]] = ..., target: _Optional[_Union[IntColumn, _Mapping]] = ..., edge_subsystem: _Optional[_Union[IntColumn, _Mapping]] = ...) -> None: ...

class ShrinkRequest(_message.Message):
    __slots__ = ("jobid", "jgf", "paths", "lease_token", "request_id")
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
    def __init__(self, jobid: _Optional[int] = ..., jgf: _Optional[bytes] = ..., paths: _Optional[_Iterable[str]] = ..., lease_token: _Optional[str] = ..., request_id: _Optional[str] = ...) -> None: ...

class ShrinkChunk(_message.Message):
    __slots__ = ("head", "jgf_size", "jgf")
    HEAD_FIELD_NUMBER: _ClassVar[int]
    JGF_SIZE_FIELD_NUMBER: _ClassVar[int]
    JGF_FIELD_NUMBER: _ClassVar[int]
    head: ShrinkRequest
    jgf_size: int
    jgf: bytes
    def __init__(self, head: _Optional[_Union[ShrinkRequest, _Mapping]] = ..., jgf_size: _Optional[int] = ..., jgf: _Optional[bytes] = ...) -> None: ...

class ShrinkReply(_message.Message):
    __slots__ = ("job_gone", "released", "returned", "pending", "replayed", "timings")
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
    def __init__(self, job_gone: _Optional[bool] = ..., released: _Optional[int] = ..., returned: _Optional[int] = ..., pending: _Optional[int] = ..., replayed: _Optional[bool] = ..., timings: _Optional[_Iterable[_Union[LevelTiming, _Mapping]]] = ...) -> None: ...

class ReleaseRequest(_message.Message):
    __slots__ = ("jobid", "lease_token")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    lease_token: str
    def __init__(self, jobid: _Optional[int] = ..., lease_token: _Optional[str] = ...) -> None: ...

class ReleaseReply(_message.Message):
    __slots__ = ("returned", "pending", "timings")
    RETURNED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    TIMINGS_FIELD_NUMBER: _ClassVar[int]
    returned: int
    pending: int
    timings: _containers.RepeatedCompositeFieldContainer[LevelTiming]
    def __init__(self, returned: _Optional[int] = ..., pending: _Optional[int] = ..., timings: _Optional[_Iterable[_Union[LevelTiming, _Mapping]]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("jobid", "lease_token")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    LEASE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    lease_token: str
    def __init__(self, jobid: _Optional[int] = ..., lease_token: _Optional[str] = ...) -> None: ...

class HeartbeatReply(_message.Message):
    __slots__ = ("grace_s", "down")
    GRACE_S_FIELD_NUMBER: _ClassVar[int]
    DOWN_FIELD_NUMBER: _ClassVar[int]
    grace_s: float
    down: _containers.RepeatedCompositeFieldContainer[NodeDown]
    def __init__(self, grace_s: _Optional[float] = ..., down: _Optional[_Iterable[_Union[NodeDown, _Mapping]]] = ...) -> None: ...

class NodeDown(_message.Message):
    __slots__ = ("path", "state", "policy")
    PATH_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    path: str
    state: str
    policy: str
    def __init__(self, path: _Optional[str] = ..., state: _Optional[str] = ..., policy: _Optional[str] = ...) -> None: ...

class InfoRequest(_message.Message):
    __slots__ = ("jobid", "recount", "graph")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    RECOUNT_FIELD_NUMBER: _ClassVar[int]
    GRAPH_FIELD_NUMBER: _ClassVar[int]
    jobid: int
    recount: bool
    graph: bool
    def __init__(self, jobid: _Optional[int] = ..., recount: _Optional[bool] = ..., graph: _Optional[bool] = ...) -> None: ...

class InfoReply(_message.Message):
    __slots__ = ("json", "jgf")
    JSON_FIELD_NUMBER: _ClassVar[int]
    JGF_FIELD_NUMBER: _ClassVar[int]
    json: bytes
    jgf: bytes
    def __init__(self, json: _Optional[bytes] = ..., jgf: _Optional[bytes] = ...) -> None: ...

class StatRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StatReply(_message.Message):
    __slots__ = ("vertices", "edges", "jobs", "children", "by_type", "free", "counters", "uptime_s")
    class ByTypeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class FreeEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
    class CountersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: int
        def __init__(self, key: _Optional[str] = ..., value: _Optional[int] = ...) -> None: ...
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
    def __init__(self, vertices: _Optional[int] = ..., edges: _Optional[int] = ..., jobs: _Optional[int] = ..., children: _Optional[int] = ..., by_type: _Optional[_Mapping[str, int]] = ..., free: _Optional[_Mapping[str, int]] = ..., counters: _Optional[_Mapping[str, int]] = ..., uptime_s: _Optional[float] = ...) -> None: ...

class HealthRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class HealthReply(_message.Message):
    __slots__ = ("status", "instance", "depth", "pid", "parent")
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
    def __init__(self, status: _Optional[str] = ..., instance: _Optional[str] = ..., depth: _Optional[int] = ..., pid: _Optional[int] = ..., parent: _Optional[str] = ...) -> None: ...
