"""The in-memory World: reference model of the contract and the fast backend for tests.

Import :func:`create_memory_world` from here (or from ``world_aws.local.memory``).
"""

from world_aws.local.memory import MemoryWorld, create_memory_world

__all__ = ["MemoryWorld", "create_memory_world"]
