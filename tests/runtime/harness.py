"""Moved to :mod:`harness.harness` (shared with ``bench.chaos``); kept for existing imports."""

from harness.harness import ALL_QUEUES, DeliveryRecord, Harness, Intercept, MemoryPump, Pump

__all__ = ["ALL_QUEUES", "DeliveryRecord", "Harness", "Intercept", "MemoryPump", "Pump"]
