"""``conservative``: conservative backfilling; every waiting job holds a reservation."""

from fluxlite.queue.policies._backfill import BackfillPolicy


def create(reservation_depth: int | None = None) -> BackfillPolicy:
    return BackfillPolicy("conservative", reservation_depth=None, backfill=True)
