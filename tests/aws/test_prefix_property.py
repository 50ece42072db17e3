"""Readers racing writers on DynamoDB see a growing, gap-free prefix of the log (contract §3.2)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator

import pytest

from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import Event, EventType
from world_aws.testing.aws_factory import aws_world
from world_aws.testing.conformance.support import create_run, create_step

WRITERS = 6
STEPS_EACH = 8


@pytest.fixture
def real_time_world(clock: ManualClock) -> Iterator[AwsWorld]:
    """The World with the default repair policy: readers wait on the real monotonic clock."""
    with aws_world(clock) as built:
        yield built


def test_each_read_extends_the_previous_one_while_writers_append(real_time_world: AwsWorld) -> None:
    world = real_time_world
    # GIVEN a running run and writers that each create steps as fast as they can
    run_id = create_run(world)
    start = threading.Barrier(WRITERS + 1)
    errors: list[BaseException] = []

    def writer() -> None:
        start.wait()
        try:
            for _ in range(STEPS_EACH):
                create_step(world, run_id)
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=writer) for _ in range(WRITERS)]
    for thread in threads:
        thread.start()
    # WHEN a reader lists the log over and over meanwhile
    start.wait()
    reads: list[list[Event]] = []
    while any(thread.is_alive() for thread in threads):
        reads.append(world.events.list(run_id))
    for thread in threads:
        thread.join()
    reads.append(world.events.list(run_id))
    # THEN every read is a prefix of the next one, and the last holds every step once
    assert errors == []
    for earlier, later in itertools.pairwise(reads):
        assert later[: len(earlier)] == earlier
    final = reads[-1]
    assert [e.type for e in final].count(EventType.STEP_CREATED) == WRITERS * STEPS_EACH
    positions = [e.position for e in final]
    assert positions == sorted(set(positions))
