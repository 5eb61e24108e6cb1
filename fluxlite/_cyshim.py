"""The few names of Cython's ``cython`` module that fluxlite's compiled modules use, for running them
as pure Python where Cython is not installed (an install without the ``test`` extra).

Compiled, ``@cython.locals(name=type, ...)`` gives a function's locals C types (``Py_ssize_t``,
``bint``) or exact builtin types (``list``, ``dict``), so that indexing a list by an int is a C
array access rather than the object protocol.  ``@cython.boundscheck(False)`` and
``@cython.wraparound(False)`` (also as ``with`` blocks) drop the index checks of such accesses, for
loops whose indices are in range by construction.  Uncompiled they all do nothing, here as in
Cython's own pure-Python ``cython`` module (``Cython.Shadow``).  A module uses it as::

    try:
        import cython
    except ModuleNotFoundError:  # pure Python without Cython installed
        from fluxlite import _cyshim as cython

(the compiler needs ``import cython`` itself in the module).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])


class _CScalar(type):
    """A C integer type run pure: the Python ``int``; ``T[:]`` (a typed memoryview of it) is
    ``memoryview``."""

    def __getitem__(cls, item: object) -> type:
        return memoryview


class _CInt(int, metaclass=_CScalar):
    """A C integer type (``long long``, ``unsigned char``, ...); run pure, an int."""


longlong = ulonglong = uchar = _CInt
#: C types, as their Python counterparts when run pure
Py_ssize_t = int
bint = bool
#: True in a compiled module (Cython's own ``cython.compiled``); a module may take another path there
compiled = False


def locals(**types: Any) -> Callable[[_F], _F]:
    """Cython's typed locals; run pure, the function unchanged."""

    def keep(func: _F) -> _F:
        return func

    return keep


class _Directive:
    """A compiler directive run pure: as a decorator it returns the function unchanged, as a ``with``
    block it does nothing (exceptions pass through)."""

    def __call__(self, func: _F) -> _F:
        return func

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def boundscheck(flag: bool) -> _Directive:
    """Cython's ``boundscheck`` directive (compiled, ``False`` drops the index range checks); run pure,
    nothing."""
    return _Directive()


def wraparound(flag: bool) -> _Directive:
    """Cython's ``wraparound`` directive (compiled, ``False`` drops the negative-index adjustment);
    run pure, nothing."""
    return _Directive()
