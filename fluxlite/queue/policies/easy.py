"""``easy``: EASY backfilling; only the highest-priority waiting job holds a reservation."""

from fluxlite.queue.policies._backfill import BackfillPolicy


def create(reservation_depth: int | None = None) -> BackfillPolicy:
    return BackfillPolicy("easy", reservation_depth=1, backfill=True)
