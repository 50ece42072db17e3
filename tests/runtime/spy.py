"""Moved to :mod:`harness.spy` (shared with ``bench.chaos``); kept for existing imports."""

from harness.spy import Call, Fault, Publish, SpyWorld

__all__ = ["Call", "Fault", "Publish", "SpyWorld"]
