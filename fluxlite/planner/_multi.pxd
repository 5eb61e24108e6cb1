# Compiled builds only (Cython reads this beside _multi.py): PlannerMulti as an extension type, as
# Planner is (see _planner.pxd): its methods read and write their fields as C struct members; the
# fields stay public (the matcher reads _planners, _types and _spans).  The names are the class's
# ``__slots__`` (which the pure build keeps).
cdef class PlannerMulti:
    cdef public object _counter, _index, _iter_counts, _iter_duration, _iter_on_or_after, _planners
    cdef public object _span_pos, _spans, _totals, _types
    # (errno is a C macro: the field takes another C name)
    cdef public object errno "fl_errno"
