"""Origin records: which vertices came from above, from where, and under which request.

``_attach_for`` attaches a subgraph from the parent or the provider,
allocates it to the job that asked and records an :class:`Origin` (source,
upstream request id, the paths it created); on failure it hands the
subgraph straight back.  ``_free_origin_roots`` finds the topmost subtrees
that came from above and are now wholly free (what a hand-back returns);
``_drop_origin_paths`` forgets paths after a detach.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import repeat

from fluxlite.errors import (
    FluxliteError,
    StateError,
)
from hierarchy._wire import as_jgf, decode, is_columns
from hierarchy.instance.core import InstanceCore
from hierarchy.instance.records import JobRecord, Origin
from jgf import Columns, columns_jgf


class OriginsMixin(InstanceCore):
    """See the module docstring."""

    #: the last columns payload attached and its columns (the JGF of it for a caller that reads JGF
    #: is written from these, not from a second decoding)
    _decoded: tuple[bytes, Columns] | None = None

    def _attach_for(
        self, job: JobRecord, jgf: bytes, source: str, upstream_id: str, *, hand_back: bool = True
    ) -> None:
        """Attach a subgraph from above and allocate it to ``job``; undo (and hand it back) on failure."""
        eng = self.engine
        got, self._decoded = self._decoded, None
        try:
            # one parse (or the columns wire form, checked, read column-wise, or the columns its JGF
            # answer was written from); all or nothing (the engine detaches what it attached if the
            # allocation fails)
            doc: bytes | Columns = jgf
            if is_columns(jgf):
                doc = got[1] if got is not None and got[0] is jgf else decode(jgf)
                self._decoded = (jgf, doc)
            new = eng.attach(
                doc,
                source=f"{source} grow {upstream_id}",
                allocate_to=job.jobid,
                at=job.at,
                duration=job.duration,
            )
        except FluxliteError as exc:
            if hand_back:
                self._hand_back_now(source, jgf, upstream_id)
            raise StateError(f"{self.name}: cannot attach the subgraph from the {source}: {exc}") from exc
        if new:
            paths = set(self._paths(new))
            oid = self._next_oid
            self._next_oid += 1
            self.origins[oid] = Origin(oid, source, upstream_id, job.jobid, paths)
            self._origin_of.update(dict.fromkeys(paths, oid))

    def _jgf_of(self, payload: bytes, *, keep: bool = False) -> bytes:
        """``payload`` as JGF text (:func:`hierarchy._wire.as_jgf`), from the columns already read when
        it is the payload just attached.  ``keep``: the payload is attached next (a deferred attach),
        which reads the columns decoded here.  Under the instance lock."""
        got = self._decoded
        if not keep:
            self._decoded = None
        if got is None or got[0] is not payload:
            if not keep:
                return as_jgf(payload)
            got = self._decoded = (payload, decode(payload))
        return columns_jgf(got[1])

    def _free_origin_roots(self, candidates: Iterable[int]) -> dict[str, list[int]]:
        """Roots of the subtrees that came from above and are now wholly free, by source.

        Candidates already on their way back (pending hand-backs) are skipped.
        O(candidates x depth + size of the chosen subtrees).
        """
        g = self.engine.graph
        dom = self.engine.dom
        origin_of = self._origin_of
        busy: set[int] = set()
        for item in self.returning:
            busy.update(v for v in (g.vertex_by_path(p) for p in item["roots"]) if v is not None)
        path = g.paths.get(dom, {}).get  # (g.path(v, dom), one lookup)
        # g.parent(u, dom) read from the columns: the parent edge's source, none where it is < 0
        pedge = g.parent_edge.get(dom)
        if pedge is None:
            pedge = [-1] * len(g.v_rank)
        src = g.e_src
        is_live = g.is_live
        cand: set[int] = set()
        for v in candidates:
            if v in cand:  # (added with a descendant's ancestors: its own are in already)
                continue
            if not is_live(v) or path(v, "") not in origin_of:
                continue
            cand.add(v)
            e = pedge[v]
            while e >= 0:  # the ancestors from above (a candidate's are candidates already)
                a = src[e]
                if a in cand or path(a, "") not in origin_of:
                    break
                cand.add(a)
                e = pedge[a]
        chosen: set[int] = set()
        out: dict[str, list[int]] = {}
        # whether a vertex or one above it is chosen or busy (memoised along the walks up); an ancestor's
        # path is shorter, so it is settled before any vertex below it is looked at
        covered: dict[int, bool] = {}
        # shortest path first (stable: sorted(cand, key=path length), the key read by one C-level map)
        pool = list(cand)
        lens = list(map(len, map(path, pool, repeat(""))))
        for k in sorted(range(len(pool)), key=lens.__getitem__):
            v = pool[k]
            if v in busy:
                continue
            e = pedge[v]
            u = src[e] if e >= 0 else -1
            if u in chosen:  # (the common case: the vertex's parent goes back whole)
                continue
            chain = []
            hit = False
            while u >= 0:
                known = covered.get(u)
                if known is not None:
                    hit = known
                    break
                if u in chosen or u in busy:
                    hit = True
                    break
                chain.append(u)
                e = pedge[u]
                u = src[e] if e >= 0 else -1
            for w in chain:
                covered[w] = hit
            if hit:
                continue
            if self.engine.holders(g.subtree(v, dom)):
                continue
            if v in covered:  # (only where paths do not follow the tree: a memo may pass through v)
                covered.clear()
            chosen.add(v)
            src_name = self.origins[origin_of[path(v, "")]].source
            out.setdefault(src_name, []).append(v)
        return out

    def _drop_origin_paths(self, roots: Iterable[str]) -> list[str]:
        """Forget origin paths at or below ``roots`` (after a detach).  O(origin paths)."""
        dropped = []
        prefixes = tuple(roots)
        if not prefixes:
            return dropped
        rset = set(prefixes)
        # a path is at or below a root when the root is the path cut after as many components as
        # the root has: one cut and one lookup per root depth, where startswith tries every root
        depths = sorted({r.count("/") for r in rset})
        if len(depths) == 1:  # (roots of one depth, as a hand-back's nodes: no generator per path)
            d = depths[0]
            gone = [p for p in self._origin_of if p in rset or "/".join(p.split("/", d + 1)[: d + 1]) in rset]
        else:
            gone = [
                p
                for p in self._origin_of
                if p in rset or any("/".join(p.split("/", k + 1)[: k + 1]) in rset for k in depths)
            ]
        for p in gone:
            oid = self._origin_of.pop(p)
            o = self.origins.get(oid)
            if o is not None:
                o.paths.discard(p)
                if not o.paths:
                    del self.origins[oid]
            dropped.append(p)
        return dropped
