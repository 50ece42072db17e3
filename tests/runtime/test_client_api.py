"""The client side of a runtime (contract §8.1): run handles, cancellation and hook resumes."""

from __future__ import annotations

import threading

import pytest

from harness.harness import Harness
from harness.spy import Call
from world_aws import NotFound, SerializationError, Workflows, create_hook
from world_aws.contract.records import EventType, RunCancelledData, RunStatus
from world_aws.errors import BadInput, ResultTimeout, Transient


def waiting_app() -> Workflows:
    app = Workflows()

    @app.workflow
    async def wait_for_ok(name: str) -> str:
        return str(await create_hook(token=f"ok:{name}"))

    return app


def test_get_run_gives_a_handle_on_an_existing_run_and_refuses_an_unknown_one(harness: Harness) -> None:
    # GIVEN a started run
    runtime = harness.runtime_for(waiting_app())
    started = runtime.start("wait_for_ok", "a")
    harness.settle(started)
    # WHEN a client looks it up by id THEN the handle reads the same run and log
    handle = runtime.get_run(started.run_id)
    assert handle.status() is RunStatus.RUNNING
    assert [e.type for e in handle.events()] == harness.event_types(started.run_id)
    # AND an unknown id is NotFound
    with pytest.raises(NotFound):
        runtime.get_run("wrun_00000000000000000000000000")


def test_result_of_a_running_run_times_out(harness: Harness) -> None:
    # GIVEN a run waiting on a hook
    runtime = harness.runtime_for(waiting_app())
    handle = runtime.start("wait_for_ok", "b")
    harness.settle(handle)
    # WHEN a client asks for its result without waiting THEN it times out, naming the status
    with pytest.raises(ResultTimeout, match="still running"):
        handle.result(timeout=0)


def test_result_of_a_run_whose_run_created_failed_waits_for_the_first_message_to_create_it(
    harness: Harness,
) -> None:
    # GIVEN a start whose run_created fails transiently (tolerated: its first message creates
    # the run, contract §6.1), and that message not handled yet
    def run_created(call: Call) -> bool:
        return getattr(call.detail, "type", None) is EventType.RUN_CREATED

    harness.spy.inject("events.create", Transient("DynamoDB 500"), match=run_created)
    runtime = harness.runtime_for(waiting_app())
    handle = runtime.start("wait_for_ok", "e")
    # WHEN the caller waits for its result meanwhile
    # THEN the run is still to come (a timeout naming it pending), not NotFound: the handle
    # start() returned names a run that exists as soon as its first message is handled
    with pytest.raises(ResultTimeout, match="still pending"):
        handle.result(timeout=0.05)
    # AND once the message is handled the same handle gives the run's result
    assert harness.settle(handle) is RunStatus.RUNNING
    runtime.resume_hook("ok:e", "fine")
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=1) == "fine"


def test_a_start_with_a_reserved_attribute_is_refused_and_touches_no_other_run(harness: Harness) -> None:
    # GIVEN a run waiting on its hook
    runtime = harness.runtime_for(waiting_app())
    waiting = runtime.start("wait_for_ok", "f")
    harness.settle(waiting)
    log = harness.event_types(waiting.run_id)
    # WHEN a client starts another run naming it as its parent ("$" attributes are the
    # runtime's own, contract §2.1: a run with "$parent_run_id" writes its call's hook and its
    # outcome into that run's log)
    forged = {"$parent_run_id": waiting.run_id, "$parent_call_id": "child_forged_1"}
    # THEN the start is refused naming the attribute, and the waiting run's log is untouched
    with pytest.raises(BadInput, match=r"\$parent_run_id"):
        runtime.start("wait_for_ok", "g", attributes=forged)
    harness.settle()
    assert harness.event_types(waiting.run_id) == log


def test_cancel_records_the_reason_given(harness: Harness) -> None:
    # GIVEN a running run
    runtime = harness.runtime_for(waiting_app())
    handle = runtime.start("wait_for_ok", "c")
    harness.settle(handle)
    # WHEN it is cancelled with a reason
    assert handle.cancel("customer asked") is True
    # THEN the run_cancelled event keeps the reason, and the hook's token is free again
    cancelled = harness.events(handle.run_id)[-1]
    assert cancelled.type is EventType.RUN_CANCELLED
    assert cancelled.data_as(RunCancelledData).reason == "customer asked"
    with pytest.raises(NotFound):
        runtime.resume_hook("ok:c", "too late")


def test_resume_with_an_unserializable_payload_is_refused_before_anything_is_written(
    harness: Harness,
) -> None:
    # GIVEN a run waiting on a hook
    runtime = harness.runtime_for(waiting_app())
    handle = runtime.start("wait_for_ok", "d")
    harness.settle(handle)
    log = harness.event_types(handle.run_id)
    # WHEN a client resumes it with a payload the serializer does not know
    with pytest.raises(SerializationError, match=r"(?i)lock"):
        runtime.resume_hook("ok:d", threading.Lock())
    # THEN nothing was written and the hook still takes a proper payload
    assert harness.event_types(handle.run_id) == log
    runtime.resume_hook("ok:d", "fine")
    assert harness.settle(handle) is RunStatus.COMPLETED
    assert handle.result(timeout=0) == "fine"
