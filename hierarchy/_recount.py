"""Re-export of :func:`fluxlite.check.recount_errors` (used by ``Info(recount=true)``)."""

from __future__ import annotations

from fluxlite.check import recount_errors

__all__ = ["recount_errors"]
