"""The run item's due time on DynamoDB (``due_us``, ``LiveRun.due_at``): what a refused wait puts back.

A ``wait_created`` sets ``due_us`` in its reservation, before its commit can be refused
as a duplicate; the refusal puts the previous value back (``due_prev_us``), unless a later
reservation changed it meanwhile. The conformance suite covers the refusal on both
Worlds; this covers the later reservation, read back from moto.
"""

from __future__ import annotations

from datetime import timedelta

from world_aws.aws.codec import items, keys
from world_aws.aws.world import AwsWorld
from world_aws.aws.write.wait_events import WaitEvents
from world_aws.testing.conformance.support import create_run, create_wait


def _due(world: AwsWorld, run_id: str) -> object:
    item = world.table.get(keys.run_key(run_id))
    assert item is not None
    return items.from_epoch_us(item.get(items.DUE_US))


def test_a_refused_waits_put_back_leaves_a_later_reservations_due_time(world: AwsWorld) -> None:
    # GIVEN a run whose wait due in an hour, then one due in three hours, were created
    run_id = create_run(world)
    now = world.clock.now()
    one_hour, three_hours = now + timedelta(hours=1), now + timedelta(hours=3)
    create_wait(world, run_id, one_hour)
    create_wait(world, run_id, three_hours)
    assert _due(world, run_id) == three_hours
    # WHEN the put-back of a refused duplicate of the first wait comes after that later
    # reservation (it names the first wait's due time, which is no longer the run's)
    waits = WaitEvents(world.sequencer, world.blobs)
    waits.restore_due(run_id, one_hour)
    # THEN the later wait's due time stands
    assert _due(world, run_id) == three_hours
    # AND a put-back that does match restores the value before its reservation
    waits.restore_due(run_id, three_hours)
    assert _due(world, run_id) == one_hour
