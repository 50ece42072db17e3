"""The registry of named World factories that the conformance suite runs against.

A factory is a context manager ``(clock) -> Iterator[World]``: it builds a fresh,
empty World on the given ``ManualClock`` and tears it down afterwards. The
registry is built by a function on each call (no mutable module state):

* ``memory`` is always there, and ``memory-sealed``: the memory World with every payload
  sealed (``world_aws.sealing.SealedWorld`` over a local key service);
* ``aws`` is added when ``world_aws.testing.aws_factory`` exists; it defines
  ``aws_world(clock)``. Adding another backend is one more entry in
  :func:`world_factories`.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager

from world_aws.contract.clock import ManualClock
from world_aws.contract.world import World
from world_aws.local.memory import create_memory_world

WorldFactory = Callable[[ManualClock], AbstractContextManager[World]]

_AWS_FACTORY_MODULE = "world_aws.testing.aws_factory"

# Worlds whose queue delays and visibility timeouts run on the queue service's own
# clock, not on the injected ManualClock: SQS (moto honours DelaySeconds in real
# time). Tests marked ``queue_follows_clock`` are skipped for them; the SQS queue's
# delays are tested in tests/aws/sqs by releasing moto's delayed messages.
SERVER_CLOCK_QUEUES = frozenset({"aws"})

# Iterations of the 8-thread fence race (issue: 200). On moto every iteration costs
# ~70 serialised DynamoDB calls (~1.8 s), so the default suite runs fewer on "aws"
# and ``WORLD_AWS_RACE_ITERATIONS=200`` runs the full count there.
RACE_ITERATIONS = 200
SLOW_WORLD_RACE_ITERATIONS = {"aws": 40}


@contextmanager
def memory_world(clock: ManualClock) -> Iterator[World]:
    """A fresh in-memory World on ``clock``; its consumers are stopped afterwards."""
    world = create_memory_world(clock=clock)
    try:
        yield world
    finally:
        world.close()


@contextmanager
def sealed_memory_world(clock: ManualClock) -> Iterator[World]:
    """A fresh in-memory World on ``clock`` whose payloads are sealed (a data key per run)."""
    from world_aws.sealing import SealedWorld
    from world_aws.testing.local_keys import LocalKeyService

    world = create_memory_world(clock=clock)
    try:
        yield SealedWorld(world, LocalKeyService())
    finally:
        world.close()


def world_factories() -> dict[str, WorldFactory]:
    """Every World the conformance suite knows, by name (the name shows in test ids).

    Returns:
        ``{"memory": ..., "memory-sealed": ..., "aws": ...}``; ``aws`` only when its factory
        module imports.
    """
    factories: dict[str, WorldFactory] = {"memory": memory_world, "memory-sealed": sealed_memory_world}
    aws = _optional_factory(_AWS_FACTORY_MODULE, "aws_world")
    if aws is not None:
        factories["aws"] = aws
    return factories


def _optional_factory(module_name: str, attribute: str) -> WorldFactory | None:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        # The module not existing yet is expected; any other import failure
        # inside it would silently drop a backend from the suite, so say so.
        if not (isinstance(exc, ModuleNotFoundError) and exc.name == module_name):
            warnings.warn(f"{module_name} failed to import, skipping it: {exc}", stacklevel=2)
        return None
    factory: WorldFactory = getattr(module, attribute)
    return factory


def race_iterations(world_name: str, environ: dict[str, str] | None = None) -> int:
    """How many times the fence race runs on ``world_name`` (see RACE_ITERATIONS)."""
    env = dict(os.environ) if environ is None else environ
    override = env.get("WORLD_AWS_RACE_ITERATIONS", "").strip()
    if override:
        return int(override)
    return SLOW_WORLD_RACE_ITERATIONS.get(world_name, RACE_ITERATIONS)
