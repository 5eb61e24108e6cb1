"""Flux jobspecs (RFC 14 canonical form, RFC 25 version 1, RFC 31 constraints), as Fluxion reads them.

:func:`parse_jobspec` and :func:`load_jobspec` turn YAML or JSON text into a
:class:`Jobspec`, accepting exactly what Fluxion's ``libjobspec`` accepts:

* top level: exactly ``version`` (1 to 9999), ``resources``, ``tasks`` and
  ``attributes`` (which may be null);
* resources: ``type`` and ``count`` required; ``unit``, ``label``, ``id``,
  ``exclusive`` (``true``/``false``) and ``with`` optional; no other key;
  every ``slot`` needs a ``label``.  A count is an unsigned integer ``N``
  (``Count(N, N, '+', 1)``) or ``{min, max, operator, operand}`` where ``min``
  alone means ``Count(min, UNBOUNDED, '+', 1)`` and the other three go
  together.  Fluxion does not check where slots sit (see
  :meth:`Jobspec.slot_problems` for the RFC's rules);
* tasks: ``command`` (a sequence), ``slot``, and 3 to 5 keys in all;
  ``count`` holds exactly one entry;
* attributes: only ``user`` and ``system``; ``system.duration`` is a number
  (0 = unset), ``system.queue`` a string, ``system.constraints`` an RFC 31
  expression (:class:`Constraint`, applied by Fluxion to ``node`` vertices
  only - the caller picks the vertices).

Every rejection raises :class:`fluxlite.errors.JobspecError` with one line
naming the source and the field, e.g.
``job.yaml: resources[0].with[1].count.min: must be an integer >= 1, got 0 (line 9)``.
"""

from fluxlite.jobspec._constraint import (
    ConditionalConstraint,
    Constraint,
    HostlistConstraint,
    PropertyConstraint,
    RankConstraint,
    decode_hostlist,
    decode_idset,
)
from fluxlite.jobspec._model import OPERATORS, UNBOUNDED, Count, Jobspec, Resource, Task, Tristate
from fluxlite.jobspec._parse import (
    MAX_ALIASES,
    MAX_EXPANDED_NODES,
    MAX_RESOURCES,
    load_jobspec,
    loaded_jobspec,
    parse_constraint,
    parse_jobspec,
    read_jobspec_file,
)

__all__ = [
    "MAX_ALIASES",
    "MAX_EXPANDED_NODES",
    "MAX_RESOURCES",
    "OPERATORS",
    "UNBOUNDED",
    "ConditionalConstraint",
    "Constraint",
    "Count",
    "HostlistConstraint",
    "Jobspec",
    "PropertyConstraint",
    "RankConstraint",
    "Resource",
    "Task",
    "Tristate",
    "decode_hostlist",
    "decode_idset",
    "load_jobspec",
    "loaded_jobspec",
    "parse_constraint",
    "parse_jobspec",
    "read_jobspec_file",
]
