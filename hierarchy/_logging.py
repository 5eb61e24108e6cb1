"""Log lines that a caller cannot forge: control characters escaped, messages bounded.

Instances log caller-supplied strings (child names and addresses, paths,
request ids, error texts).  :class:`SafeFormatter` escapes every control
character (``\\n`` becomes the two characters ``\\`` ``n``, an escape
sequence ``\\x1b`` becomes ``\\x1b``) in the formatted message, so one
record is always one line, and cuts a message at :data:`MAX_MESSAGE`
characters.  Tracebacks (the instance's own) keep their lines.  The audit
log needs nothing of this: it writes JSON, whose strings are escaped.
"""

from __future__ import annotations

import logging
import re

__all__ = ["MAX_MESSAGE", "SafeFormatter", "escape"]

#: longest message logged (the rest is replaced by a count)
MAX_MESSAGE = 4000

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def escape(text: str, limit: int = MAX_MESSAGE) -> str:
    """``text`` on one line: control characters as escapes, at most ``limit`` characters kept."""
    if len(text) > limit:
        text = f"{text[:limit]}... ({len(text) - limit} more characters)"
    return _CONTROL.sub(lambda m: _NAMED.get(m.group(), f"\\x{ord(m.group()):02x}"), text)


class SafeFormatter(logging.Formatter):
    """A :class:`logging.Formatter` whose message part is always one escaped, bounded line."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = escape(record.message)
        return super().formatMessage(record)
