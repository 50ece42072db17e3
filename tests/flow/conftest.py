"""The scenario fixtures of tests/runtime (``harness`` over both Worlds, ``memory_harness``), here too."""

from tests.runtime.conftest import harness, memory_harness

__all__ = ["harness", "memory_harness"]
