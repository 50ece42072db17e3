"""Fixtures of the DynamoDB-specific tests: an AWS World on moto, with a fake time for hole repair."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.fake_time import FakeMonotonic
from world_aws.aws.read.log_reader import HoleRepairPolicy
from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import ManualClock
from world_aws.testing.aws_factory import aws_world

# The readers' grace period before sealing a hole, on the fake monotonic clock.
GRACE_SECONDS = 2.0


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def fake_time() -> FakeMonotonic:
    return FakeMonotonic()


@pytest.fixture
def world(clock: ManualClock, fake_time: FakeMonotonic) -> Iterator[AwsWorld]:
    repair = HoleRepairPolicy(
        grace_seconds=GRACE_SECONDS, monotonic=fake_time.monotonic, sleep=fake_time.sleep
    )
    with aws_world(clock, repair=repair) as built:
        yield built
