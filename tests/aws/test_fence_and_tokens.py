"""The fence and token uniqueness on DynamoDB, checked on the stored items (contract §3.1, §3.2, §2.3)."""

from __future__ import annotations

from functools import partial

from world_aws.aws.codec import keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import EventType, HookConflictData, RunStatus
from world_aws.errors import NotFound, RunExpired
from world_aws.testing.conformance.support import (
    Racer,
    create_hook,
    create_run,
    create_step,
    end_run,
    new_id,
    start_step,
)


def _stored_log(world: AwsWorld, run_id: str) -> list[dict[str, object]]:
    return [
        item
        for item in world.table.query_all("pk = :pk", {":pk": keys.run_pk(run_id)})
        if str(item[keys.SK]).startswith(keys.EVENT_PREFIX)
    ]


def test_run_completed_racing_redelivered_starts_on_dynamodb(world: AwsWorld) -> None:
    with Racer(8) as racer:
        for _ in range(12):
            # GIVEN a running run whose 7 steps are running (so every start is a redelivery)
            run_id = create_run(world)
            step_ids = [create_step(world, run_id) for _ in range(7)]
            for step_id in step_ids:
                start_step(world, run_id, step_id)
            # WHEN run_completed and 7 step_started race
            calls = [partial(end_run, world, run_id)] + [
                partial(start_step, world, run_id, s) for s in step_ids
            ]
            outcomes = racer.race(calls)
            # THEN refused starts are RunExpired, and the stored log is dense up to the run's sequence ...
            assert all(isinstance(o, RunExpired) for o in outcomes[1:] if isinstance(o, Exception))
            stored = _stored_log(world, run_id)
            run_item = world.table.get(keys.run_key(run_id))
            assert run_item is not None and run_item["status"] == RunStatus.COMPLETED.value
            assert [int(str(item["pos"])) for item in stored] == list(range(1, int(str(run_item["seq"])) + 1))
            # ... with no step_started after run_completed
            types = [str(item["type"]) for item in stored]
            end_at = types.index(EventType.RUN_COMPLETED.value)
            assert EventType.STEP_STARTED.value not in types[end_at + 1 :]


def test_terminal_run_frees_its_tokens_and_a_lost_release_is_survived(world: AwsWorld) -> None:
    # GIVEN a run holding a hook with token T, that then completes
    token = new_id("tok")
    first_run = create_run(world)
    hook = create_hook(world, first_run, token).hook
    assert hook is not None
    end_run(world, first_run)
    # ... and the release of its hook was lost (the token item and live hook put back)
    world.table.put({**keys.token_key(token), "run_id": first_run, "hook_id": hook.hook_id})
    world.table.update(keys.hook_key(first_run, hook.hook_id), "REMOVE disposed_at", return_values="NONE")
    # WHEN the token is looked up, the ended run's hooks listed, and another run claims T
    lookup_error = None
    try:
        world.hooks.get_by_token(token)
    except NotFound as exc:
        lookup_error = exc
    listed = world.hooks.list(first_run)
    second_run = create_run(world)
    claimed = create_hook(world, second_run, token)
    # THEN the ended run's hook is gone, and the new run takes the token over
    assert lookup_error is not None and listed == []
    assert claimed.event is not None and claimed.event.type is EventType.HOOK_CREATED
    assert claimed.hook is not None and world.hooks.get_by_token(token) == claimed.hook


def test_a_live_holder_keeps_its_token(world: AwsWorld) -> None:
    # GIVEN a running run holding token T
    token = new_id("tok")
    holder = create_run(world)
    create_hook(world, holder, token)
    # WHEN another run creates a hook on T
    other = create_run(world)
    result = create_hook(world, other, token, metadata=None)
    # THEN it gets a hook_conflict naming the holder, at its own next position, and no hook
    assert result.event is not None and result.hook is None
    assert (
        result.event.type,
        result.event.data_as(HookConflictData).conflicting_run_id,
        result.event.position,
    ) == (
        EventType.HOOK_CONFLICT,
        holder,
        3,
    )
    assert world.hooks.list(other) == []
    assert world.hooks.get_by_token(token).run_id == holder
    assert [e.type for e in world.events.list(other)][-1] is EventType.HOOK_CONFLICT
