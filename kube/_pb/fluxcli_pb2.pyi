from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class PodSpec(_message.Message):
    __slots__ = ("id", "container", "cpu", "memory", "gpu", "storage", "labels")
    ID_FIELD_NUMBER: _ClassVar[int]
    CONTAINER_FIELD_NUMBER: _ClassVar[int]
    CPU_FIELD_NUMBER: _ClassVar[int]
    MEMORY_FIELD_NUMBER: _ClassVar[int]
    GPU_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    LABELS_FIELD_NUMBER: _ClassVar[int]
    id: str
    container: str
    cpu: int
    memory: int
    gpu: int
    storage: int
    labels: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, id: _Optional[str] = ..., container: _Optional[str] = ..., cpu: _Optional[int] = ..., memory: _Optional[int] = ..., gpu: _Optional[int] = ..., storage: _Optional[int] = ..., labels: _Optional[_Iterable[str]] = ...) -> None: ...

class MatchRequest(_message.Message):
    __slots__ = ("ps", "request", "count")
    PS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    ps: PodSpec
    request: str
    count: int
    def __init__(self, ps: _Optional[_Union[PodSpec, _Mapping]] = ..., request: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class NodeAlloc(_message.Message):
    __slots__ = ("nodeID", "tasks")
    NODEID_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    nodeID: str
    tasks: int
    def __init__(self, nodeID: _Optional[str] = ..., tasks: _Optional[int] = ...) -> None: ...

class MatchResponse(_message.Message):
    __slots__ = ("podID", "nodelist", "jobID")
    PODID_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    JOBID_FIELD_NUMBER: _ClassVar[int]
    podID: str
    nodelist: _containers.RepeatedCompositeFieldContainer[NodeAlloc]
    jobID: int
    def __init__(self, podID: _Optional[str] = ..., nodelist: _Optional[_Iterable[_Union[NodeAlloc, _Mapping]]] = ..., jobID: _Optional[int] = ...) -> None: ...

class CancelRequest(_message.Message):
    __slots__ = ("jobID",)
    JOBID_FIELD_NUMBER: _ClassVar[int]
    jobID: int
    def __init__(self, jobID: _Optional[int] = ...) -> None: ...

class CancelResponse(_message.Message):
    __slots__ = ("jobID", "error")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    jobID: int
    error: int
    def __init__(self, jobID: _Optional[int] = ..., error: _Optional[int] = ...) -> None: ...

class NodeStatus(_message.Message):
    __slots__ = ("cpuAvail", "gpuAvail", "storageAvail", "memoryAvail", "allowedPods", "nodeIP", "replication")
    CPUAVAIL_FIELD_NUMBER: _ClassVar[int]
    GPUAVAIL_FIELD_NUMBER: _ClassVar[int]
    STORAGEAVAIL_FIELD_NUMBER: _ClassVar[int]
    MEMORYAVAIL_FIELD_NUMBER: _ClassVar[int]
    ALLOWEDPODS_FIELD_NUMBER: _ClassVar[int]
    NODEIP_FIELD_NUMBER: _ClassVar[int]
    REPLICATION_FIELD_NUMBER: _ClassVar[int]
    cpuAvail: int
    gpuAvail: int
    storageAvail: int
    memoryAvail: int
    allowedPods: int
    nodeIP: str
    replication: int
    def __init__(self, cpuAvail: _Optional[int] = ..., gpuAvail: _Optional[int] = ..., storageAvail: _Optional[int] = ..., memoryAvail: _Optional[int] = ..., allowedPods: _Optional[int] = ..., nodeIP: _Optional[str] = ..., replication: _Optional[int] = ...) -> None: ...

class JGFRequest(_message.Message):
    __slots__ = ("jgf",)
    JGF_FIELD_NUMBER: _ClassVar[int]
    jgf: str
    def __init__(self, jgf: _Optional[str] = ...) -> None: ...

class JGFResponse(_message.Message):
    __slots__ = ("jgf",)
    JGF_FIELD_NUMBER: _ClassVar[int]
    jgf: str
    def __init__(self, jgf: _Optional[str] = ...) -> None: ...
