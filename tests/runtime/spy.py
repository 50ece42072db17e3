"""Moved to :mod:`world_aws.testing.spy` (shared with ``bench.chaos``); kept for existing imports."""

from world_aws.testing.spy import Call, Fault, Publish, SpyWorld

__all__ = ["Call", "Fault", "Publish", "SpyWorld"]
