"""Grid and torus machines, grid allocators (Hilbert, Manhattan, count) and leak policies.

Everything here CHOOSES resources; the one engine (:class:`fluxlite.api.Engine`)
allocates them through its planner and aggregates (``Traverser.update_allocate``)
and frees them (``cancel`` / ``shrink``).  No module here keeps a copy of
allocation state: free-ness over a window is read from the traverser's
``xspans`` / ``vspans`` columns every time.

API contract (kept true on branch ``grid``; the simulator builds on it)
======================================================================

Time is integer seconds, as in the engine's planner; a simulator passes its
virtual clock as ``now``.

Machines
--------
``generate_grid(width, height, cores=4, torus=False, cluster="cluster") -> ResourceGraph``
    cluster0 -> node{i} -> core{j}; node ``i = y * width + x`` (row-major),
    node properties ``x`` and ``y`` (strings, as every graph property), node
    ``rank = i``.  A ``network`` subsystem holds one edge per direction between
    grid neighbours (wrap-around when ``torus``; relation ``neighbour``).
    ``fluxlite graph generate --grid 16x8 [--torus] --cores 4`` writes it.

``GridInfo.from_graph(graph) -> GridInfo`` (also ``eng.grid_info``, built lazily)
    ``width``, ``height``, ``torus``, ``n`` (nodes);
    ``node_vid[i]`` (vertex handle of grid index ``i``), ``index_of[vid]``,
    ``xy(i) -> (x, y)``, ``index(x, y) -> i``;
    ``neighbours(i) -> tuple[int, ...]`` (grid indices);
    ``distance(i, j)`` Manhattan hops, torus-aware;
    ``compactness(indices) -> int`` sum of pairwise distances (each pair once);
    ``cores[i]`` -> tuple of core vertex handles of node ``i``;
    ``hilbert_order`` (np.ndarray of grid indices along the generalized Hilbert
    curve), ``snake_order`` (boustrophedon, row by row).
    All public methods take and return GRID INDICES (0..n-1), not vertex handles,
    except ``node_vid`` / ``index_of`` / ``cores`` which translate.

Static allocators (advance reservation with a deadline)
------------------------------------------------------
``Engine(graph, policy="hilbert" | "manhattan" | "count")`` (also
``Engine.from_file(..., policy=...)`` and ``fluxlite query -P hilbert``).
A job gets whole nodes (every core of each chosen node, exclusively).

``eng.allocate_deadline(request, earliest, deadline, now=0, duration=None, jobid=None) -> MatchResult``
    ``request`` is a node count (int) or a jobspec (object, dict or YAML text):
    its node count (or ceil(cores / cores per node) when it names no node), and
    its ``attributes.system.duration`` unless ``duration`` is given.
    Start = the earliest t >= max(earliest, now) among
    {max(earliest, now)} U {ends of other jobs' spans after it} with
    t + duration <= deadline where the policy finds nodes free over
    [t, t + duration).  ``result.at`` = t, ``result.jobid``;
    ``result.reserved`` is True when t > now.  ``eng.job_nodes(jobid)`` gives
    the chosen grid indices.
    Raises ``DeadlineError`` (a ``MatchError``; not Busy, not Unsatisfiable)
    when no start meets the deadline, ``UnsatisfiableError`` when the machine
    has fewer nodes than asked (or duration > deadline - earliest is NOT this:
    that is a DeadlineError too), ``InputError`` for a bad request.  On any
    failure nothing changed.
``eng.allocate(jobspec)`` / ``eng.allocate_orelse_reserve(jobspec)`` with a
    grid policy use the same allocator (no deadline), as does the REPL.
``eng.cancel(jobid)`` frees a job (as for any match).

Leak policies (dynamic, one process per core)
--------------------------------------------
``eng.leak_start(nprocs, strategy="leak" | "leak-noncontig", now=0, duration=..., jobid=None) -> LeakJob``
    ``nprocs``: a process count, or a jobspec (its cores, else nodes x cores per
    node; its duration unless ``duration`` is given).  Start node: snake scan
    from an entry node that rotates from job to job; first node with a free
    core over [now, now + duration).  Then processes breadth-first: free cores
    of the start node, then of its neighbours with free cores, and so on.
    Processes that do not fit follow the fork rule: ``leak`` oversubscribes the
    job's nodes (counted), ``leak-noncontig`` opens new regions in snake order.
    Raises ``BusyError`` only when no node has a free core (or, non-contiguous,
    no free core is left anywhere for the rest); nothing changed then.
    The job is allocated (``eng.jobs[jobid] == "allocated"``) over
    [now, now + duration).
    ``LeakJob``: ``jobid``, ``strategy``, ``start``, ``end``, ``procs`` (list of
    ``Proc``), ``oversubscribed`` (processes currently running without a core
    of their own), ``oversubscribed_total``, ``nodes()`` (grid indices in use).
``eng.grow(jobid, jobspec=None, strategy="leak", parent=NODE_INDEX, now=t) -> Proc``
    A fork: a free core on the parent's node, then on a free neighbour node of
    the parent, then of any node of the job; if none, ``leak`` oversubscribes
    the parent's node (``Proc.core is None``, ``Proc.oversubscribed`` True,
    counted in ``LeakJob.oversubscribed``) and ``leak-noncontig`` takes the
    next node with a free core in snake order (a new region); ``BusyError``
    when the machine has no free core at all (non-contiguous only);
    ``StateError`` when ``now >= job.end``.
    ``Proc``: ``node`` (grid index), ``core`` (core vertex handle or None),
    ``oversubscribed`` (bool).  ``jobspec`` may be None (one core) or a
    jobspec asking for one core.  The core is allocated over [now, job end).
``eng.leak_join(jobid, proc)``
    A join: releases the process's core at once (a partial release through
    ``Traverser.release_groups``, as ``shrink``), unless an oversubscribed
    process of the job waits on the same node: it inherits the core.  For an
    oversubscribed process only the count drops.  Returns True when the job
    holds nothing any more (it is then gone from ``eng.jobs``).  Use this, not
    ``eng.shrink``, for leak processes (shrink does not update ``procs``).
``eng.leak_jobs[jobid]`` -> ``LeakJob``; ``eng.cancel(jobid)`` ends a leak job
    (e.g. at its deadline) and forgets it.
``eng.grid.free_nodes(at, duration)`` -> bool mask by grid index of nodes no
    job uses over the window (occupancy pictures, utilisation).

Errors: ``fluxlite.errors.DeadlineError(MatchError)``.
"""

from __future__ import annotations

from fluxlite.grid.alloc import ALLOCATORS, choose_count, choose_hilbert, choose_manhattan
from fluxlite.grid.curves import hilbert_cells, hilbert_order, snake_order
from fluxlite.grid.machine import GridInfo, generate_grid, parse_grid_size
from fluxlite.grid.ops import GRID_POLICIES, LEAK_STRATEGIES, GridOps, LeakJob, Proc

__all__ = [
    "ALLOCATORS",
    "GRID_POLICIES",
    "LEAK_STRATEGIES",
    "GridInfo",
    "GridOps",
    "LeakJob",
    "Proc",
    "choose_count",
    "choose_hilbert",
    "choose_manhattan",
    "generate_grid",
    "hilbert_cells",
    "hilbert_order",
    "parse_grid_size",
    "snake_order",
]
