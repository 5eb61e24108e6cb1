"""``fcfs``: first come, first served; the queue stops at the first job that cannot start."""

from fluxlite.queue.policies._backfill import BackfillPolicy


def create(reservation_depth: int | None = None) -> BackfillPolicy:
    return BackfillPolicy("fcfs", reservation_depth=0, backfill=False)
