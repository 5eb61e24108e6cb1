"""The three PATCH formats of the Kubernetes API, on plain JSON values.

* JSON merge patch (RFC 7386, ``application/merge-patch+json``): objects merge key by key,
  ``null`` deletes, every other value (lists included) replaces.
* Strategic merge patch (``application/strategic-merge-patch+json``): a merge patch that
  knows, per field, whether a list is atomic or merged by a key (``conditions`` by
  ``type``, ``containers`` by ``name``, ``ownerReferences`` by ``uid``, ...), with the
  ``$patch: delete|replace|merge`` and ``$deleteFromPrimitiveList/<field>`` directives.
  The field table below covers the core/v1 and apps/v1 types a scheduler and a
  ReplicaSet controller touch; an unlisted list field is atomic (replaced), as in the
  real API for lists without a ``patchStrategy``.
* JSON patch (RFC 6902, ``application/json-patch+json``): add, remove, replace, move,
  copy and test on JSON pointers.

Every function returns a new value and leaves its arguments unchanged; a patch that does
not apply raises :class:`PatchError` (the server answers 422 or 400).
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["MalformedPatch", "PatchError", "json_patch", "merge_patch", "strategic_merge_patch"]


class PatchError(ValueError):
    """A patch that does not apply to the object (the server answers 422)."""


class MalformedPatch(PatchError):
    """A patch that is not a patch of its kind at all (the server answers 400)."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 merge of *patch* into *target*."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


# Field name -> merge key of its list items (patchStrategy "merge" in the API types).
# Lists of primitives with the merge strategy are in _SET_LISTS.
_MERGE_KEYS = {
    "conditions": "type",
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "containerStatuses": "name",
    "initContainerStatuses": "name",
    "env": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "volumes": "name",
    "imagePullSecrets": "name",
    "ownerReferences": "uid",
    "taints": "key",
    "addresses": "type",
    "hostAliases": "ip",
    "podIPs": "ip",
    "hostIPs": "ip",
    "resourceClaims": "name",
    "schedulingGates": "name",
}
_SET_LISTS = {"finalizers"}


def strategic_merge_patch(target: Any, patch: Any) -> Any:
    """Strategic merge of *patch* into *target* (see the module docstring)."""
    if not isinstance(patch, dict):
        return _strip(patch)
    directive = patch.get("$patch")
    if directive == "replace":
        return _strip({k: v for k, v in patch.items() if k != "$patch"})
    if directive == "delete":
        return None
    if directive not in (None, "merge"):
        raise MalformedPatch(f"unknown patch type: {directive!r}")
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key == "$patch" or key.startswith(("$setElementOrder/", "$retainKeys")):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if not isinstance(value, list):
                raise MalformedPatch(f"{key}: expected a list")
            if isinstance(result.get(field), list):
                result[field] = [x for x in result[field] if x not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            merged = strategic_merge_patch(result.get(key), value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and key in _MERGE_KEYS:
            result[key] = _merge_list(result.get(key), value, _MERGE_KEYS[key], key)
        elif isinstance(value, list) and key in _SET_LISTS:
            old = result.get(key) if isinstance(result.get(key), list) else []
            result[key] = old + [x for x in value if x not in old]
        else:
            result[key] = _strip(value)
    return result


def _merge_list(target: Any, patch: list, merge_key: str, field: str) -> list:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [_strip(item) for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    result = copy.deepcopy(target) if isinstance(target, list) else []
    for item in patch:
        if not isinstance(item, dict):
            raise PatchError(f"{field}: list items must be objects merged by {merge_key!r}")
        if merge_key not in item:
            raise PatchError(f"{field}: map does not contain declared merge key: {merge_key}")
        index = next(
            (
                i
                for i, old in enumerate(result)
                if isinstance(old, dict) and old.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                del result[index]
        elif index is None:
            result.append(_strip({k: v for k, v in item.items() if k != "$patch"}))
        else:
            result[index] = strategic_merge_patch(result[index], item)
    return result


def _strip(value: Any) -> Any:
    """A patch value with its directives removed and its nulls kept out of new objects."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if not k.startswith("$") and v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 JSON patch: apply *operations* in order, all or nothing."""
    if not isinstance(operations, list):
        raise MalformedPatch("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise MalformedPatch(f"invalid JSON patch operation: {op!r}")
        kind, path = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, path, copy.deepcopy(_value(op)))
        elif kind == "remove":
            doc, _ = _remove(doc, path)
        elif kind == "replace":
            doc, _ = _remove(doc, path)
            doc = _add(doc, path, copy.deepcopy(_value(op)))
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            if kind == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, path, value)
        elif kind == "test":
            if _get(doc, path) != _value(op):
                raise PatchError(f"test operation failed at {op['path']}")
        else:
            raise MalformedPatch(f"unknown JSON patch operation {kind!r}")
    return doc


def _value(op: dict) -> Any:
    if "value" not in op:
        raise PatchError(f"operation {op['op']!r} at {op['path']} needs a value")
    return op["value"]


def _pointer(text: Any) -> list[str]:
    if not isinstance(text, str) or (text and not text.startswith("/")):
        raise PatchError(f"invalid JSON pointer {text!r}")
    return [part.replace("~1", "/").replace("~0", "~") for part in text.split("/")[1:]]


def _parent(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path[:-1]:
        node = _child(node, part)
    return node


def _child(node: Any, part: str) -> Any:
    if isinstance(node, dict):
        if part not in node:
            raise PatchError(f"path component {part!r} does not exist")
        return node[part]
    if isinstance(node, list):
        return node[_index(node, part, insert=False)]
    raise PatchError(f"cannot index a {type(node).__name__} with {part!r}")


def _index(node: list, part: str, *, insert: bool) -> int:
    if insert and part == "-":
        return len(node)
    if not part.isdigit():
        raise PatchError(f"invalid list index {part!r}")
    index = int(part)
    if index > len(node) or (index == len(node) and not insert):
        raise PatchError(f"list index {index} out of range")
    return index


def _get(doc: Any, path: list[str]) -> Any:
    node = doc
    for part in path:
        node = _child(node, part)
    return node


def _add(doc: Any, path: list[str], value: Any) -> Any:
    if not path:
        return value
    parent = _parent(doc, path)
    if isinstance(parent, dict):
        parent[path[-1]] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, path[-1], insert=True), value)
    else:
        raise PatchError(f"cannot add to a {type(parent).__name__}")
    return doc


def _remove(doc: Any, path: list[str]) -> tuple[Any, Any]:
    if not path:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, path)
    if isinstance(parent, dict):
        if path[-1] not in parent:
            raise PatchError(f"path {'/'.join(path)!r} does not exist")
        return doc, parent.pop(path[-1])
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, path[-1], insert=False))
    raise PatchError(f"cannot remove from a {type(parent).__name__}")
