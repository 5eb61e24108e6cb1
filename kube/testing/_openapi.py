"""OpenAPI v3 and v2 documents for the kinds the stand-in server serves.

kubectl validates what it applies (``kubectl apply`` without ``--validate=false``) and
explains fields (``kubectl explain``) from the server's OpenAPI: it asks ``/openapi/v3``
for the index of group versions, then ``/openapi/v3/<api|apis/G>/<V>`` for one group
version's document, and finds a kind's schema by its ``x-kubernetes-group-version-kind``.
The schemas are not written by hand: they are derived from the models of the official
``kubernetes`` Python client (pydantic, generated from the real server's OpenAPI), so
field names, types, descriptions and required fields are the real API's. Quantities and
int-or-string fields become ``oneOf`` of their two types, as in the real v3 documents.

``/openapi/v2`` is served as JSON or, to a client that asks for it (kubectl validating a
``kind: List`` does), as protobuf: gnostic's ``openapi.v2.Document`` message
(:func:`v2_protobuf`, written field by field from the JSON document; only the fields the
documents here use).
"""

from __future__ import annotations

import functools
import hashlib
import re
import struct
from typing import Any

import orjson

from kube.testing._resources import RESOURCES

__all__ = ["V2_PROTOBUF", "unknown_fields", "v2_document", "v2_protobuf", "v3_document", "v3_index"]

#: the media type kubectl asks ``/openapi/v2`` for (with '@'), and the one answered: '@' is not a
#: MIME token character, so kube-apiserver answers the dotted form, which Go's mime parser accepts
V2_PROTOBUF = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"

#: served kind -> the client model that describes it
_MODEL = {
    ("", "v1", "Event"): "CoreV1Event",
    ("events.k8s.io", "v1", "Event"): "EventsV1Event",
}
_PREFIX = re.compile(r"^(?:[A-Z][a-z]+)?(V\d+(?:alpha\d+|beta\d+)?)([A-Z]\w*)$")
#: map fields whose values are Quantities (string or number)
_QUANTITY_MAPS = frozenset({"requests", "limits", "capacity", "allocatable", "overhead", "hard", "used"})
_QUANTITY = {"oneOf": [{"type": "string"}, {"type": "number"}], "x-kubernetes-int-or-string": True}


def _model_name(group: str, version: str, kind: str) -> str:
    return _MODEL.get((group, version, kind), version[:1].upper() + version[1:] + kind)


def _def_name(model: str) -> str:
    """``V1PodSpec`` -> ``io.k8s.api.v1.PodSpec`` (the part after the last dot is what explain shows)."""
    m = _PREFIX.match(model)
    if not m:
        return f"io.k8s.api.{model}"
    head = model[: m.start(1)].lower()
    return f"io.k8s.api.{head + '.' if head else ''}{m.group(1).lower()}.{m.group(2)}"


def _clean(node: Any, ref: str, field: str = "") -> Any:
    """A pydantic JSON schema node as an OpenAPI one (no nulls, titles, defaults; refs renamed)."""
    if isinstance(node, list):
        return [_clean(x, ref, field) for x in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        out = {"$ref": ref + _def_name(node["$ref"].rsplit("/", 1)[1])}
        if "description" in node:
            return {"allOf": [out], "description": node["description"]}
        return out
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if o.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "default", "title")}
        if len(options) == 1:
            return _clean({**options[0], **rest}, ref, field)
        types = sorted(o.get("type", "") for o in options)
        if types == ["integer", "string"]:
            return {**_clean(rest, ref, field), "oneOf": [{"type": "integer"}, {"type": "string"}],
                    "x-kubernetes-int-or-string": True}  # fmt: skip
        return _clean(rest, ref, field)
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in ("title", "default") or (k == "additionalProperties" and v is False):
            continue
        if k == "description" and isinstance(v, str):
            v = v.split("\n\nAttributes:")[0]
        if k == "properties":
            v = {name: _clean(sub, ref, name) for name, sub in v.items()}
        elif k == "additionalProperties" and field in _QUANTITY_MAPS and v == {"type": "string"}:
            v = dict(_QUANTITY)
        else:
            v = _clean(v, ref, field)
        out[k] = v
    if out.get("type") == "object" and "properties" not in out and "additionalProperties" not in out:
        out.pop("type")  # a free-form object (RawExtension and the like): anything goes
    return out


@functools.cache
def _schemas(ref: str) -> dict[str, dict[str, Any]]:
    """Every definition reachable from the served kinds, named as OpenAPI names them."""
    from kubernetes import client

    out: dict[str, dict[str, Any]] = {}
    for (group, version, _plural), res in sorted(RESOURCES.items()):
        model = getattr(client, _model_name(group, version, res.kind), None)
        if model is None:
            continue
        doc = model.model_json_schema(by_alias=True)
        for name, sub in (doc.pop("$defs", None) or {}).items():
            out.setdefault(_def_name(name), _clean(sub, ref))
        top = _clean(doc, ref)
        top["x-kubernetes-group-version-kind"] = [{"group": group, "version": version, "kind": res.kind}]
        out[_def_name(_model_name(group, version, res.kind))] = top
    return out


def _gv_path(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.cache
def _v3_docs() -> dict[str, bytes]:
    schemas = _schemas("#/components/schemas/")
    docs: dict[str, bytes] = {}
    for group, version in sorted({(g, v) for g, v, _p in RESOURCES}):
        wanted = {
            _def_name(_model_name(g, v, r.kind))
            for (g, v, _p), r in RESOURCES.items()
            if (g, v) == (group, version)
        }
        keep: dict[str, Any] = {}
        todo = list(wanted)
        while todo:  # the kinds of this group version and everything they refer to
            name = todo.pop()
            if name in keep or name not in schemas:
                continue
            keep[name] = schemas[name]
            todo += re.findall(rb'"\$ref":"#/components/schemas/([^"]+)"', orjson.dumps(schemas[name]))
            todo = [t.decode() if isinstance(t, bytes) else t for t in todo]
        doc = {
            "openapi": "3.0.0",
            "info": {"title": "Kubernetes", "version": "v1.31.0"},
            "paths": _paths(group, version),
            "components": {"schemas": dict(sorted(keep.items()))},
        }
        docs[_gv_path(group, version)] = orjson.dumps(doc)
    return docs


def _param(name: str, where: str = "query") -> dict[str, Any]:
    return {"name": name, "in": where, "schema": {"type": "string", "uniqueItems": True}}


def _paths(group: str, version: str) -> dict[str, Any]:
    """The operations of each served resource, tagged with its kind as kubectl looks them up
    (``x-kubernetes-action``, ``x-kubernetes-group-version-kind``; ``dryRun`` and
    ``fieldValidation`` on writes: kubectl then validates on the server, with ``fieldValidation=Strict``)."""
    out: dict[str, Any] = {}
    prefix = f"/apis/{group}/{version}" if group else f"/api/{version}"
    for (g, v, plural), res in sorted(RESOURCES.items()):
        if (g, v) != (group, version):
            continue
        gvk = {"group": g, "kind": res.kind, "version": v}
        ref = {"$ref": "#/components/schemas/" + _def_name(_model_name(g, v, res.kind))}
        body = {"content": {"application/json": {"schema": ref}}}
        ok = {"200": {"description": "OK", **body}, "401": {"description": "Unauthorized"}}
        base = f"{prefix}/namespaces/{{namespace}}/{plural}" if res.namespaced else f"{prefix}/{plural}"
        writes = [_param("dryRun"), _param("fieldManager"), _param("fieldValidation")]

        def op(action: str, params: list[dict[str, Any]], kind: str = res.kind, gvk: Any = gvk,
               ok: Any = ok) -> dict[str, Any]:  # fmt: skip
            return {"operationId": f"{action}{kind}", "x-kubernetes-action": action,
                    "x-kubernetes-group-version-kind": gvk, "parameters": params, "responses": ok}  # fmt: skip

        coll = {"get": op("list", [_param("labelSelector"), _param("fieldSelector"), _param("watch")]),
                "post": {**op("post", writes), "requestBody": body}}  # fmt: skip
        item = {"get": op("get", []), "put": {**op("put", writes), "requestBody": body},
                "patch": {**op("patch", [*writes, _param("force")]), "requestBody": body},
                "delete": op("delete", [_param("dryRun"), _param("gracePeriodSeconds")])}  # fmt: skip
        named = [_param("name", "path")]
        nsd = [_param("namespace", "path")] if res.namespaced else []
        out[base] = {**coll, "parameters": nsd}
        out[base + "/{name}"] = {**item, "parameters": [*named, *nsd]}
    return out


def unknown_fields(group: str, version: str, kind: str, obj: Any) -> list[str]:
    """The paths of fields in ``obj`` that its kind's schema does not have (``spec.foo``,
    ``spec.containers[0].bogus``), as ``fieldValidation=Strict`` reports them."""
    schemas = _schemas("#/components/schemas/")
    top = schemas.get(_def_name(_model_name(group, version, kind)))
    found: list[str] = []

    def walk(value: Any, schema: dict[str, Any] | None, path: str) -> None:
        while schema is not None and ("$ref" in schema or "allOf" in schema):
            target = schema["$ref"] if "$ref" in schema else schema["allOf"][0].get("$ref", "")
            schema = schemas.get(target.rsplit("/", 1)[-1]) if target else None
        if schema is None:
            return
        if isinstance(value, dict):
            props = schema.get("properties")
            extra = schema.get("additionalProperties")
            for k, sub in value.items():
                where = f"{path}.{k}" if path else k
                if props is not None:
                    if k not in props:
                        found.append(where)
                    else:
                        walk(sub, props[k], where)
                elif isinstance(extra, dict):
                    walk(sub, extra, where)
        elif isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, sub in enumerate(value):
                walk(sub, schema["items"], f"{path}[{i}]")

    if top is not None:
        walk(obj, top, "")
    return found


def v3_index() -> dict[str, Any]:
    """``GET /openapi/v3``: each group version's document path with its content hash."""
    paths = {}
    for path, data in _v3_docs().items():
        digest = hashlib.sha512(data).hexdigest()[:128].upper()
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def v3_document(path: str) -> bytes | None:
    """``GET /openapi/v3/<path>`` (``api/v1``, ``apis/apps/v1``, ...), or None when not served."""
    return _v3_docs().get(path)


@functools.cache
def v2_document() -> bytes:
    """``GET /openapi/v2``: one Swagger 2.0 document with every definition."""

    def v2(node: Any) -> Any:  # Swagger 2.0 has no oneOf: int-or-string is a formatted string there
        if isinstance(node, list):
            return [v2(x) for x in node]
        if not isinstance(node, dict):
            return node
        if "oneOf" in node:
            rest = {k: v for k, v in node.items() if k not in ("oneOf", "x-kubernetes-int-or-string")}
            return {**rest, "type": "string", "format": "int-or-string"}
        return {k: v2(x) for k, x in node.items()}

    defs = v2(_schemas("#/definitions/"))
    doc = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": {},
        "definitions": defs,
    }
    return orjson.dumps(doc)


# -- OpenAPI v2 as protobuf -------------------------------------------------------------------
# Field numbers of gnostic's openapi.v2 messages (github.com/google/gnostic-models, openapiv2/
# OpenAPIv2.proto): Document, Info, Definitions/Properties (NamedSchema), Schema, TypeItem,
# ItemsItem, AdditionalPropertiesItem, NamedAny, Any.  The wire format is protobuf's: a key
# (field number << 3 | wire type), then a varint, 8 bytes (double) or a length and bytes.


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _bytes(field: int, data: bytes) -> bytes:
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _str(field: int, text: str) -> bytes:
    return _bytes(field, text.encode())


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n & 0xFFFFFFFFFFFFFFFF)


def _any(field: int, value: Any) -> bytes:
    """An ``openapi.v2.Any`` (its ``yaml``, field 2: JSON is YAML) as field ``field``."""
    return _bytes(field, _str(2, orjson.dumps(value).decode()))


def _named(field: int, name: str, value: bytes) -> bytes:
    return _bytes(field, _str(1, name) + _bytes(2, value))


_SCHEMA_STR = {"$ref": 1, "format": 2, "title": 3, "description": 4, "pattern": 13, "discriminator": 26}
_SCHEMA_DOUBLE = {"multipleOf": 6, "maximum": 7, "minimum": 9}
_SCHEMA_INT = {"maxLength": 11, "minLength": 12, "maxItems": 14, "minItems": 15, "maxProperties": 17,
               "minProperties": 18}  # fmt: skip
_SCHEMA_BOOL = {"exclusiveMaximum": 8, "exclusiveMinimum": 10, "uniqueItems": 16, "readOnly": 27}


def _schema(node: dict[str, Any]) -> bytes:
    """One ``openapi.v2.Schema`` message (fields in number order, as a Go encoder writes them)."""
    parts: list[tuple[int, bytes]] = []
    for key, value in node.items():
        if key in _SCHEMA_STR:
            parts.append((_SCHEMA_STR[key], _str(_SCHEMA_STR[key], str(value))))
        elif key in _SCHEMA_DOUBLE:
            f = _SCHEMA_DOUBLE[key]
            parts.append((f, _varint(f << 3 | 1) + struct.pack("<d", float(value))))
        elif key in _SCHEMA_INT:
            parts.append((_SCHEMA_INT[key], _int(_SCHEMA_INT[key], int(value))))
        elif key in _SCHEMA_BOOL:
            parts.append((_SCHEMA_BOOL[key], _int(_SCHEMA_BOOL[key], 1 if value else 0)))
        elif key == "default":
            parts.append((5, _any(5, value)))
        elif key == "required":
            parts.append((19, b"".join(_str(19, r) for r in value)))
        elif key == "enum":
            parts.append((20, b"".join(_any(20, v) for v in value)))
        elif key == "additionalProperties":
            item = _bytes(1, _schema(value)) if isinstance(value, dict) else _int(2, 1 if value else 0)
            parts.append((21, _bytes(21, item)))
        elif key == "type":
            types = value if isinstance(value, list) else [value]
            parts.append((22, _bytes(22, b"".join(_str(1, t) for t in types))))
        elif key == "items":
            items = value if isinstance(value, list) else [value]
            parts.append((23, _bytes(23, b"".join(_bytes(1, _schema(x)) for x in items))))
        elif key == "allOf":
            parts.append((24, b"".join(_bytes(24, _schema(x)) for x in value)))
        elif key == "properties":
            parts.append((25, _bytes(25, b"".join(_named(1, k, _schema(v)) for k, v in value.items()))))
        elif key == "example":
            parts.append((30, _any(30, value)))
        elif key.startswith("x-"):
            parts.append((31, _named(31, key, _str(2, orjson.dumps(value).decode()))))
    parts.sort(key=lambda p: p[0])  # stable: vendor extensions keep their order
    return b"".join(p for _, p in parts)


@functools.cache
def v2_protobuf() -> bytes:
    """``GET /openapi/v2`` with ``Accept: V2_PROTOBUF``: the document of :func:`v2_document`
    as gnostic's ``openapi.v2.Document`` (swagger 1, info 2, paths 8, definitions 9)."""
    doc = orjson.loads(v2_document())
    info = _str(1, doc["info"]["title"]) + _str(2, doc["info"]["version"])
    defs = b"".join(_named(1, name, _schema(s)) for name, s in doc["definitions"].items())
    return _str(1, doc["swagger"]) + _bytes(2, info) + _bytes(8, b"") + _bytes(9, defs)
