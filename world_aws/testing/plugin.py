"""pytest fixtures of the conformance suite: ``clock`` and ``world``, over every World factory.

Pull them into a test directory with ``from world_aws.testing.plugin import clock, world``
in its ``conftest.py``. ``world`` is parametrised over
:func:`world_aws.testing.factories.world_factories`, so test ids name the
backend (``test_x[memory]``); each test gets a fresh World built on the same
``ManualClock`` that the ``clock`` fixture returns.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.world import World
from world_aws.testing import factories
from world_aws.testing.factories import SERVER_CLOCK_QUEUES, world_factories


@pytest.fixture
def clock() -> ManualClock:
    """The manual clock of this test's World: advance it to move time."""
    return ManualClock()


@pytest.fixture(params=list(world_factories()))
def world(request: pytest.FixtureRequest, clock: ManualClock) -> Iterator[World]:
    """A fresh World of the parametrised kind, built on ``clock``."""
    if request.node.get_closest_marker("queue_follows_clock") and request.param in SERVER_CLOCK_QUEUES:
        pytest.skip(f"the {request.param} World's queue runs delays on the service's clock, not the test's")
    factory = world_factories()[request.param]
    with factory(clock) as built:
        yield built


@pytest.fixture
def race_iterations(request: pytest.FixtureRequest) -> int:
    """Iterations of the fence race for this test's World (WORLD_AWS_RACE_ITERATIONS overrides)."""
    return factories.race_iterations(str(request.node.callspec.params["world"]))
