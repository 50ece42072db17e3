"""Conformance: erasure of an ended run and retention (contract §3.4)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from world_aws.contract.clock import ManualClock
from world_aws.contract.erasure import RETENTION_ATTRIBUTE
from world_aws.contract.records import EventType, RunCreatedData, StepCompletedData
from world_aws.contract.streams import StreamChunk
from world_aws.contract.world import World
from world_aws.errors import Conflict, NotFound
from world_aws.testing.conformance.support import (
    create_hook,
    create_run,
    create_step,
    create_wait,
    creation,
    end_run,
    new_id,
    receive_hook,
    start_step,
    write,
)

_LARGE = bytes(range(256)) * 600  # 150 KiB: over the inline limit, so in blob storage on AWS


def _full_run(world: World, clock: ManualClock, token: str) -> tuple[str, str]:
    """An ended run with a step, a hook resumed, a wait and a stream chunk. Returns (run, resume id)."""
    run_id = create_run(world, input=_LARGE)
    step_id = create_step(world, run_id, input=_LARGE)
    start_step(world, run_id, step_id)
    hook = create_hook(world, run_id, token)
    assert hook.event is not None
    hook_id = hook.event.correlation_id or ""
    resume_id = new_id("resume")
    receive_hook(world, run_id, hook_id, b"hook-payload", resume_id=resume_id)
    create_wait(world, run_id, clock.now() + timedelta(hours=1))
    chunk = StreamChunk(0, step_id, 1, 0, 1, b"value", False, clock.now())
    world.streams.append(run_id, "default", chunk)
    end_run(world, run_id)
    return run_id, resume_id


def test_delete_removes_an_ended_run_and_all_its_data(world: World, clock: ManualClock) -> None:
    token = new_id("tok")
    run_id, resume_id = _full_run(world, clock, token)
    ref = world.blobs.put(b"only this run's" * 10_000, run_id=run_id)

    erased = world.erasure.delete(run_id)

    assert erased.run_id == run_id and erased.records > 0 and erased.blobs_deleted >= 1
    with pytest.raises(NotFound):
        world.runs.get(run_id)
    assert world.events.list(run_id) == []
    assert world.streams.read(run_id, "default") == []
    with pytest.raises(NotFound):
        world.hooks.get_by_token(token)
    assert world.hooks.resumed(token, resume_id) is None
    with pytest.raises(NotFound):
        world.blobs.get(ref)
    assert run_id not in [run.run_id for run in world.runs.list(limit=1000).runs]


@pytest.mark.parametrize("started", [False, True], ids=["pending", "running"])
def test_delete_refuses_a_live_run_and_keeps_it_whole(world: World, started: bool) -> None:
    run_id = create_run(world, started=started)
    step_id = create_step(world, run_id)
    ref = world.blobs.put(b"live data" * 20_000, run_id=run_id)
    with pytest.raises(Conflict, match="cancel it first"):
        world.erasure.delete(run_id)
    assert world.runs.get(run_id).status.value == ("running" if started else "pending")
    assert world.steps.get(run_id, step_id).step_id == step_id
    assert world.blobs.get(ref) == b"live data" * 20_000


def test_delete_of_an_unknown_or_erased_run_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.erasure.delete(new_id("wrun"))
    run_id = create_run(world)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    world.erasure.delete(run_id)
    with pytest.raises(NotFound):
        world.erasure.delete(run_id)


def test_a_blob_another_run_refers_to_outlives_the_erasure(world: World) -> None:
    shared = b"shared payload" * 12_000
    live, ended = create_run(world), create_run(world)
    ref = world.blobs.put(shared, run_id=live)
    assert world.blobs.put(shared, run_id=ended) == ref
    end_run(world, ended)

    erased = world.erasure.delete(ended)

    assert (erased.blobs_deleted, erased.blobs_kept) == (0, 1)
    assert world.blobs.get(ref) == shared
    end_run(world, live)
    assert world.erasure.delete(live).blobs_deleted == 1
    with pytest.raises(NotFound):
        world.blobs.get(ref)


def test_no_write_brings_an_erased_run_back(world: World) -> None:
    run_id = create_run(world)
    step_id = create_step(world, run_id)
    start_step(world, run_id, step_id)
    end_run(world, run_id, EventType.RUN_CANCELLED)
    world.erasure.delete(run_id)

    # A redelivered first message (its creation data), a late step outcome, a second start.
    with pytest.raises(NotFound):
        write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation=creation()))
    with pytest.raises(NotFound):
        write(world, run_id, EventType.STEP_COMPLETED, step_id, StepCompletedData(output=b"late"))
    with pytest.raises(NotFound):
        write(world, run_id, EventType.RUN_STARTED)
    with pytest.raises(NotFound):
        world.runs.get(run_id)
    assert world.events.list(run_id) == []


def test_expired_lists_ended_runs_once_their_retention_has_passed(world: World, clock: ManualClock) -> None:
    kept_a_minute = {RETENTION_ATTRIBUTE: "60"}
    ended = create_run(world, attributes=kept_a_minute)
    live = create_run(world, attributes=kept_a_minute)
    forever = create_run(world)
    end_run(world, ended)
    end_run(world, forever)
    ended_at = world.runs.get(ended).completed_at
    assert ended_at is not None

    assert ended not in world.erasure.expired(before=ended_at + timedelta(seconds=59), limit=100)
    clock.advance(61)
    due = world.erasure.expired(before=clock.now(), limit=100)
    assert ended in due
    assert live not in due and forever not in due

    world.erasure.delete(ended)
    assert ended not in world.erasure.expired(before=clock.now(), limit=100)
