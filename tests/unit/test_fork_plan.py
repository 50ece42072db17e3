"""The fork point and the copied events, as pure functions of a log (``client/fork_plan.py``)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from world_aws.client.fork_plan import copied_count, copy_plan, fork_point
from world_aws.contract.records import (
    Event,
    EventData,
    EventType,
    HookConflictData,
    HookCreatedData,
    HookReceivedData,
    PatchAppliedData,
    Run,
    RunStatus,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
)
from world_aws.engine.children import child_run_id, child_token
from world_aws.errors import BadInput, Conflict, NotFound

SOURCE, FORK = "wrun_SRC", "wrun_FRK"
AT = datetime(2026, 1, 1, tzinfo=UTC)


class Log:
    """A log built event by event: ``log.add(type, cid, data)``."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def add(self, etype: EventType, cid: str | None = None, data: EventData | None = None) -> int:
        position = len(self.events) + 1
        self.events.append(Event(SOURCE, position, etype, cid, AT, data))  # type: ignore[arg-type]
        return position

    def step(self, n: int, name: str, *, outcome: EventType | None = EventType.STEP_COMPLETED) -> str:
        cid = f"step_SRC_{n}"
        self.add(EventType.STEP_CREATED, cid, StepCreatedData(step_name=name, input=b"in"))
        self.add(EventType.STEP_STARTED, cid, StepStartedData(step_name=name))
        if outcome is EventType.STEP_COMPLETED:
            self.add(outcome, cid, StepCompletedData(output=b"out"))
        elif outcome is EventType.STEP_FAILED:
            self.add(outcome, cid, StepFailedData(error=b"err"))
        return cid


def run(status: RunStatus) -> Run:
    return Run(SOURCE, "wf", status, "dpl", 3, b"", AT, AT)


def shape(plan: list) -> list[tuple[str, str | None]]:  # type: ignore[type-arg]
    return [(r.type.value, r.correlation_id) for r in plan]


def test_from_step_is_the_nth_call_and_a_short_name_matches_the_qualified_one() -> None:
    log = Log()
    log.add(EventType.RUN_CREATED)
    log.step(1, "shop.charge")
    second = log.add(
        EventType.STEP_CREATED, "step_SRC_2", StepCreatedData(step_name="shop.charge", input=b"")
    )
    assert fork_point(run(RunStatus.COMPLETED), log.events, "charge#2") == second
    assert fork_point(run(RunStatus.COMPLETED), log.events, "shop.charge") == 2
    with pytest.raises(NotFound, match=r"has no step 'charge#3' \(it calls it 2 times\)"):
        fork_point(run(RunStatus.COMPLETED), log.events, "charge#3")
    with pytest.raises(BadInput, match="name the step"):
        fork_point(run(RunStatus.COMPLETED), log.events, None)
    with pytest.raises(Conflict):
        fork_point(run(RunStatus.RUNNING), log.events, "charge")


def test_a_sibling_completed_after_the_point_is_copied_a_sibling_failed_after_it_is_not() -> None:
    # GIVEN three gathered steps: b fails first (the point), then a completes, c fails
    log = Log()
    for n, name in ((1, "a"), (2, "b"), (3, "c")):
        log.add(EventType.STEP_CREATED, f"step_SRC_{n}", StepCreatedData(step_name=name, input=b""))
    point = log.add(EventType.STEP_FAILED, "step_SRC_2", StepFailedData(error=b"b broke"))
    log.add(EventType.STEP_COMPLETED, "step_SRC_1", StepCompletedData(output=b"a"))
    log.add(EventType.STEP_FAILED, "step_SRC_3", StepFailedData(error=b"c broke"))
    log.add(EventType.RUN_FAILED)
    plan = copy_plan(log.events, point, SOURCE, FORK)
    # THEN only a is copied, under the fork's id: b and c run again
    assert shape(plan) == [("step_created", "step_FRK_1"), ("step_completed", "step_FRK_1")]


def test_an_inline_step_loses_its_owner_and_its_retry_after() -> None:
    log = Log()
    cid = "step_SRC_1"
    log.add(EventType.STEP_CREATED, cid, StepCreatedData(step_name="a", input=b"", owner="m#1#x"))
    log.add(EventType.STEP_RETRYING, cid, StepRetryingData(error=b"e", retry_after=AT, owner="m#1#x"))
    log.add(EventType.STEP_STARTED, cid, StepStartedData(step_name="a", takes_over=1))
    log.add(EventType.STEP_COMPLETED, cid, StepCompletedData(output=b"a", owner="m#2#y"))
    plan = copy_plan(log.events, 99, SOURCE, FORK)
    assert [r.type for r in plan] == [
        EventType.STEP_CREATED,
        EventType.STEP_STARTED,  # the owned create was the first start too
        EventType.STEP_RETRYING,
        EventType.STEP_STARTED,
        EventType.STEP_COMPLETED,
    ]
    assert all(getattr(r.data, "owner", None) is None for r in plan)
    assert plan[2].data_as(StepRetryingData).retry_after is None
    assert plan[3].data_as(StepStartedData).takes_over is None


def test_a_finished_child_is_copied_under_the_forks_token_a_later_outcome_is_not() -> None:
    log = Log()
    token = child_token(child_run_id(SOURCE, "child_SRC_1"))
    log.add(EventType.HOOK_CREATED, "child_SRC_1", HookCreatedData(token=token))
    log.add(
        EventType.HOOK_RECEIVED,
        "child_SRC_1",
        HookReceivedData(payload=b"ok", token=token, resume_id="x:end"),
    )
    late = child_token(child_run_id(SOURCE, "child_SRC_2"))
    log.add(EventType.HOOK_CREATED, "child_SRC_2", HookCreatedData(token=late))
    point = log.add(EventType.RUN_CANCELLED)
    log.add(EventType.HOOK_RECEIVED, "child_SRC_2", HookReceivedData(payload=b"ok", token=late))
    plan = copy_plan(log.events, point, SOURCE, FORK)
    assert shape(plan) == [("hook_created", "child_FRK_1"), ("hook_received", "child_FRK_1")]
    fork_token = child_token(child_run_id(FORK, "child_FRK_1"))
    assert plan[0].data_as(HookCreatedData).token == fork_token
    assert plan[1].data_as(HookReceivedData).token == fork_token


def test_nothing_after_a_hook_conflict_is_copied_and_a_resume_without_id_gets_one() -> None:
    log = Log()
    log.add(EventType.HOOK_CREATED, "hook_SRC_1", HookCreatedData(token="t1"))
    at = log.add(EventType.HOOK_RECEIVED, "hook_SRC_1", HookReceivedData(payload=b"p"))
    log.add(EventType.HOOK_CONFLICT, "hook_SRC_2", HookConflictData(token="t2", conflicting_run_id="wrun_X"))
    log.step(1, "after")
    plan = copy_plan(log.events, 99, SOURCE, FORK)
    assert shape(plan) == [("hook_created", "hook_FRK_1"), ("hook_received", "hook_FRK_1")]
    assert plan[1].data_as(HookReceivedData).resume_id == f"fork_{at}"


def test_copied_count_is_the_plans_prefix_the_fork_holds_in_order() -> None:
    log = Log()
    log.step(1, "a")
    log.step(2, "b")
    plan = copy_plan(log.events, 99, SOURCE, FORK)
    fork = [Event(FORK, i + 1, r.type, r.correlation_id, AT, r.data) for i, r in enumerate(plan[:4])]
    noise = Event(FORK, 9, EventType.NOOP, None, AT)
    assert copied_count(plan, [fork[0], noise, fork[1], fork[1], fork[2], fork[3]]) == 4
    assert copied_count(plan, [fork[1], fork[0]]) == 1  # out of order: only what is in order counts


def test_a_patch_decision_before_the_point_is_copied_one_after_it_is_not() -> None:
    log = Log()
    log.add(EventType.PATCH_APPLIED, "patch:gift-wrap", PatchAppliedData(change_id="gift-wrap"))
    point = log.add(EventType.STEP_CREATED, "step_SRC_1", StepCreatedData(step_name="a", input=b""))
    log.add(EventType.PATCH_APPLIED, "patch:later", PatchAppliedData(change_id="later"))
    plan = copy_plan(log.events, point, SOURCE, FORK)
    assert shape(plan) == [("patch_applied", "patch:gift-wrap")]
