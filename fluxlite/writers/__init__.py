"""Match writers: a matched resource set as text, exactly as Fluxion prints it.

Formats (Fluxion's ``-F`` names)::

    simple          <prefix><name>[<needs>:x|s] per vertex, emission order
    pretty_simple   <prefix><name>[<needs>:exclusive|shared], reverse order
    jgf             {"graph": {"nodes": [...], "edges": [...]}}
    jgf_shorthand   jgf, but the traverser skips exclusive subtrees' insides
    rlite           the RFC 20 R_lite array
    rv1             RFC 20 R version 1 with "scheduling" (JGF) and attributes
    rv1_nosched     RFC 20 R version 1 without "scheduling"
    rv1_shorthand   rv1 whose "scheduling" JGF leaves out exclusive subtrees' insides

Use :func:`create_writer` to get one, feed it with the traverser's
``emit_vtx``/``emit_edg``/``emit_tm``/``emit_attrs`` calls and take the text
with ``emit()`` (or the object with ``emit_json()`` for ``find``, printed by
:func:`format_find_output`).  JSON follows jansson's formatting byte for byte
(:func:`fluxlite.writers._jansson.dumps`).  Whole-graph dot/GraphML output
lives in :mod:`fluxlite.writers.graph`; id-set and hostlist codecs in
:mod:`fluxlite.idset` and :mod:`fluxlite.hostlist`.
"""

from fluxlite.writers.base import (
    WRITERS,
    EmitError,
    MatchWriter,
    create_writer,
    format_find_output,
    known_format,
    register,
)
from fluxlite.writers.graph import write_dot, write_graphml, write_graphml_clean
from fluxlite.writers.jgf import JgfShorthandWriter, JgfWriter
from fluxlite.writers.rv1 import RLiteWriter, Rv1NoschedWriter, Rv1ShorthandWriter, Rv1Writer
from fluxlite.writers.simple import PrettySimpleWriter, SimpleWriter

__all__ = [
    "WRITERS",
    "EmitError",
    "JgfShorthandWriter",
    "JgfWriter",
    "MatchWriter",
    "PrettySimpleWriter",
    "RLiteWriter",
    "Rv1NoschedWriter",
    "Rv1ShorthandWriter",
    "Rv1Writer",
    "SimpleWriter",
    "create_writer",
    "format_find_output",
    "known_format",
    "register",
    "write_dot",
    "write_graphml",
    "write_graphml_clean",
]

# Fluxion's known_match_format() order
for _name, _factory in (
    ("simple", SimpleWriter),
    ("jgf", JgfWriter),
    ("jgf_shorthand", JgfShorthandWriter),
    ("rlite", RLiteWriter),
    ("rv1", Rv1Writer),
    ("rv1_nosched", Rv1NoschedWriter),
    ("rv1_shorthand", Rv1ShorthandWriter),
    ("pretty_simple", PrettySimpleWriter),
):
    if _name not in WRITERS:
        register(_name, _factory)
del _name, _factory
