"""Kubernetes scheduler shim (see kube/README or the README's Kubernetes section)."""
