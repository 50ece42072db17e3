"""Benchmarks of world-aws, run by command (``python -m bench.fanout``); not part of the package."""
