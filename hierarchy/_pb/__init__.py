"""Generated protobuf/gRPC code for ``hierarchy/proto/fluxlite_instance.proto`` (do not edit; see ``hierarchy``)."""
