"""Resource planners: free units of resource pools over time, exactly as Fluxion plans them.

:class:`Planner` tracks one pool (Fluxion's ``planner_t``),
:class:`PlannerMulti` several pools with shared span ids (``planner_multi_t``).
The scheduler keeps one per vertex and compares its output byte for byte
with Fluxion's, so these classes reproduce Fluxion's answers, including the
parts that may surprise:

* Candidate start times of ``avail_time_first``/``avail_time_next`` are only
  *scheduled points* -- the base time and every span start and end -- in
  increasing time order.  A time between two points is never proposed, even
  if free: on an empty planner ``avail_time_first(base + 5, ...)`` finds
  nothing (ENOENT).  A candidate that fits but would end after the plan end
  yields ENOENT for that call.
* ``PlannerMulti.avail_time_first`` takes its candidates from the type at
  index 0 only and filters them with ``avail_during`` on the other types.
* ``avail_during`` reports True for a window starting before the base time.
* ``Planner.update_total`` shifts every point by the change of total (clamped
  at 0) but leaves the keys Fluxion uses to search start times stale until a
  span change touches the point, so ``avail_time_first`` may miss units
  added by a total increase.
* ``reduce_span`` that leaves units keeps the avail-time iteration active but
  restarts it.

Queries with a normal "no" answer return ``None``/``False`` and set the
object's ``errno`` attribute to one of :data:`EINVAL`, :data:`ERANGE`,
:data:`ENOENT`, :data:`EBUSY`; invalid operations raise
:class:`~fluxlite.errors.PlannerError` carrying the same codes.
"""

from fluxlite.planner._multi import PlannerMulti
from fluxlite.planner._planner import EBUSY, EINVAL, ENOENT, ERANGE, Planner

__all__ = ["EBUSY", "EINVAL", "ENOENT", "ERANGE", "Planner", "PlannerMulti"]
