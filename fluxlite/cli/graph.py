"""``fluxlite graph``: generate, convert and inspect resource graphs.

``fluxlite graph generate --nodes 16 --sockets 2 --cores 16 [--racks 4] [--gpus 2] [--memory 4] -o g.json``
    A regular cluster (cluster -> [rack ->] node -> socket -> core/gpu/memory)
    as JGF (default), Fluxion GraphML (``--format graphml``), a plain typed
    GraphML for general graph tools (``graphml-clean``), Graphviz DOT (``dot``)
    or the GRUG recipe that generates it (``grug``, readable by Fluxion's
    resource-query).
``fluxlite graph convert IN [--from grug|jgf|rv1exec|hwloc] --to jgf|graphml|graphml-clean|dot [-o OUT]``
    Read a graph in one format, write it in another.
``fluxlite graph generate --grid 16x8 [--torus] --cores 4 [-o grid.json]``
    A grid (or torus) machine: cluster -> node -> core, nodes with properties
    ``x``/``y`` and a ``network`` subsystem of neighbour edges (for the grid
    allocators ``-P hilbert|manhattan|count`` and the leak strategies).
``fluxlite graph info IN [--from ...] [--json]``
    Size, subsystems, roots, ranks and the number of vertices of each type.

Output goes to standard output unless ``-o FILE`` is given (written
atomically: a failure leaves no partial file).  Errors are one line on
standard error with a non-zero exit status.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.errors import FluxliteError

__all__ = ["main", "recipe_to_graphml"]

_OUT_FORMATS = ("jgf", "graphml", "graphml-clean", "dot")
_IN_FORMATS = ("grug", "jgf", "rv1exec", "hwloc")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # type: ignore[override]
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def recipe_to_graphml(recipe: Any) -> str:
    """A GRUG recipe as GraphML text that Fluxion's resource-query (``-f grug``) reads."""
    from xml.sax.saxutils import escape, quoteattr

    node_keys = [("root", "int", "0"), ("type", "string", None), ("basename", "string", None)]
    node_keys += [("unit", "string", None), ("size", "long", "1"), ("subsystem", "string", "containment")]
    edge_keys = [
        ("e_subsystem", "string", "containment"),
        ("relation", "string", "contains"),
        ("rrelation", "string", "in"),
        ("id_scope", "int", "0"),
        ("id_start", "int", "0"),
        ("id_stride", "int", "1"),
        ("gen_method", "string", "MULTIPLY"),
        ("multi_scale", "int", "1"),
        ("as_tgt_subsystem", "string", "containment"),
        ("as_tgt_uplvl", "int", "1"),
        ("as_src_uplvl", "int", "1"),
    ]
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>\n',
        '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">\n',
    ]
    for where, keys in (("node", node_keys), ("edge", edge_keys)):
        for name, typ, default in keys:
            d = f"<default>{default}</default>" if default is not None else ""
            end = f">{d}</key>" if d else "/>"
            out.append(f'    <key id="{name}" for="{where}" attr.name="{name}" attr.type="{typ}"{end}\n')
    out.append('    <graph id="fluxlite" edgedefault="directed">\n')
    for p in recipe.pools:
        vals = {
            "root": str(p.root),
            "type": p.type,
            "basename": p.basename,
            "unit": p.unit,
            "size": str(p.size),
            "subsystem": p.subsystem,
        }
        data = "".join(
            f'<data key="{k}">{escape(v)}</data>'
            for (k, _t, default) in node_keys
            if (v := vals[k]) != (default if default is not None else "")
        )
        out.append(f"        <node id={quoteattr(p.key)}>{data}</node>\n")
    for e in recipe.edges:
        vals = {k: str(getattr(e, k)) for k, _t, _d in edge_keys}
        data = "".join(f'<data key="{k}">{escape(vals[k])}</data>' for k, _t, d in edge_keys if vals[k] != d)
        src, dst = recipe.pools[e.src].key, recipe.pools[e.dst].key
        out.append(
            f"        <edge id={quoteattr(e.key)} source={quoteattr(src)} target={quoteattr(dst)}>{data}</edge>\n"
        )
    out.append("    </graph>\n</graphml>\n")
    return "".join(out)


def _render(g: Any, fmt: str) -> bytes:
    if fmt == "jgf":
        from fluxlite.readers.jgf import graph_to_jgf

        return graph_to_jgf(g)
    from fluxlite.writers.graph import write_dot, write_graphml, write_graphml_clean

    text = {"graphml": write_graphml, "graphml-clean": write_graphml_clean, "dot": write_dot}[fmt](g)
    return text.encode()


def _write(data: bytes, out: Path | None) -> None:
    if out is None or str(out) == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    out = Path(out)
    fd, tmp = tempfile.mkstemp(dir=out.parent if str(out.parent) else ".", prefix=f".{out.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _load(path: str, fmt: str | None) -> Any:
    from fluxlite.readers import load_graph

    if fmt is None:
        fmt = _guess_format(path)
    return load_graph(Path(path), format=fmt)


def _guess_format(path: str) -> str:
    low = path.lower()
    if low.endswith((".json", ".jgf")):
        try:
            with open(path, "rb") as fh:
                head = fh.read(4096)
        except OSError:
            return "jgf"
        return "rv1exec" if b'"execution"' in head and b'"graph"' not in head else "jgf"
    if low.endswith(".xml"):
        return "hwloc"
    return "grug"


def _info(g: Any) -> dict[str, Any]:
    types = Counter(g.v_type[v] for v in g.vertices())
    ranks = {g.v_rank[v] for v in g.vertices() if g.v_rank[v] >= 0}
    depth = 0
    for ss, root in g.roots.items():
        if ss != "containment":
            continue
        stack = [(root, 1)]
        while stack:
            v, d = stack.pop()
            depth = max(depth, d)
            stack.extend((c, d + 1) for c in g.children(v, ss))
    down = sum(1 for v in g.vertices() if g.v_status[v] != 0)
    return {
        "vertices": len(g),
        "edges": g.num_edges,
        "subsystems": g.subsystems(),
        "roots": {ss: g.v_name[r] for ss, r in g.roots.items()},
        "depth": depth,
        "ranks": len(ranks),
        "down": down,
        "types": dict(sorted(types.items())),
    }


def main(argv: Sequence[str] | None = None) -> int:
    p = _Parser(
        prog="fluxlite graph",
        description="Generate, convert and inspect resource graphs.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  fluxlite graph generate --racks 2 --nodes 4 --gpus 1 --memory 4 -o cluster.json\n"
        "  fluxlite graph generate --nodes 128 --format grug -o L0.graphml\n"
        "  fluxlite graph generate --grid 16x8 --cores 4 -o grid.json   (fluxlite query -L grid.json -f jgf -P hilbert)\n"
        "  fluxlite graph convert cluster.json --to dot | dot -Tpng > cluster.png\n"
        "  fluxlite graph info cluster.json",
    )
    sub = p.add_subparsers(dest="cmd", metavar="{generate,convert,info}")
    pg = sub.add_parser(
        "generate", help="a regular cluster graph", description="Generate a regular cluster graph."
    )
    pg.add_argument(
        "--racks", type=int, default=0, help="racks under the cluster (0: nodes directly under it)"
    )
    pg.add_argument("--nodes", type=int, default=4, help="nodes (per rack when --racks is given; default 4)")
    pg.add_argument("--sockets", type=int, default=2, help="sockets per node (default 2)")
    pg.add_argument("--cores", type=int, default=16, help="cores per socket (default 16)")
    pg.add_argument("--gpus", type=int, default=0, help="gpus per socket (default 0)")
    pg.add_argument("--memory", type=int, default=0, help="memory vertices per socket (default 0)")
    pg.add_argument("--memory-unit", default="GB", help="unit of one memory vertex (default GB)")
    pg.add_argument("--cluster", default="cluster", help="cluster basename (default cluster)")
    pg.add_argument(
        "--grid",
        metavar="WxH",
        help="a W x H grid machine instead: cluster -> node -> core (--cores per node), "
        "nodes with properties x, y and a 'network' subsystem of neighbour edges",
    )
    pg.add_argument("--torus", action="store_true", help="with --grid: wrap-around neighbour edges")
    pg.add_argument(
        "--format", choices=(*_OUT_FORMATS, "grug"), default="jgf", help="output format (default jgf)"
    )
    pg.add_argument("-o", "--output", type=Path, help="output file (default standard output)")
    pc = sub.add_parser("convert", help="read one format, write another")
    pc.add_argument("input", help="graph file")
    pc.add_argument(
        "--from", dest="src", choices=_IN_FORMATS, help="input format (default: from the file name)"
    )
    pc.add_argument("--to", choices=_OUT_FORMATS, required=True, help="output format")
    pc.add_argument("-o", "--output", type=Path, help="output file (default standard output)")
    pi = sub.add_parser("info", help="size and composition of a graph")
    pi.add_argument("input", help="graph file")
    pi.add_argument(
        "--from", dest="src", choices=_IN_FORMATS, help="input format (default: from the file name)"
    )
    pi.add_argument("--json", action="store_true", help="print JSON")
    a = p.parse_args(argv)
    if a.cmd is None:
        p.print_help()
        return 2
    try:
        if a.cmd == "generate" and (a.grid or a.torus):
            from fluxlite.errors import InputError
            from fluxlite.grid import generate_grid, parse_grid_size

            if not a.grid:
                raise InputError("--torus needs --grid WxH")
            if a.format == "grug":
                raise InputError(
                    "a GRUG recipe cannot carry node coordinates or neighbour edges: "
                    "use --format jgf (default) or graphml for --grid"
                )
            w, h = parse_grid_size(a.grid)
            _write(_render(generate_grid(w, h, a.cores, a.torus, a.cluster), a.format), a.output)
        elif a.cmd == "generate":
            from fluxlite.readers.generate import generate_graph, generate_recipe

            args = (a.racks, a.nodes, a.sockets, a.cores, a.gpus, a.memory, a.memory_unit, a.cluster)
            if a.format == "grug":
                _write(recipe_to_graphml(generate_recipe(*args)).encode(), a.output)
            else:
                _write(_render(generate_graph(*args), a.format), a.output)
        elif a.cmd == "convert":
            _write(_render(_load(a.input, a.src), a.to), a.output)
        else:
            info = _info(_load(a.input, a.src))
            if a.json:
                import json

                sys.stdout.write(json.dumps(info, indent=2) + "\n")
            else:
                sys.stdout.write(
                    f"{info['vertices']:,} vertices, {info['edges']:,} edges, depth {info['depth']}, "
                    f"{info['ranks']} ranks, {info['down']} down\n"
                    f"subsystems: {', '.join(info['subsystems'])}; roots: "
                    + ", ".join(f"{k}={v}" for k, v in info["roots"].items())
                    + "\n"
                )
                for t, n in info["types"].items():
                    sys.stdout.write(f"  {t:<12} {n:>10,}\n")
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite graph {a.cmd}: {exc}\n")
        return 1
    except OSError as exc:
        sys.stderr.write(f"fluxlite graph {a.cmd}: {exc.filename or ''}: {exc.strerror or exc}\n")
        return 1
    return 0


main_graph = main
