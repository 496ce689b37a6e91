"""Benchmarks that run against a real containerd on this machine (not part of the tests)."""
