"""Command-line tools: ``fluxlite query`` (resource-query compatible), ``graph``, ``bench``, ..."""

__all__: list[str] = []
