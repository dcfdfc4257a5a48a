"""Reproducible performance harness: `make bench` (see docs/benchmarks.md)."""
