"""The in-memory World: reference model of the contract and the fast backend for tests.

Import :func:`create_memory_world` from here (or from ``world_aws.local.memory``).
The memory World is imported on first use of these names: importing another module
of this package (the embedded moto stack, ``local_stack``) does not load it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from world_aws.local.memory import MemoryWorld, create_memory_world

__all__ = ["MemoryWorld", "create_memory_world"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from world_aws.local import memory

        return getattr(memory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
