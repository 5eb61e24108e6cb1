"""``hybrid``: the first ``reservation_depth`` waiting jobs hold reservations (Fluxion's qmanager)."""

from fluxlite.queue.policies._backfill import BackfillPolicy


def create(reservation_depth: int | None = None) -> BackfillPolicy:
    return BackfillPolicy("hybrid", reservation_depth=4 if reservation_depth is None else reservation_depth)
