"""fluxlite: a graph-based, hierarchical resource scheduler in the style of Fluxion."""

from fluxlite.errors import (
    BusyError,
    CommandError,
    DeadlineError,
    FluxliteError,
    GraphFormatError,
    InputError,
    JobspecError,
    MatchError,
    PlannerError,
    RpcError,
    StateError,
    UnknownJobError,
    UnsatisfiableError,
)

__version__ = "0.1.0"

# The Cython-compiled hot modules load only while built from the .py that is there now (see _compiled.py)
from fluxlite import _compiled

_compiled.install()

__all__ = [
    "BusyError",
    "CommandError",
    "DeadlineError",
    "FluxliteError",
    "GraphFormatError",
    "InputError",
    "JobspecError",
    "MatchError",
    "PlannerError",
    "RpcError",
    "StateError",
    "UnknownJobError",
    "UnsatisfiableError",
    "__version__",
]
