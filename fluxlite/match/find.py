"""``find``: list the resources whose state matches a predicate expression.

Criteria are Fluxion's: ``status=up|down``, ``sched-now=allocated|free``,
``sched-future=reserved|free``, ``jobid-alloc=N``, ``jobid-reserved=N``,
``jobid-span=N``, ``jobid-tag=N``, ``agfilter=true|false``, plus
``names=HOSTLIST`` and ``property=NAME[=VALUE]``, combined with ``and``,
``or`` (evaluated left to right, no precedence), whitespace (``and``) and
parentheses.  A vertex that is down, allocated or reserved makes its whole
subtree match ``status=down``, ``sched-now=allocated`` or
``sched-future=reserved``.  Matching vertices are emitted through a match
writer together with the path from the root to them.
"""

from __future__ import annotations

import time
from typing import Any

from fluxlite.errors import CommandError
from fluxlite.graph import DOWN

__all__ = ["find", "parse_criteria"]

_KEYS = (
    "status",
    "sched-now",
    "sched-future",
    "jobid-alloc",
    "jobid-span",
    "jobid-tag",
    "jobid-reserved",
    "agfilter",
    "names",
    "property",
)


class _Leaf:
    __slots__ = ("key", "value")

    def __init__(self, key: str, value: str) -> None:
        self.key = key
        self.value = value


def _validate(key: str, value: str) -> bool:
    lv = value.lower()
    if key == "status":
        return lv in ("down", "up")
    if key == "sched-now":
        return lv in ("allocated", "free")
    if key == "sched-future":
        return lv in ("reserved", "free")
    if key in ("jobid-alloc", "jobid-span", "jobid-tag", "jobid-reserved"):
        return lv.isdigit()
    if key == "agfilter":
        return lv in ("true", "t", "false", "f")
    if key == "names":
        # as Fluxion's validate: the hostlist must decode (names=socket[af[ is invalid criteria)
        from fluxlite.errors import InputError
        from fluxlite.hostlist import decode as hostlist_decode

        try:
            hostlist_decode(value)
        except InputError:
            return False
        return bool(value)
    if key == "property":
        return bool(value)
    return False


def _skip_ws(e: str, at: int) -> int:
    n = len(e)
    while at < n and e[at] in " \t":
        at += 1
    return at


def parse_criteria(e: str) -> list[Any]:
    """Parse an expression into a flat list: term, op, term, op, ... (terms may be nested lists).

    Raises :class:`CommandError` naming the criteria when it is invalid.
    """

    def bad(why: str) -> CommandError:
        return CommandError(f"invalid criteria: {e} ({why})")

    def parse(s: str) -> list[Any]:
        out: list[Any] = []
        at = 0
        last = len(s.rstrip(" \t"))
        first = True
        while first or at < last:
            if not first:
                if at >= len(s) or s[at] not in " \t":
                    raise bad("expected whitespace between predicates")
                nws = _skip_ws(s, at)
                end = nws
                while end < len(s) and s[end] not in " \t":
                    end += 1
                word = s[nws:end]
                if word in ("and", "or"):
                    out.append(word)
                    at = end
                else:
                    out.append("and")
            first = False
            tok = _skip_ws(s, at)
            if tok >= len(s):
                raise bad("missing predicate")
            if s[tok] == "(":
                bal = 1
                pa = tok + 1
                while bal and pa < len(s):
                    if s[pa] == "(":
                        bal += 1
                    elif s[pa] == ")":
                        bal -= 1
                    pa += 1
                if bal:
                    raise bad("unbalanced parenthesis")
                out.append(parse(s[tok + 1 : pa - 1]))
                at = pa
            else:
                end = tok
                while end < len(s) and s[end] not in " \t":
                    end += 1
                leaf = s[tok:end]
                key, sep, value = leaf.partition("=")
                if not sep:
                    raise bad(f"predicate {leaf!r} needs KEY=VALUE")
                if key not in _KEYS:
                    raise bad(f"unknown predicate {key!r}; known: {', '.join(_KEYS)}")
                if not _validate(key, value):
                    raise bad(f"bad value {value!r} for {key}")
                out.append(_Leaf(key, value))
                at = end
        return out

    if not e.strip():
        raise bad("empty expression")
    return parse(e)


def _leaves(expr: list[Any]) -> list[_Leaf]:
    out = []
    for t in expr:
        if isinstance(t, list):
            out.extend(_leaves(t))
        elif isinstance(t, _Leaf):
            out.append(t)
    return out


def find(tr: Any, writer: Any, criteria: str) -> None:
    """Emit every vertex matching ``criteria`` (and its path from the root) through ``writer``."""
    expr = parse_criteria(criteria)
    jobid = 0
    agfilter = False
    for leaf in _leaves(expr):
        if leaf.key in ("jobid-alloc", "jobid-span", "jobid-tag", "jobid-reserved"):
            jobid = int(leaf.value)
        elif leaf.key == "agfilter":
            agfilter = leaf.value.lower() in ("true", "t")
    g = tr.g
    dom = tr.dom
    if dom not in g.roots:
        raise CommandError("find: the graph has no root in the dominant subsystem")
    tr.tick()
    tr.trav_level = 0
    tr.err_msg = ""
    rc = _find_dfv(tr, writer, expr, g.roots[dom], (False, False, False), jobid, agfilter)
    if rc < 0:
        msg = tr.err_msg.strip() or "find failed"
        raise CommandError(msg)
    writer.emit_tm(0, 0)


def _eval(tr: Any, expr: list[Any], u: int, over: tuple[bool, bool, bool]) -> bool:
    result = False
    op = "and"
    first = True
    for t in expr:
        if isinstance(t, str):
            op = t
            continue
        r = _eval(tr, t, u, over) if isinstance(t, list) else _eval_leaf(tr, t, u, over)
        if first:
            result = r
            first = False
        elif op == "and":
            result = result and r
        else:
            result = result or r
    return result


def _eval_leaf(tr: Any, leaf: _Leaf, u: int, over: tuple[bool, bool, bool]) -> bool:
    g = tr.g
    key = leaf.key
    lv = leaf.value.lower()
    down, alloc, resv = over
    if key == "status":
        if lv == "down":
            return down or g.v_status[u] == DOWN
        return not down and g.v_status[u] != DOWN
    if key == "sched-now":
        if lv == "allocated":
            return alloc or bool(tr.allocs[u])
        return not alloc and not tr.allocs[u]
    if key == "sched-future":
        if lv == "reserved":
            return resv or bool(tr.resvs[u])
        return not resv and not tr.resvs[u]
    if key == "jobid-alloc":
        d = tr.allocs[u]
        return d is not None and int(lv) in d
    if key == "jobid-reserved":
        d = tr.resvs[u]
        return d is not None and int(lv) in d
    if key == "jobid-span":
        col = tr.job2span.get(tr.dom)
        d = col[u] if col is not None else None
        return d is not None and int(lv) in d
    if key == "jobid-tag":
        d = tr.tags[u]
        return d is not None and int(lv) in d
    if key == "agfilter":
        return lv in ("true", "t")
    if key == "names":
        from fluxlite.hostlist import decode as hostlist_decode

        return g.v_name[u] in set(hostlist_decode(leaf.value))
    if key == "property":
        name, sep, value = leaf.value.partition("=")
        props = g.properties(u)
        return name in props and (not sep or props[name] == value)
    return False


def _find_dfv(
    tr: Any, w: Any, expr: list[Any], u: int, over: tuple[bool, bool, bool], jobid: int, agfilter: bool
) -> int:
    g = tr.g
    down = over[0] or g.v_status[u] == DOWN
    alloc = over[1] or bool(tr.allocs[u])
    resv = over[2] or bool(tr.resvs[u])
    mine = (down, alloc, resv)
    tr.trav_level += 1
    try:
        nchildren = 0
        dom = tr.dom
        for ss in tr.subsystems:
            if ss != dom:
                continue
            col = g.out.get(ss)
            if col is None:
                continue
            for e in col[u]:
                rc = _find_dfv(tr, w, expr, g.e_dst[e], mine, jobid, agfilter)
                if rc > 0:
                    w.emit_edg(tr._level(), g, e)
                    nchildren += rc
                elif rc < 0:
                    return rc
        result = _eval(tr, expr, u, mine)
        if not result and not nchildren:
            return 0
        data: dict[str, str] | None = None
        if agfilter:
            col2 = tr.subplan.get(dom)
            p = col2[u] if col2 is not None else None
            if p is None:
                return 0
            data = {}
            if jobid == 0:
                now = int(time.time())
                for i, t in enumerate(p.resource_types):
                    total = p.resource_total_at(i)
                    free_now = p.avail_resources_at(now, i)
                    if free_now == total:
                        tmp = p.avail_resources_at(0, i)
                        if tmp != total:
                            free_now = tmp
                    data[t] = f"used:{total - free_now}, total:{total}"
            else:
                j2s = tr.job2span.get(dom)
                d = j2s[u] if j2s is not None else None
                if d is None or jobid not in d:
                    tr.err_msg += f"dom_find_dfv: span missing in job2span  for vertex: {g.v_name[u]}\n"
                    return -1
                for i, t in enumerate(p.resource_types):
                    data[t] = f"used:{p.span_planned_at(d[jobid], i)}, total:{p.resource_total_at(i)}"
        if data:
            data = {k: data[k] for k in sorted(data)}
        w.emit_vtx(tr._level(), g, u, g.v_size[u], data, True)
        return nchildren + 1
    finally:
        tr.trav_level -= 1
