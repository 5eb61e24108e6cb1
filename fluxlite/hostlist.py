"""Host lists as text (``node[17-19]``), with flux-core's ``hostlist`` semantics.

A :class:`HostList` is an ordered list of *host ranges*: a prefix plus a
run of numeric suffixes ``lo..hi`` printed zero-padded to a width
(``node[01-04]``), or a single host whose name has no numeric suffix.
Appending a host that continues the last range (same prefix, next number,
compatible zero padding) extends that range instead of adding one, which is
how ``node0, node1, node2`` becomes ``node[0-2]``.  The list is never
sorted or de-duplicated implicitly: order is the order of appends, as in
flux-core, so ``node2,node1`` stays ``node[2,1]``.

:func:`encode` (hosts -> text) and :func:`decode` (text -> hosts) are the
module's entry points; Fluxion's writers build ``nodelist`` by appending the
hostnames in rank order and encoding the result.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from fluxlite.errors import InputError

__all__ = ["HostList", "decode", "encode"]

_MAX_RANGE = 1 << 20  # largest lo-hi span accepted inside brackets
_MAX_RANGES = 10240  # most comma-separated ranges inside one pair of brackets
_ULONG_MAX = 2**64 - 1
_SEPARATORS = "\t, "
_INVALID = set(",[]\t ")
_SPACE = " \t\n\v\f\r"


class _Range:
    """One host range: ``prefix`` + numbers ``lo..hi`` padded to ``width``, or a single host."""

    __slots__ = ("hi", "lo", "prefix", "single", "width")

    def __init__(self, prefix: str, lo: int = 0, hi: int = 0, width: int = 0, single: bool = False) -> None:
        self.prefix = prefix
        self.lo = lo
        self.hi = hi
        self.width = width
        self.single = single

    def copy(self) -> _Range:
        return _Range(self.prefix, self.lo, self.hi, self.width, self.single)

    def count(self) -> int:
        return 1 if self.single else self.hi - self.lo + 1

    def host(self, depth: int) -> str:
        if self.single:
            return self.prefix
        return f"{self.prefix}{self.lo + depth:0{self.width}d}"


def _same_prefix(a: _Range, b: _Range | None) -> bool:
    """flux-core's ``hostrange_prefix_cmp() == 0``: equal prefixes and the same kind."""
    return b is not None and a.prefix == b.prefix and a.single == b.single


def _zero_padded(num: int, width: int) -> int:
    n = len(str(num))
    return width - n if width > n else 0


def _width_combine(a: _Range, b: _Range) -> bool:
    """flux-core's ``width_equiv()``: can the two paddings be merged?  May adjust a width."""
    npad = _zero_padded(a.lo, a.width)
    nmpad = _zero_padded(a.lo, b.width)
    mpad = _zero_padded(b.lo, b.width)
    mnpad = _zero_padded(b.lo, a.width)
    if npad != nmpad and mpad != mnpad:
        return False
    if npad != nmpad:
        b.width = a.width
    else:
        a.width = b.width
    return True


def _within(a: _Range, b: _Range | None) -> bool:
    """Would ``a`` and ``b`` share one bracketed group when printed?"""
    return _same_prefix(a, b) and not a.single and not b.single  # type: ignore[union-attr]


def _split_host(host: str) -> _Range | None:
    """A single hostname as a one-host range; None if its numeric suffix overflows."""
    end = len(host)
    while end > 0 and "0" <= host[end - 1] <= "9":
        end -= 1
    if end == len(host):
        return _Range(host, single=True)
    num = int(host[end:])
    if num > _ULONG_MAX:
        return None
    return _Range(host[:end], num, num, len(host) - end)


def _strtoul_full(text: str) -> tuple[int, bool] | None:
    """strtoul(3) over the whole of ``text``: (value, parsed-everything) or None if no digits."""
    i = 0
    n = len(text)
    while i < n and text[i] in _SPACE:
        i += 1
    neg = False
    if i < n and text[i] in "+-":
        neg = text[i] == "-"
        i += 1
    j = i
    while j < n and "0" <= text[j] <= "9":
        j += 1
    if j == i:
        return None
    val = min(int(text[i:j]), _ULONG_MAX)
    if neg and val:
        val = _ULONG_MAX + 1 - val
    return val, j == n


def _parse_range(tok: str) -> tuple[int, int, int]:
    """One ``lo`` or ``lo-hi`` item inside brackets -> (lo, hi, width)."""
    dash = tok.find("-")
    lo_txt = tok if dash < 0 else tok[:dash]
    if dash >= 0 and tok[dash + 1 : dash + 2] == "-":
        raise InputError("invalid hostlist range (negative number)", range=tok)
    lo_got = _strtoul_full(lo_txt)
    if lo_got is None:
        raise InputError("invalid hostlist range", range=tok)
    lo, lo_all = lo_got
    hi_txt = "" if dash < 0 else tok[dash + 1 :]
    if hi_txt:
        hi_got = _strtoul_full(hi_txt)
        if hi_got is None or not hi_got[1]:
            raise InputError("invalid hostlist range", range=tok)
        hi = hi_got[0]
    else:
        if not lo_all:
            raise InputError("invalid hostlist range", range=tok)
        hi = lo
    if lo > hi:
        raise InputError("invalid hostlist range (lo > hi)", range=tok)
    if hi - lo + 1 > _MAX_RANGE:
        raise InputError("hostlist range too large", range=tok)
    return lo, hi, len(lo_txt)


def _tokens(text: str) -> Iterator[str]:
    """Split on tabs, commas and spaces, except inside brackets."""
    i = 0
    n = len(text)
    while True:
        while i < n and text[i] in _SEPARATORS:
            i += 1
        if i >= n:
            return
        start = i
        level = 0
        while i < n and (level != 0 or text[i] not in _SEPARATORS):
            if text[i] == "[":
                level += 1
            elif text[i] == "]":
                level -= 1
            i += 1
        yield text[start:i]


class HostList:
    """An ordered list of hostnames stored as compressed ranges (flux-core semantics)."""

    __slots__ = ("_nhosts", "_ranges")

    def __init__(self, hosts: str | Iterable[str] | None = None) -> None:
        self._ranges: list[_Range] = []
        self._nhosts = 0
        if hosts is None:
            return
        if isinstance(hosts, str):
            self.append(hosts)
        else:
            for h in hosts:
                self.append(h)

    # ------------------------------------------------------------ building
    def _push(self, hr: _Range) -> None:
        ranges = self._ranges
        if ranges:
            tail = ranges[-1]
            if _same_prefix(tail, hr) and tail.hi == hr.lo - 1 and _width_combine(tail, hr):
                tail.hi = hr.hi
                self._nhosts += hr.count()
                return
        ranges.append(hr.copy())
        self._nhosts += hr.count()

    def append(self, hosts: str) -> int:
        """Append every host of the hostlist text ``hosts``; return how many were added.

        Raises :class:`~fluxlite.errors.InputError` (and appends nothing) if
        ``hosts`` is malformed.
        """
        parsed = _decode_ranges(hosts)
        before = self._nhosts
        for hr in parsed:
            self._push(hr)
        return self._nhosts - before

    def extend(self, hosts: Iterable[str]) -> None:
        """Append each hostlist text of ``hosts`` in turn."""
        for h in hosts:
            self.append(h)

    # ------------------------------------------------------------ reading
    def __len__(self) -> int:
        return self._nhosts

    def __iter__(self) -> Iterator[str]:
        for hr in self._ranges:
            for d in range(hr.count()):
                yield hr.host(d)

    def __getitem__(self, n: int) -> str:
        if n < 0:
            n += self._nhosts
        if not 0 <= n < self._nhosts:
            raise IndexError("hostlist index out of range")
        for hr in self._ranges:
            c = hr.count()
            if n < c:
                return hr.host(n)
            n -= c
        raise IndexError("hostlist index out of range")  # pragma: no cover

    def index(self, host: str) -> int:
        """Position of ``host`` in the list (first occurrence); ValueError if absent."""
        for i, h in enumerate(self):
            if h == host:
                return i
        raise ValueError(f"{host!r} is not in the hostlist")

    def encode(self) -> str:
        """The compressed text, e.g. ``node[0-3,7],login1``."""
        out: list[str] = []
        ranges = self._ranges
        n = len(ranges)
        i = 0
        while i < n:
            first = ranges[i]
            bracket = first.count() > 1 or _within(first, ranges[i + 1] if i + 1 < n else None)
            out.append(first.prefix)
            if bracket:
                out.append("[")
            while True:
                hr = ranges[i]
                if not hr.single:
                    out.append(f"{hr.lo:0{hr.width}d}")
                    if hr.lo < hr.hi:
                        out.append(f"-{hr.hi:0{hr.width}d}")
                i += 1
                if i >= n or not _within(ranges[i], ranges[i - 1]):
                    break
                if bracket:
                    out.append(",")
            if bracket:
                out.append("]")
            if i < n:
                out.append(",")
        return "".join(out)

    def __str__(self) -> str:
        return self.encode()

    def __repr__(self) -> str:
        return f"HostList({self.encode()!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, HostList):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


def _decode_ranges(text: str) -> list[_Range]:
    out: list[_Range] = []
    tmp = HostList()
    for tok in _tokens(text):
        lb = tok.find("[")
        if lb >= 0:
            rb = tok.find("]", lb + 1)
            if rb < 0:
                raise InputError("unbalanced brackets in hostlist", hostlist=text)
            prefix = tok[:lb]
            items = tok[lb + 1 : rb].split(",")
            if len(items) > _MAX_RANGES:
                raise InputError("too many ranges in hostlist brackets", hostlist=text)
            ranges = [_parse_range(item) for item in items]
            suffix = tok[rb + 1 :]
            for lo, hi, width in ranges:
                if suffix:
                    for j in range(lo, hi + 1):
                        tmp._push(_Range(f"{prefix}{j:0{width}d}{suffix}", single=True))
                else:
                    tmp._push(_Range(prefix, lo, hi, width))
        elif "]" in tok:
            raise InputError("unbalanced brackets in hostlist", hostlist=text)
        else:
            hr = _split_host(tok)
            if hr is not None:  # flux-core silently drops a host it cannot parse
                tmp._push(hr)
    out.extend(tmp._ranges)
    return out


def decode(text: str) -> list[str]:
    """Expand hostlist text into its hostnames, in order (duplicates kept)."""
    return list(HostList(text))


def encode(hosts: Iterable[str]) -> str:
    """Compress hostnames (each may itself be hostlist text) appended in the given order."""
    hl = HostList()
    for h in hosts:
        hl.append(h)
    return hl.encode()
