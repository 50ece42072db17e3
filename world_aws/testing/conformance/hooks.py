"""Conformance: hooks (contract §2.3, §3, §6.2): token uniqueness, conflicts, release, resume dedup."""

from __future__ import annotations

import pytest

from world_aws.contract.records import EventType, HookConflictData, HookCreatedData, HookReceivedData
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, NotFound
from world_aws.testing.conformance.support import (
    create_hook,
    create_run,
    end_run,
    new_id,
    receive_hook,
    types_of,
    write,
)


def test_hook_created_makes_a_live_hook_found_by_token(world: World) -> None:
    run_id = create_run(world)
    token = new_id("tok")
    hook_id = new_id("hook")
    result = create_hook(world, run_id, token, hook_id=hook_id, metadata=b"\x00meta")
    hook = world.hooks.get_by_token(token)
    assert (hook.run_id, hook.hook_id, hook.token, hook.metadata) == (run_id, hook_id, token, b"\x00meta")
    assert result.hook == hook
    assert result.event is not None and result.event.type is EventType.HOOK_CREATED
    assert world.hooks.list(run_id) == [hook]


def test_hook_created_without_token_is_bad_input(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(BadInput):
        write(world, run_id, EventType.HOOK_CREATED, new_id("hook"), HookCreatedData(token="", metadata=b"m"))


def test_hook_conflict_cannot_be_written_by_a_client(world: World) -> None:
    run_id = create_run(world)
    data = HookConflictData(token=new_id("tok"), conflicting_run_id=run_id)
    with pytest.raises(BadInput):
        write(world, run_id, EventType.HOOK_CONFLICT, new_id("hook"), data)


def test_duplicate_hook_created_is_conflict(world: World) -> None:
    run_id = create_run(world)
    token = new_id("tok")
    hook_id = new_id("hook")
    create_hook(world, run_id, token, hook_id=hook_id)
    with pytest.raises(Conflict):
        create_hook(world, run_id, token, hook_id=hook_id)
    assert len(world.hooks.list(run_id)) == 1


def test_hook_token_taken_yields_hook_conflict_event(world: World) -> None:
    # GIVEN a live hook of one run holding a token
    holder = create_run(world)
    token = new_id("tok")
    create_hook(world, holder, token)
    # WHEN another run creates a hook with the same token
    other = create_run(world)
    hook_id = new_id("hook")
    result = create_hook(world, other, token, hook_id=hook_id)
    # THEN no error: a hook_conflict event naming the holder is appended and returned
    assert result.hook is None
    event = result.event
    assert event is not None and event.type is EventType.HOOK_CONFLICT
    conflict = event.data_as(HookConflictData)
    assert (event.correlation_id, conflict.token, conflict.conflicting_run_id) == (hook_id, token, holder)
    assert world.events.list(other)[-1] == event
    # AND the token still belongs to the first hook; the second run has no hook
    assert world.hooks.get_by_token(token).run_id == holder
    assert world.hooks.list(other) == []


def test_a_hook_id_answered_with_hook_conflict_is_not_created_later(world: World) -> None:
    # GIVEN a run whose hook_created was answered with hook_conflict (another run held the
    # token), and the holder's end freeing the token
    holder = create_run(world)
    token = new_id("tok")
    create_hook(world, holder, token)
    run_id = create_run(world)
    hook_id = new_id("hook")
    first = create_hook(world, run_id, token, hook_id=hook_id).event
    assert first is not None and first.type is EventType.HOOK_CONFLICT
    end_run(world, holder)
    # WHEN the same create comes again (a concurrent pass that replayed the log before the
    # conflict: its workflow is told the hook conflicted, whatever this create does)
    # THEN it is a duplicate create of (run, hook id), contract §3: Conflict, and the run holds no
    # hook (else it holds the token, unseen by its workflow, until it ends: its payloads
    # are dropped and every other run's hook of that token gets hook_conflict)
    with pytest.raises(Conflict):
        create_hook(world, run_id, token, hook_id=hook_id)
    assert world.hooks.list(run_id) == []
    with pytest.raises(NotFound):
        world.hooks.get_by_token(token)


def test_hook_disposed_frees_the_token(world: World) -> None:
    run_id = create_run(world)
    token = new_id("tok")
    hook = create_hook(world, run_id, token).hook
    assert hook is not None
    write(world, run_id, EventType.HOOK_DISPOSED, hook.hook_id)
    with pytest.raises(NotFound):
        world.hooks.get_by_token(token)
    assert world.hooks.list(run_id) == []
    # the token is free again: another run takes it
    other = create_run(world)
    assert create_hook(world, other, token).hook is not None
    assert world.hooks.get_by_token(token).run_id == other


def test_run_end_frees_hook_tokens(world: World) -> None:
    for ending in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED):
        # GIVEN a run holding two live hooks
        run_id = create_run(world)
        tokens = [new_id("tok"), new_id("tok")]
        for token in tokens:
            create_hook(world, run_id, token)
        # WHEN the run ends
        end_run(world, run_id, ending)
        # THEN its hooks are gone and their tokens free for another run
        assert world.hooks.list(run_id) == []
        successor = create_run(world)
        for token in tokens:
            with pytest.raises(NotFound):
                world.hooks.get_by_token(token)
            assert create_hook(world, successor, token).hook is not None


def test_hook_received_delivers_payloads_while_the_hook_stays_live(world: World) -> None:
    run_id = create_run(world)
    token = new_id("tok")
    hook = create_hook(world, run_id, token).hook
    assert hook is not None
    for payload in (b"one", b"two", b"three"):
        result = receive_hook(world, run_id, hook.hook_id, payload)
        assert result.event is not None and result.event.data_as(HookReceivedData).payload == payload
    received = [e for e in world.events.list(run_id) if e.type is EventType.HOOK_RECEIVED]
    assert [e.data_as(HookReceivedData).payload for e in received] == [b"one", b"two", b"three"]
    assert world.hooks.get_by_token(token) == hook


def test_hook_received_is_deduplicated_on_resume_id(world: World) -> None:
    # GIVEN a hook that received a payload under resume id R
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    resume_id = new_id("resume")
    first = receive_hook(world, run_id, hook.hook_id, b"payload", resume_id=resume_id).event
    assert first is not None
    length = len(world.events.list(run_id))
    # WHEN the same resume is written again (a retried resume_hook or a consumer re-ensure)
    again = receive_hook(world, run_id, hook.hook_id, b"payload", resume_id=resume_id).event
    # THEN the first event comes back and nothing is appended
    assert again is not None
    answer = again.data_as(HookReceivedData)
    assert (again.position, again.type, answer.payload, answer.resume_id) == (
        first.position,
        EventType.HOOK_RECEIVED,
        b"payload",
        resume_id,
    )
    assert len(world.events.list(run_id)) == length


def test_a_resume_is_found_by_its_token_after_the_hook_is_disposed(world: World) -> None:
    # GIVEN a hook that received a payload under resume id R, then was disposed
    run_id = create_run(world)
    token = new_id("tok")
    hook = create_hook(world, run_id, token).hook
    assert hook is not None
    resume_id = new_id("resume")
    first = receive_hook(world, run_id, hook.hook_id, b"payload", resume_id=resume_id).event
    assert first is not None
    write(world, run_id, EventType.HOOK_DISPOSED, hook.hook_id)
    # WHEN a caller retrying R asks by the token
    found = world.hooks.resumed(token, resume_id)
    # THEN it learns the resume was recorded, where
    assert found is not None
    assert (found.run_id, found.position, found.type, found.correlation_id) == (
        run_id,
        first.position,
        EventType.HOOK_RECEIVED,
        hook.hook_id,
    )
    assert found.data_as(HookReceivedData).resume_id == resume_id
    # AND another id, or a token never held, is not a resume
    assert world.hooks.resumed(token, new_id("resume")) is None
    assert world.hooks.resumed(new_id("tok"), resume_id) is None


def test_a_resume_is_found_by_its_token_after_its_run_ended(world: World) -> None:
    for ending in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED):
        run_id = create_run(world)
        token = new_id("tok")
        hook = create_hook(world, run_id, token).hook
        assert hook is not None
        resume_id = new_id("resume")
        receive_hook(world, run_id, hook.hook_id, b"payload", resume_id=resume_id)
        end_run(world, run_id, ending)
        found = world.hooks.resumed(token, resume_id)
        assert found is not None and (found.run_id, found.correlation_id) == (run_id, hook.hook_id)


def test_a_resume_is_looked_for_at_the_tokens_last_holder(world: World) -> None:
    # GIVEN a token released by one hook, after a resume R, and claimed by a hook of another run
    first_run, second_run, token = create_run(world), create_run(world), new_id("tok")
    first = create_hook(world, first_run, token).hook
    assert first is not None
    resume_id = new_id("resume")
    receive_hook(world, first_run, first.hook_id, b"one", resume_id=resume_id)
    write(world, first_run, EventType.HOOK_DISPOSED, first.hook_id)
    second = create_hook(world, second_run, token).hook
    assert second is not None and world.hooks.get_by_token(token).run_id == second_run
    # THEN R is not the new holder's; the new holder's own resume is found
    assert world.hooks.resumed(token, resume_id) is None
    other = new_id("resume")
    receive_hook(world, second_run, second.hook_id, b"two", resume_id=other)
    found = world.hooks.resumed(token, other)
    assert found is not None and found.run_id == second_run


def test_hook_received_with_distinct_resume_ids_appends_each(world: World) -> None:
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    events = [receive_hook(world, run_id, hook.hook_id, b"same").event for _ in range(3)]
    assert len({event.position for event in events if event is not None}) == 3
    assert types_of(world, run_id).count(EventType.HOOK_RECEIVED) == 3


def test_hook_received_keeps_the_resume_id_in_the_log(world: World) -> None:
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    resume_id = new_id("resume")
    receive_hook(world, run_id, hook.hook_id, b"p", resume_id=resume_id)
    assert world.events.list(run_id)[-1].data_as(HookReceivedData).resume_id == resume_id


def test_hook_received_on_missing_hook_is_not_found(world: World) -> None:
    run_id = create_run(world)
    with pytest.raises(NotFound):
        receive_hook(world, run_id, new_id("hook"), b"p")
    assert EventType.HOOK_RECEIVED not in types_of(world, run_id)


def test_hook_received_after_dispose_is_not_found(world: World) -> None:
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    write(world, run_id, EventType.HOOK_DISPOSED, hook.hook_id)
    with pytest.raises(NotFound):
        receive_hook(world, run_id, hook.hook_id, b"late")


def test_hook_disposed_twice_is_not_found(world: World) -> None:
    run_id = create_run(world)
    hook = create_hook(world, run_id, new_id("tok")).hook
    assert hook is not None
    write(world, run_id, EventType.HOOK_DISPOSED, hook.hook_id)
    with pytest.raises(NotFound):
        write(world, run_id, EventType.HOOK_DISPOSED, hook.hook_id)


def test_hooks_list_returns_only_the_live_hooks_of_the_run(world: World) -> None:
    run_id = create_run(world)
    kept = create_hook(world, run_id, new_id("tok")).hook
    gone = create_hook(world, run_id, new_id("tok")).hook
    assert kept is not None and gone is not None
    write(world, run_id, EventType.HOOK_DISPOSED, gone.hook_id)
    create_hook(world, create_run(world), new_id("tok"))
    assert world.hooks.list(run_id) == [kept]


def test_get_by_unknown_token_is_not_found(world: World) -> None:
    with pytest.raises(NotFound):
        world.hooks.get_by_token(new_id("tok"))
