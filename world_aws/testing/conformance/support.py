"""Builders shared by the conformance tests: a run in a given state, a step, a hook, a wait.

They go through ``events.create`` only, as the runtime does, so they work on
every World.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import datetime
from typing import TypeVar

import pytest

from world_aws.contract.payload import InlineStepInput, InvokePayload
from world_aws.contract.records import (
    EventData,
    EventRequest,
    EventResult,
    EventType,
    HookCreatedData,
    HookReceivedData,
    RunCancelledData,
    RunCompletedData,
    RunCreatedData,
    RunCreation,
    RunFailedData,
    StepCreatedData,
    StepStartedData,
    WaitCreatedData,
)
from world_aws.contract.transport import encode_payload
from world_aws.contract.world import (
    SPEC_VERSION_CURRENT,
    Ack,
    Consumers,
    Delivery,
    HandlerResult,
    MessageHandler,
    World,
)

T = TypeVar("T")

WORKFLOW = "wf_conformance"
STEP = "step_conformance"


def new_id(prefix: str) -> str:
    """A fresh id such as ``wrun_<32 hex>``."""
    return f"{prefix}_{uuid.uuid4().hex}"


def creation(
    input: bytes = b"run-input",
    *,
    workflow_name: str = WORKFLOW,
    deployment_id: str = "dpl_conformance",
    attributes: dict[str, str] | None = None,
) -> RunCreation:
    return RunCreation(
        workflow_name=workflow_name,
        deployment_id=deployment_id,
        spec_version=SPEC_VERSION_CURRENT,
        input=input,
        attributes=dict(attributes or {}),
    )


def write(
    world: World, run_id: str, etype: EventType, cid: str | None = None, data: EventData | None = None
) -> EventResult:
    """``events.create`` of one event; ``cid`` is the correlation id (None for run events)."""
    request = EventRequest(etype, cid) if data is None else EventRequest(etype, cid, data)
    return world.events.create(run_id, request)


def create_run(
    world: World,
    *,
    input: bytes = b"run-input",
    started: bool = True,
    workflow_name: str = WORKFLOW,
    attributes: dict[str, str] | None = None,
) -> str:
    """A new run, running unless ``started=False`` (then pending). Returns its id."""
    run_id = new_id("wrun")
    made = creation(input, workflow_name=workflow_name, attributes=attributes)
    write(world, run_id, EventType.RUN_CREATED, data=RunCreatedData(creation=made))
    if started:
        write(world, run_id, EventType.RUN_STARTED)
    return run_id


def end_run(world: World, run_id: str, how: EventType = EventType.RUN_COMPLETED) -> EventResult:
    """Make the run terminal with ``run_completed`` (default), ``run_failed`` or ``run_cancelled``."""
    if how is EventType.RUN_COMPLETED:
        return write(world, run_id, how, data=RunCompletedData(output=b"run-output"))
    if how is EventType.RUN_FAILED:
        return write(world, run_id, how, data=RunFailedData(error=b"run-error", error_code="E_TEST"))
    return write(world, run_id, how, data=RunCancelledData(reason="test"))


def create_step(
    world: World, run_id: str, *, input: bytes = b"step-input", step_id: str | None = None
) -> str:
    """A new pending step. Returns its id."""
    step_id = step_id or new_id("step")
    write(world, run_id, EventType.STEP_CREATED, step_id, StepCreatedData(step_name=STEP, input=input))
    return step_id


def start_step(world: World, run_id: str, step_id: str) -> EventResult:
    return write(world, run_id, EventType.STEP_STARTED, step_id, StepStartedData(step_name=STEP))


def running_step(world: World, run_id: str, *, input: bytes = b"step-input") -> str:
    """A new step, created and started. Returns its id."""
    step_id = create_step(world, run_id, input=input)
    start_step(world, run_id, step_id)
    return step_id


def create_hook(
    world: World, run_id: str, token: str, *, hook_id: str | None = None, metadata: bytes | None = b"meta"
) -> EventResult:
    data = HookCreatedData(token=token, metadata=metadata)
    return write(world, run_id, EventType.HOOK_CREATED, hook_id or new_id("hook"), data)


def receive_hook(
    world: World, run_id: str, hook_id: str, payload: bytes, *, resume_id: str | None = None
) -> EventResult:
    data = HookReceivedData(payload=payload, resume_id=resume_id or new_id("resume"))
    return write(world, run_id, EventType.HOOK_RECEIVED, hook_id, data)


def create_wait(world: World, run_id: str, resume_at: datetime, *, wait_id: str | None = None) -> str:
    wait_id = wait_id or new_id("wait")
    write(world, run_id, EventType.WAIT_CREATED, wait_id, WaitCreatedData(resume_at=resume_at))
    return wait_id


def types_of(world: World, run_id: str) -> list[EventType]:
    """The event types of a run's log, in position order."""
    return [event.type for event in world.events.list(run_id)]


class Recorder:
    """A thread-safe queue handler that records every delivery; ``answer`` decides the result (Ack)."""

    def __init__(self, answer: Callable[[Delivery], HandlerResult] | None = None) -> None:
        self._lock = threading.Lock()
        self._deliveries: list[Delivery] = []
        self._answer = answer

    def __call__(self, delivery: Delivery) -> HandlerResult:
        with self._lock:
            self._deliveries.append(delivery)
        return self._answer(delivery) if self._answer is not None else Ack()

    @property
    def deliveries(self) -> list[Delivery]:
        with self._lock:
            return list(self._deliveries)


@contextmanager
def consuming(world: World, handler: MessageHandler) -> Iterator[Consumers]:
    """Run ``world``'s consumers with ``handler`` for the duration of the block."""
    consumers = world.start_consumers(handler)
    try:
        yield consumers
    finally:
        consumers.stop()


class Racer:
    """Runs groups of calls at the same instant on real threads (a barrier lines them up).

    One pool is reused for every race of a test, so hundreds of races stay cheap.
    Use as a context manager.
    """

    def __init__(self, width: int) -> None:
        self._width = width
        self._pool = ThreadPoolExecutor(max_workers=width, thread_name_prefix="racer")

    def __enter__(self) -> Racer:
        return self

    def __exit__(self, *exc: object) -> None:
        self._pool.shutdown(wait=True)

    def race(self, calls: Sequence[Callable[[], T]]) -> list[T | Exception]:
        """Start every call at once; each outcome is its result or the exception it raised."""
        if len(calls) > self._width:
            raise ValueError(f"{len(calls)} calls for a racer {self._width} wide")
        # The timeout turns a lost worker into a loud BrokenBarrierError, never a hang.
        barrier = threading.Barrier(len(calls), timeout=30)

        def run(call: Callable[[], T]) -> T | Exception:
            barrier.wait()
            try:
                return call()
            except Exception as exc:
                return exc

        futures = [self._pool.submit(run, call) for call in calls]
        return [future.result() for future in futures]


def message(label: str) -> bytes:
    """A valid, distinguishable queue body (an encoded invoke payload) named ``label``.

    The label travels as a step's inline input, so bytes such as NUL survive too.
    """
    payload = InvokePayload(
        run_id="wrun_conformance",
        step_id="step_conformance",
        step_name="conformance.label",
        step_input=InlineStepInput(input=label.encode("utf-8")),
    )
    return encode_payload(payload)


def xfail_on_aws(request: pytest.FixtureRequest, reason: str) -> None:
    """Mark the running conformance test a strict xfail when it runs on the DynamoDB World."""
    if request.node.callspec.params.get("world") == "aws":
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))
