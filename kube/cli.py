"""``fluxlite kube``: run the scheduler (form A), the Fluence sidecar (form B), or show the graph.

::

    fluxlite kube run --kubeconfig ~/.kube/config [--scheduler-name fluxlite]
    fluxlite kube sidecar --nodes nodes.json [--listen 127.0.0.1:4242]
    fluxlite kube graph --kubeconfig ~/.kube/config [-o cluster.json]
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fluxlite.errors import FluxliteError, InputError
from kube.config import KubeConfig

__all__ = ["main", "main_kube"]

_DEFAULTS = KubeConfig()


def _config_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("graph and placement")
    g.add_argument("--scheduler-name", default=_DEFAULTS.scheduler_name,
                   help="schedule the pods whose spec.schedulerName is this (default %(default)s)")  # fmt: skip
    g.add_argument("--policy", default=_DEFAULTS.policy,
                   help="match policy: low (packs replicas, default), high, first, lonode, hinode, locality ...")  # fmt: skip
    g.add_argument("--memory-unit", default=_DEFAULTS.memory_unit,
                   help="memory per memory vertex, a Kubernetes quantity (default %(default)s)")  # fmt: skip
    g.add_argument("--storage-unit", default=_DEFAULTS.storage_unit,
                   help="ephemeral storage per storage vertex, a Kubernetes quantity (default %(default)s)")  # fmt: skip
    g.add_argument("--zone-label", default=_DEFAULTS.zone_label, help="node label of the zone vertex")
    g.add_argument("--rack-label", default=_DEFAULTS.rack_label, help="node label of the rack vertex")
    g.add_argument("--extended-resource", action="append", default=None, metavar="NAME=TYPE",
                   help="extended resource -> vertex type, one vertex per unit "
                        "(default nvidia.com/gpu=gpu; repeat for more)")  # fmt: skip
    g.add_argument("--group-label", default=_DEFAULTS.group_label, help="pod label naming a gang (pod group)")
    g.add_argument("--min-member-label", default=_DEFAULTS.min_member_label,
                   help="pod label/annotation with the gang's minimum member count")  # fmt: skip
    g.add_argument("--grow-locality", choices=("node", "none"), default=_DEFAULTS.grow_locality,
                   help="grow a group onto its own nodes first (node, default) or anywhere")  # fmt: skip


def _config(a: argparse.Namespace) -> KubeConfig:
    ext: list[tuple[str, str]] = []
    for item in a.extended_resource or ["nvidia.com/gpu=gpu"]:
        name, sep, vtype = item.partition("=")
        if not sep or not name or not vtype:
            raise InputError(f"--extended-resource {item!r}: expected NAME=TYPE (e.g. nvidia.com/gpu=gpu)")
        ext.append((name, vtype))
    cfg = KubeConfig(
        scheduler_name=a.scheduler_name,
        zone_label=a.zone_label,
        rack_label=a.rack_label,
        memory_unit=a.memory_unit,
        storage_unit=a.storage_unit,
        extended=tuple(ext),
        policy=a.policy,
        group_label=a.group_label,
        min_member_label=a.min_member_label,
        grow_locality=a.grow_locality,
    )
    if cfg.memory_bytes <= 0:
        raise InputError(f"--memory-unit {a.memory_unit!r} must be positive")
    if cfg.storage_bytes <= 0:
        raise InputError(f"--storage-unit {a.storage_unit!r} must be positive")
    from fluxlite.match import parse_policy

    parse_policy(cfg.policy)
    return cfg


def _stop_on_signals() -> threading.Event:
    """An event set by SIGINT/SIGTERM (installed before the service announces itself)."""
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    return stop


def _api_client(kubeconfig: str | None, context: str | None) -> Any:
    from kubernetes import config

    try:
        if kubeconfig is None:
            config.load_incluster_config()
            from kubernetes import client

            return client.ApiClient()
        return config.new_client_from_config(config_file=kubeconfig, context=context)
    except config.ConfigException as exc:
        raise InputError(f"kubeconfig {kubeconfig or '(in-cluster)'}: {exc}") from exc
    except OSError as exc:
        raise InputError(f"kubeconfig {kubeconfig}: {exc.strerror or exc}") from exc


def _load_nodes(a: argparse.Namespace) -> list[dict[str, Any]]:
    if a.nodes is not None:
        import yaml

        try:
            doc = yaml.safe_load(Path(a.nodes).read_text())
        except OSError as exc:
            raise InputError(f"{a.nodes}: {exc.strerror or exc}") from exc
        except yaml.YAMLError as exc:
            raise InputError(f"{a.nodes}: not JSON/YAML: {str(exc).splitlines()[0]}") from exc
        items = doc.get("items") if isinstance(doc, dict) and "items" in doc else doc
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list) or not all(isinstance(n, dict) for n in items):
            raise InputError(f"{a.nodes}: expected a NodeList (kubectl get nodes -o json) or a list of Nodes")
        return items
    from kube.scheduler import ClusterApi

    items, _rv = ClusterApi(_api_client(a.kubeconfig, a.context)).list_nodes()
    return items


def _core(a: argparse.Namespace, cfg: KubeConfig) -> Any:
    from kube import KubeCore, node_info

    return KubeCore(cfg, [node_info(n, cfg) for n in _load_nodes(a)])


def _cmd_run(a: argparse.Namespace) -> int:
    from kube.scheduler import KubeScheduler

    cfg = _config(a)
    try:
        initial, top = (float(x) for x in a.backoff.split(","))
    except ValueError:
        raise InputError(f"--backoff {a.backoff!r}: expected INITIAL,MAX seconds (e.g. 1,60)") from None
    sched = KubeScheduler(
        _api_client(a.kubeconfig, a.context),
        cfg,
        namespace=a.namespace,
        backoff_initial=initial,
        backoff_max=top,
    )
    stop = _stop_on_signals()
    try:
        sched.start()
    except Exception as exc:
        from kubernetes.client.exceptions import ApiException

        if isinstance(exc, ApiException):
            raise InputError(f"cannot list the cluster: HTTP {exc.status} {exc.reason}") from exc
        if isinstance(exc, FluxliteError):
            raise
        raise InputError(f"cannot reach the API server: {exc}") from exc
    s = sched.core.summary()
    print(
        f"fluxlite kube: scheduling pods with schedulerName={cfg.scheduler_name} on {s['nodes']} nodes "
        f"({s['vertices']} vertices); {s['pods']} bound pods accounted, {len(sched.pending)} pending",
        flush=True,
    )
    while not stop.wait(0.2):
        pass
    sched.stop()
    return 0


def _cmd_sidecar(a: argparse.Namespace) -> int:
    from hierarchy._address import TlsConfig
    from kube.sidecar import Sidecar

    cfg = _config(a)
    core = _core(a, cfg)
    running = 0
    if a.nodes is None:  # a live cluster: the pods already running hold their resources
        from kube.scheduler import ClusterApi
        from kube.sidecar import account_running

        pods, _rv = ClusterApi(_api_client(a.kubeconfig, a.context)).list_pods()
        running = account_running(core, pods)
    tls = TlsConfig(cert=a.tls_cert, key=a.tls_key, ca=a.tls_ca)
    stop = _stop_on_signals()
    sc = Sidecar(core, a.listen, tls=tls, nodelist=a.nodelist).start()
    s = core.summary()
    print(
        f"fluxlite kube sidecar: fluxcli.FluxcliService + fluxlite.kube.v1.FluxliteElastic on "
        f"{sc.address.target}; {s['nodes']} nodes, {s['vertices']} vertices; "
        f"{running} running pod{'' if running == 1 else 's'} accounted; nodelist {a.nodelist}",
        flush=True,
    )
    while not stop.wait(0.2):
        pass
    sc.stop()
    return 0


def _cmd_graph(a: argparse.Namespace) -> int:
    from fluxlite.readers import graph_to_jgf

    cfg = _config(a)
    core = _core(a, cfg)
    if a.output:
        Path(a.output).write_bytes(graph_to_jgf(core.engine.graph))
    s = core.summary()
    types: dict[str, int] = {}
    g = core.engine.graph
    for v in g.vertices():
        types[g.v_type[v]] = types.get(g.v_type[v], 0) + 1
    print(
        f"{s['nodes']} nodes ({s['nodes_down']} down), {s['vertices']} vertices: "
        + ", ".join(f"{k} {n}" for k, n in sorted(types.items()))
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fluxlite kube",
        description="Kubernetes scheduler shim: pods, pod groups and elastic ReplicaSets on the fluxlite engine.",
    )
    sub = p.add_subparsers(dest="cmd", required=True)

    def cluster(sp: argparse.ArgumentParser, nodes: bool) -> None:
        sp.add_argument("--kubeconfig", help="kubeconfig file (default: in-cluster service account)")
        sp.add_argument("--context", help="kubeconfig context (default: the current one)")
        if nodes:
            sp.add_argument("--nodes", help="a NodeList file (kubectl get nodes -o json) instead of the API")

    r = sub.add_parser(
        "run",
        help="form A: schedule pods (list+watch Nodes and Pods, bind)",
        description="Schedule every pod whose spec.schedulerName is --scheduler-name: a group's first pod "
        "MatchAllocate, each further replica MatchGrow of the same job, deleted pods shrink it; gangs "
        "(pod-group label + min member) all-or-nothing.  Restarting loses nothing: bound pods carry their "
        "group and resources as annotations.",
    )
    cluster(r, nodes=False)
    r.add_argument("--namespace", help="only this namespace's pods (default: all)")
    r.add_argument(
        "--backoff", default="1,60", help="retry backoff INITIAL,MAX seconds (default %(default)s)"
    )
    r.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default %(default)s)")
    _config_options(r)
    r.set_defaults(func=_cmd_run)

    s = sub.add_parser(
        "sidecar",
        help="form B: gRPC backend for Fluence (fluxcli.FluxcliService) plus Grow/Shrink",
        description="Serve Fluence's fluxcli.FluxcliService (Match, Cancel) and fluxlite.kube.v1.FluxliteElastic "
        "(Grow, Shrink) on a graph built from the cluster's Nodes.  Loopback or Unix socket only unless TLS "
        "is configured.",
    )
    cluster(s, nodes=True)
    s.add_argument("--listen", default="127.0.0.1:4242",
                   help="HOST:PORT or unix:PATH (default %(default)s, where Fluence dials)")  # fmt: skip
    s.add_argument(
        "--nodelist",
        choices=("per-pod", "per-node"),
        default="per-pod",
        help="MatchResponse.nodelist: one entry per pod, nodelist[i] for pod i (default; what Fluence's "
        "unmodified plugin reads), or one entry per node with a task count (Fluence's own server)",
    )
    s.add_argument("--tls-cert", type=Path, help="server certificate (PEM)")
    s.add_argument("--tls-key", type=Path, help="server key (PEM)")
    s.add_argument("--tls-ca", type=Path, help="CA that signs client certificates (PEM; requires them)")
    s.add_argument("--log-level", default="INFO", help="DEBUG, INFO, WARNING (default %(default)s)")
    _config_options(s)
    s.set_defaults(func=_cmd_sidecar)

    gp = sub.add_parser(
        "graph", help="build the graph from the cluster's Nodes and summarise it (or write JGF)"
    )
    cluster(gp, nodes=True)
    gp.add_argument("-o", "--output", help="write the graph as JGF to this file")
    gp.add_argument("--log-level", default="WARNING", help=argparse.SUPPRESS)
    _config_options(gp)
    gp.set_defaults(func=_cmd_graph)
    return p


def main_kube(argv: Sequence[str]) -> int:
    a = _parser().parse_args(list(argv))
    logging.basicConfig(
        level=getattr(logging, str(a.log_level).upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(a.func(a) or 0)
    except FluxliteError as exc:
        sys.stderr.write(f"fluxlite kube {a.cmd}: {exc}\n")
        return 1


main = main_kube
