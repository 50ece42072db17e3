"""Moved to :mod:`world_aws.testing.harness` (shared with ``bench.chaos``); kept for existing imports."""

from world_aws.testing.harness import ALL_QUEUES, DeliveryRecord, Harness, Intercept, MemoryPump, Pump

__all__ = ["ALL_QUEUES", "DeliveryRecord", "Harness", "Intercept", "MemoryPump", "Pump"]
