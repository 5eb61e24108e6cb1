"""HTTP front end of the stand-in API server (work in progress: interface only)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


class ApiServer:
    """A Kubernetes-API-compatible server on loopback (see :mod:`kube.testing`)."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        controllers: bool = True,
        watch_cache_size: int = 1000,
    ) -> None:
        self.host, self.port = host, port
        self.controllers, self.watch_cache_size = controllers, watch_cache_size
        self.url = ""

    def start(self) -> ApiServer:
        raise NotImplementedError("kube.testing.ApiServer: not yet implemented")

    def stop(self) -> None:
        raise NotImplementedError("kube.testing.ApiServer: not yet implemented")

    def compact(self) -> None:
        raise NotImplementedError("kube.testing.ApiServer: not yet implemented")

    def write_kubeconfig(self, path: str | Path) -> Path:
        raise NotImplementedError("kube.testing.ApiServer: not yet implemented")

    def api_client(self) -> Any:
        raise NotImplementedError("kube.testing.ApiServer: not yet implemented")
