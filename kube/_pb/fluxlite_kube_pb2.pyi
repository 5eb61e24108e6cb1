from kube._pb import fluxcli_pb2 as _fluxcli_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class GrowRequest(_message.Message):
    __slots__ = ("jobID", "ps", "count")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    PS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    jobID: int
    ps: _fluxcli_pb2.PodSpec
    count: int
    def __init__(self, jobID: _Optional[int] = ..., ps: _Optional[_Union[_fluxcli_pb2.PodSpec, _Mapping]] = ..., count: _Optional[int] = ...) -> None: ...

class ShrinkRequest(_message.Message):
    __slots__ = ("jobID", "nodelist")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    NODELIST_FIELD_NUMBER: _ClassVar[int]
    jobID: int
    nodelist: _containers.RepeatedCompositeFieldContainer[_fluxcli_pb2.NodeAlloc]
    def __init__(self, jobID: _Optional[int] = ..., nodelist: _Optional[_Iterable[_Union[_fluxcli_pb2.NodeAlloc, _Mapping]]] = ...) -> None: ...

class ShrinkResponse(_message.Message):
    __slots__ = ("jobID", "released", "jobGone")
    JOBID_FIELD_NUMBER: _ClassVar[int]
    RELEASED_FIELD_NUMBER: _ClassVar[int]
    JOBGONE_FIELD_NUMBER: _ClassVar[int]
    jobID: int
    released: int
    jobGone: bool
    def __init__(self, jobID: _Optional[int] = ..., released: _Optional[int] = ..., jobGone: _Optional[bool] = ...) -> None: ...
