"""Issue 41 items 4 and 5: debounce, singleton and batch workflows, on both Worlds (memory, DynamoDB on moto).

A manual clock moves the windows; the due messages are real delayed queue messages
(the SQS pump holds a delayed message until the clock reaches it). What is checked is
read back from the World: which runs exist, with which input, and what they returned.
"""

from __future__ import annotations

import pytest

from harness.harness import Harness
from world_aws import Batch, Conflict, Debounce, Singleton, Workflows
from world_aws.client.coalesce import CLAIM_GRACE_SECONDS
from world_aws.contract.coalesce import claim
from world_aws.contract.records import RunStatus
from world_aws.errors import BadInput, NotFound, WorkflowFailedError
from world_aws.worker.gates import BATCH_ITEMS_ATTRIBUTE, GATE_ATTRIBUTE


def gated_app() -> Workflows:
    app = Workflows()

    @app.workflow(debounce=Debounce("30s", key=lambda user, _text: user))
    async def reindex(user: str, text: str) -> str:
        return f"{user}:{text}"

    @app.workflow(batch=Batch(max_size=3, max_wait="5s", key=lambda item: item["shard"]))
    async def ingest(items: list[dict[str, int]]) -> list[int]:
        return [item["n"] for item in items]

    @app.workflow(singleton=True)
    async def rebuild(fail: bool) -> str:
        if fail:
            raise ValueError("rebuild failed")
        return "built"

    @app.workflow(singleton=Singleton(key=lambda account, *_: account, on_conflict="refuse"))
    async def settle_account(account: str, wait: bool) -> str:
        if wait:
            from world_aws import sleep

            await sleep("1h")
        return account

    return app


def _exists(harness: Harness, run_id: str) -> bool:
    try:
        harness.world.runs.get(run_id)
    except NotFound:
        return False
    return True


def test_debounced_starts_collapse_into_one_run_with_the_last_arguments(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    # GIVEN three starts of one user's reindex within 30 s, and one of another user
    first = runtime.start("reindex", "ann", "v1")
    harness.advance(10)
    harness.drain()
    second = runtime.start("reindex", "ann", "v2")
    harness.advance(20)
    harness.drain()  # the first due message comes: the window moved, so it comes again
    third = runtime.start("reindex", "ann", "v3")
    other = runtime.start("reindex", "bob", "b1")
    # THEN every start of ann got the same run, which does not exist while the key is not quiet
    assert first.run_id == second.run_id == third.run_id != other.run_id
    assert not _exists(harness, first.run_id)
    harness.advance(29)
    harness.drain()
    assert not _exists(harness, first.run_id)
    # WHEN ann has been quiet for 30 s THEN one run starts, with the last arguments
    harness.advance(2)
    harness.drain()
    assert harness.settle(first.run_id) is RunStatus.COMPLETED
    assert harness.settle(other.run_id) is RunStatus.COMPLETED
    assert first.result() == "ann:v3" and other.result() == "bob:b1"
    assert harness.world.runs.get(first.run_id).attributes[GATE_ATTRIBUTE] == "debounce:reindex:ann"
    # AND a start after the run started opens a new window (a new run)
    later = runtime.start("reindex", "ann", "v4")
    assert later.run_id != first.run_id
    harness.advance(31)
    harness.drain()
    assert harness.settle(later.run_id) is RunStatus.COMPLETED and later.result() == "ann:v4"
    # AND the due messages left nothing behind: the gate has no open or closed window
    gate = harness.world.gates.get("debounce:reindex:ann")
    assert gate.open is None and gate.closed == ()


def test_batched_starts_become_runs_of_lists_at_max_size_or_max_wait(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    # GIVEN seven items of shard 1 and one of shard 2
    handles = [runtime.start("ingest", {"shard": 1, "n": n}) for n in range(7)]
    lone = runtime.start("ingest", {"shard": 2, "n": 100})
    # THEN the items went into batches of three in the order they came
    runs = [h.run_id for h in handles]
    assert runs[0] == runs[1] == runs[2] != runs[3] == runs[4] == runs[5] != runs[6]
    # AND the two full batches start at once, without waiting
    harness.drain()
    assert harness.settle(runs[0]) is RunStatus.COMPLETED
    assert harness.settle(runs[3]) is RunStatus.COMPLETED
    assert not _exists(harness, runs[6]) and not _exists(harness, lone.run_id)
    # WHEN max_wait passes THEN the partial batches start too
    harness.advance(5)
    harness.drain()
    assert harness.settle(runs[6]) is RunStatus.COMPLETED
    assert harness.settle(lone.run_id) is RunStatus.COMPLETED
    # AND each caller's result() is its batch run's result: the list of the batch's items
    assert [h.result() for h in handles] == [[0, 1, 2]] * 3 + [[3, 4, 5]] * 3 + [[6]]
    assert lone.result() == [100]
    assert harness.world.runs.get(runs[0]).attributes[BATCH_ITEMS_ATTRIBUTE] == "3"


def test_a_singleton_returns_its_live_run_and_frees_its_key_whenever_the_run_ends(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    # GIVEN a live singleton run
    first = runtime.start("rebuild", False)
    # THEN a second start returns that run (on_conflict="return", the default)
    assert runtime.start("rebuild", False).run_id == first.run_id
    # WHEN it completes THEN the next start is a new run
    assert harness.settle(first) is RunStatus.COMPLETED
    failing = runtime.start("rebuild", True)
    assert failing.run_id != first.run_id
    # AND one that failed frees the key too
    assert harness.settle(failing) is RunStatus.FAILED
    with pytest.raises(WorkflowFailedError):
        failing.result()
    cancelled = runtime.start("rebuild", False)
    assert cancelled.run_id != failing.run_id
    # AND one that was cancelled
    cancelled.cancel("not now")
    harness.drain()
    assert harness.status(cancelled.run_id) is RunStatus.CANCELLED
    last = runtime.start("rebuild", False)
    assert last.run_id != cancelled.run_id
    assert harness.settle(last) is RunStatus.COMPLETED


def test_a_refusing_singleton_refuses_a_second_live_run_of_its_key_by_name(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    # GIVEN account a1's run sleeping, so live
    live = runtime.start("settle_account", "a1", True)
    harness.drain()
    assert harness.status(live.run_id) is RunStatus.RUNNING
    # WHEN another start of a1 comes THEN it is refused, naming the live run; a2 is not held
    with pytest.raises(Conflict, match=live.run_id):
        runtime.start("settle_account", "a1", False)
    other = runtime.start("settle_account", "a2", False)
    assert harness.settle(other) is RunStatus.COMPLETED
    # AND once the live run ends the key is free
    harness.advance(3600)
    assert harness.settle(live) is RunStatus.COMPLETED
    again = runtime.start("settle_account", "a1", False)
    assert harness.settle(again) is RunStatus.COMPLETED and again.run_id != live.run_id


def test_gated_starts_refuse_what_they_cannot_honour_by_name(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    with pytest.raises(BadInput, match="one positional argument"):
        runtime.start("ingest", {"shard": 1, "n": 1}, {"shard": 1, "n": 2})
    with pytest.raises(BadInput, match="attributes"):
        runtime.start("reindex", "ann", "v1", attributes={"team": "a"})
    with pytest.raises(BadInput, match="above"):
        runtime.start("reindex", "ann", "x" * 70_000)
    with pytest.raises(BadInput, match="at least 1s"):
        Debounce("0.5s")
    with pytest.raises(BadInput, match="max_size"):
        Batch(max_size=0, max_wait="1s")
    app = Workflows()
    with pytest.raises(BadInput, match="choose one"):

        @app.workflow(debounce=Debounce("1s"), singleton=True)
        async def both() -> None:
            return None


def test_a_singleton_claim_whose_run_never_came_frees_after_its_grace(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    # GIVEN a starter that claimed the key and died before creating its run
    harness.world.gates.change(
        "singleton:rebuild:*", lambda gate, now: claim(gate, run_id="wrun_ghost", dead="", now=now)
    )
    # THEN within the claim's grace a start returns that run (its start may still be on its way)
    assert runtime.start("rebuild", False).run_id == "wrun_ghost"
    # WHEN the grace has passed THEN the key goes to a new run, which runs
    harness.advance(CLAIM_GRACE_SECONDS + 1)
    fresh = runtime.start("rebuild", False)
    assert fresh.run_id != "wrun_ghost"
    assert harness.settle(fresh) is RunStatus.COMPLETED
    # AND an erased holder (reads cannot tell it from one not created yet) frees the key once its
    # claim is past the grace
    runtime.client.delete_run(fresh.run_id)
    harness.advance(CLAIM_GRACE_SECONDS + 1)
    assert runtime.start("rebuild", False).run_id not in (fresh.run_id, "wrun_ghost")
