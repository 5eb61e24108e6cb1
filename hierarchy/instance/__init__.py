"""One scheduler instance of a tree: an engine, an optional parent, an optional provider.

:class:`Instance` holds the logic of the hierarchy and no gRPC: the server
(:mod:`hierarchy._service`) translates calls into its methods, and it talks
upwards through a :class:`hierarchy.base.Parent` and a
:class:`providers.base.ExternalAPI`.

**MatchGrow** (``match_grow``): try the local engine (``Engine.grow``); if
it cannot match, ask the parent with the job id this instance holds there
(then the provider, if any); the answer is a JGF subgraph that this level
attaches (``Engine.attach``) and allocates to the requesting job
(``Engine.update_allocate``) - at an intermediate level that is the job of
the child that asked.  Each attach is kept as an *origin record* (source,
upstream request id, the paths it created).

**Shrink** (``shrink``, ``release``): release locally (any granularity, see
:mod:`hierarchy._release`), then every vertex that came from above and is
now wholly free is detached and handed back upwards (the parent releases it
from this instance's job there and repeats).  A hand-back is written to the
state file before the upstream call; if the parent does not answer, the
vertices are marked down (never handed out again) and the hand-back is
retried by :meth:`Instance.tick` with the same request id.

**Idempotency.** Every grow, allocate and shrink carries a request id; the
request table maps ``kind:jobid:id`` to the answer, so a retry is answered
from the table and never allocates twice.  Before forwarding upwards, a
grow is recorded as *pending* with the upstream request id (derived from
this instance's name, the job and the request id), so a retry after a crash
asks the parent again with the same id and gets the same subgraph.

**Leases.** A child instance allocates with ``lease=True`` and gets a lease
token; every later call for that job must present it (a child can only
grow and shrink its own allocation).  Children heartbeat; :meth:`tick`
releases the job of a child that has been silent for longer than
``child_grace`` seconds and logs it.

**Deferred attach.** When the job that grows is a child's lease, the
child attaches the subgraph itself, so this level answers first and
attaches right after, in a background thread at idle CPU priority that
still holds the lock: nothing can observe or use this level before the
attach is done, but the leaf's MatchGrow no longer waits for every level
on the way down one after the other.  The subgraph is recorded
(``received``) before the answer, so a crash in between is repaired on
restore.  The same holds for a grow of a level's own job (a client's) that
came from the parent in the columns form and that a remote caller asked
for: the caller has its answer one attach sooner (that attach runs at
normal priority: no grow goes on below it, and the caller's next call
waits for it).  A child's attach starts once the RPC has ended, its answer
sent; the own job's as soon as the answer is handed to gRPC, whose
transport sends it meanwhile (``after_reply.handed``).  A grow from the
provider, JGF from above, a payload that does not decode, or a call in
process attaches first, so that an attach failure is the caller's error
and the subgraph goes back.  An attach after the answer that fails is
logged as an inconsistency and counted (``deferred_attach_failed``): the
subgraph stays leased above, never given to two holders.
``defer_attach=False`` (``--sync-attach``) attaches first.  A remote
child's attach (one answered over RPC) also waits, holding the lock, up to ``idle_wait`` seconds
(``--idle-wait``, default 0.05) for the grow below to finish: idle
priority keeps it off the critical path's CPU, not off the other CPU,
where it still slowed the leaf (memory and caches shared; measured in
docs/hierarchy.md).  Any thread that wants the lock meanwhile starts it at
once (``TurnLock``), so no call waits longer than for the attach itself.

**Locking.** One lock serialises every change, and it is held across the
upstream call of a grow (calls only go upwards, so this cannot deadlock);
heartbeats and health checks do not take it.  The cyclic garbage
collector is paused while the lock is held.

With ``state_path`` every change is written atomically (see
:mod:`hierarchy._state`) and :meth:`Instance.restore` rebuilds the instance.

**Where each part lives.** :mod:`.core` (the attributes, the lock),
:mod:`.records` (job and origin records), :mod:`.access` (identity checks
and limits), :mod:`.requests` (the request table), :mod:`.grow`
(MatchAllocate, MatchGrow), :mod:`.origins` (attaching from above and the
origin records), :mod:`.handback` (Shrink, Release, hand-backs),
:mod:`.leases` (leases, heartbeats, ``tick``), :mod:`.views` (Info, Stat),
:mod:`.persist` (the state file) and :mod:`.cloud` (cloud nodes: whole-only
shrinks, draining hand-backs, nodes whose instance died).
"""

from __future__ import annotations

from hierarchy.instance.access import AccessMixin
from hierarchy.instance.cloud import CloudMixin
from hierarchy.instance.core import MAX_JOBSPEC_BYTES, InstanceCore, settle_memory
from hierarchy.instance.grow import GrowMixin
from hierarchy.instance.handback import HandBackMixin
from hierarchy.instance.leases import LeasesMixin
from hierarchy.instance.origins import OriginsMixin
from hierarchy.instance.persist import PersistMixin
from hierarchy.instance.records import JobRecord, Origin
from hierarchy.instance.requests import RequestsMixin
from hierarchy.instance.views import ViewsMixin

__all__ = ["MAX_JOBSPEC_BYTES", "Instance", "JobRecord", "Origin", "settle_memory"]


class Instance(
    CloudMixin,
    GrowMixin,
    HandBackMixin,
    OriginsMixin,
    LeasesMixin,
    AccessMixin,
    RequestsMixin,
    ViewsMixin,
    PersistMixin,
    InstanceCore,
):
    """A scheduler instance (see the module docstring)."""
