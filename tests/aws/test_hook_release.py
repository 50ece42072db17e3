"""A run's end releases its hooks on DynamoDB, and only a run that made one pays the Query (contract §3.1).

Every ``hook_created`` marks the run item ``hooked`` in its fenced reservation
(``keys.HOOKED``); the end, whose write of the run item comes after any such
reservation, queries the run's hooks only when its image has the mark. These tests
read the token and hook items back from moto: the contract's reads treat a terminal
run's hooks as gone whether or not they were released, so only the stored items show
that the release happened.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

import pytest

from world_aws.aws.codec import items, keys
from world_aws.aws.world import AwsWorld
from world_aws.contract.records import EventRequest, EventType, RunCompletedData
from world_aws.errors import Conflict, RunExpired
from world_aws.testing.conformance.appended import last_position, owned_create, owned_outcome, running_owned
from world_aws.testing.conformance.support import create_hook, create_run, end_run, new_id, write


@contextmanager
def _requests(world: AwsWorld, operation: str = "Query") -> Iterator[list[dict[str, Any]]]:
    """The DynamoDB ``operation`` requests made inside the block (their parameters)."""
    seen: list[dict[str, Any]] = []

    def record(params: dict[str, Any], **_: Any) -> None:
        seen.append(params)

    events = world.table.client.meta.events
    events.register(f"provide-client-params.dynamodb.{operation}", record)
    try:
        yield seen
    finally:
        events.unregister(f"provide-client-params.dynamodb.{operation}", record)


def _hook_queries(queries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [q for q in queries if keys.HOOK_PREFIX in str(q.get("ExpressionAttributeValues", {}))]


def _released(world: AwsWorld, run_id: str, hook_id: str, token: str) -> bool:
    """Whether the stored hook is disposed and its token item released (read back from moto).

    A released token item stays, naming its last holder, until the table's TTL deletes it
    (``items.TOKEN_KEEPS_SECONDS``: ``hooks.resumed``).
    """
    hook = world.table.get(keys.hook_key(run_id, hook_id))
    held = world.table.get(keys.token_key(token))
    return (
        hook is not None
        and "disposed_at" in hook
        and held is not None
        and items.token_released(held)
        and (held["run_id"], held["hook_id"]) == (run_id, hook_id)
        and int(held[keys.TTL_ATTRIBUTE]) > int(world.clock.now().timestamp())
    )


def _run_with_hook(world: AwsWorld) -> tuple[str, str, str]:
    """A running run holding one live hook: its run id, the hook's token and its id."""
    run_id = create_run(world)
    token, hook_id = new_id("tok"), new_id("hook")
    assert create_hook(world, run_id, token, hook_id=hook_id).hook is not None
    return run_id, token, hook_id


def _end_by_tail_append(world: AwsWorld, run_id: str, now: datetime) -> None:
    """The inline runtime's last append: an owned step's outcome and the run's end, as a tail."""
    step_id = new_id("step")
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_create(step_id)], at=now) is not None
    end = EventRequest(EventType.RUN_COMPLETED, None, RunCompletedData(output=b"done"))
    assert world.events.append_after(run_id, after + 1, [owned_outcome(step_id), end], at=now) is not None


def _end_by_transaction_append(world: AwsWorld, run_id: str, now: datetime) -> None:
    """An end appended in a transaction (the outcome updates a step item): no run image comes back."""
    step_id = running_owned(world, run_id)  # created one by one: with its item
    end = EventRequest(EventType.RUN_COMPLETED, None, RunCompletedData(output=b"done"))
    after = last_position(world, run_id)
    assert world.events.append_after(run_id, after, [owned_outcome(step_id), end], at=now) is not None


ENDINGS: dict[str, Callable[[AwsWorld, str, datetime], object]] = {
    "tail append": _end_by_tail_append,
    "transaction append": _end_by_transaction_append,
    "run_completed one by one": lambda world, run_id, _now: end_run(world, run_id),
    "run_failed one by one": lambda world, run_id, _now: end_run(world, run_id, EventType.RUN_FAILED),
    "run_cancelled one by one": lambda world, run_id, _now: end_run(world, run_id, EventType.RUN_CANCELLED),
}


def test_every_end_of_a_run_that_made_a_hook_disposes_it_and_frees_its_token(world: AwsWorld) -> None:
    for how, end in ENDINGS.items():
        # GIVEN a running run holding a live hook
        run_id, token, hook_id = _run_with_hook(world)
        # WHEN the run ends
        with _requests(world) as queries:
            end(world, run_id, world.clock.now())
        # THEN the end queried the run's hooks, disposed the hook and freed its token
        assert len(_hook_queries(queries)) == 1, how
        assert _released(world, run_id, hook_id, token), how
        # AND the token is free for another run
        other = create_run(world)
        assert create_hook(world, other, token).hook is not None, how


def test_the_end_of_a_run_that_never_made_a_hook_queries_no_hooks(world: AwsWorld) -> None:
    for how, end in ENDINGS.items():
        # GIVEN a running run that never made a hook
        run_id = create_run(world)
        # WHEN it ends
        with _requests(world) as queries:
            end(world, run_id, world.clock.now())
        # THEN no Query of its hooks (only an end appended in a transaction, which gets no
        # image of the run item back, cannot tell, and queries)
        expected = 1 if how == "transaction append" else 0
        assert len(_hook_queries(queries)) == expected, how
        run_item = world.table.get(keys.run_key(run_id))
        assert run_item is not None and keys.HOOKED not in run_item, how


def test_a_hook_disposed_before_the_end_leaves_the_run_marked_and_the_end_finds_nothing_live(
    world: AwsWorld,
) -> None:
    # GIVEN a run whose only hook was disposed
    run_id, token, hook_id = _run_with_hook(world)
    write(world, run_id, EventType.HOOK_DISPOSED, hook_id)
    # WHEN it ends
    end_run(world, run_id)
    # THEN the mark stays (a hook was made), and the hook stays disposed with its token free
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None and run_item.get(keys.HOOKED) is True
    assert _released(world, run_id, hook_id, token)


def test_a_refused_late_transition_releases_the_hooks_of_an_end_whose_event_never_landed(
    world: AwsWorld,
) -> None:
    # GIVEN a run with a live hook whose end was reserved but whose event put and hook
    # release were lost (its writer died between the two writes)
    run_id, token, hook_id = _run_with_hook(world)
    end_run(world, run_id)
    run_item = world.table.get(keys.run_key(run_id))
    assert run_item is not None
    end_position = int(str(run_item["seq"]))
    world.table.delete(keys.event_key(run_id, end_position))
    world.table.put({**keys.token_key(token), "run_id": run_id, "hook_id": hook_id})
    world.table.update(keys.hook_key(run_id, hook_id), "REMOVE disposed_at", return_values="NONE")
    # WHEN a late transition is refused by the ended run (a redelivered end)
    with pytest.raises(Conflict):
        end_run(world, run_id, EventType.RUN_FAILED)
    # THEN the end's event is put back and the hook released, from the refusal's image
    assert world.table.get(keys.event_key(run_id, end_position)) is not None
    assert _released(world, run_id, hook_id, token)


def test_a_hook_whose_commit_follows_the_runs_end_is_refused_and_leaves_no_hook_or_token(
    world: AwsWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GIVEN a running run and a hook_created that reserved its position before the run's end
    run_id = create_run(world)
    token = new_id("tok")
    reserved = last_position(world, run_id) + 1
    commit = world.sequencer.commit
    ended: list[object] = []

    def end_then_commit(*args: Any, **kwargs: Any) -> Any:
        if not ended:
            # WHEN the run ends between the hook's reservation and its commit
            ended.append(end_run(world, run_id))
        return commit(*args, **kwargs)

    monkeypatch.setattr(world.sequencer, "commit", end_then_commit)
    with pytest.raises(RunExpired):
        create_hook(world, run_id, token)
    monkeypatch.undo()
    # THEN nothing of the hook is stored, its token is free, and its position is sealed
    assert ended and world.table.get(keys.token_key(token)) is None
    stored_hooks = world.table.query_all(
        "pk = :pk AND begins_with(sk, :hook)", {":pk": keys.run_pk(run_id), ":hook": keys.HOOK_PREFIX}
    )
    assert list(stored_hooks) == []
    sealed = world.table.get(keys.event_key(run_id, reserved))
    assert sealed is not None and sealed["type"] == EventType.NOOP.value
    assert [e.type for e in world.events.list(run_id)][-1] is EventType.RUN_COMPLETED
    # AND another run takes the token at once, with no takeover of a dead holder
    other = create_run(world)
    assert create_hook(world, other, token).hook is not None
    assert world.hooks.get_by_token(token).run_id == other


def test_a_released_token_is_claimed_by_the_next_hook_in_one_commit(world: AwsWorld) -> None:
    # GIVEN a token released by its hook's disposal (its item stays, naming that hook)
    run_id, token, hook_id = _run_with_hook(world)
    write(world, run_id, EventType.HOOK_DISPOSED, hook_id)
    assert _released(world, run_id, hook_id, token)
    # WHEN a hook of another run claims it
    other = create_run(world)
    with _requests(world, "TransactWriteItems") as commits:
        assert create_hook(world, other, token).hook is not None
    # THEN one commit took it, as a never-used token is taken (no takeover of a dead holder),
    # and the item names the new holder, no longer released or expiring
    assert len(commits) == 1
    held = world.table.get(keys.token_key(token))
    assert held is not None and not items.token_released(held) and keys.TTL_ATTRIBUTE not in held
    assert world.hooks.get_by_token(token).run_id == other
