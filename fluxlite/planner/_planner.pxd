# Compiled builds only (Cython reads this beside _planner.py): Planner as an extension type, so that
# its methods read and write their fields as C struct members instead of through the slot
# descriptors (each ``self._x`` was a type-attribute lookup and a descriptor call).  The fields stay
# readable and writable from Python (``public``): the matcher reads ``_times``, ``_rem``, ``_total``
# and ``_end`` directly.  The names are the class's ``__slots__`` (which the pure build keeps).
cdef class Planner:
    cdef public object _base, _counter, _cursor, _end, _iter, _key, _ref, _rem, _span_pos, _spans
    cdef public object _times, _total, _type
    # (errno is a C macro: the field takes another C name)
    cdef public object errno "fl_errno"
