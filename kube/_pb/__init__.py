"""Generated protobuf/gRPC code for ``kube/proto/*.proto`` (do not edit; the generator command is in ``kube.sidecar``)."""
