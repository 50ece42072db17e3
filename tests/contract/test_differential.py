"""Differential test: random event sequences give the same outcomes on ``MemoryWorld`` and the DynamoDB World.

A hypothesis state machine applies each ``EventRequest`` to both Worlds, each
on its own ``ManualClock`` (advanced together by a rule), and checks that both
accept it (with the same resulting event type) or both reject it with the same
error kind (and, for ``TooEarly``, the same ``retry_after``). After every step
the entities read back (runs, steps and whether any is pending, live hooks,
tokens, waits) and the logs
(types, correlation ids and data, in order) must be equal.

Event positions are not compared: on DynamoDB a refused write leaves a sealed
(``noop``) position that ``events.list`` leaves out, so the same log may carry
different numbers (contract §3.2 only asks for a gap-free prefix in order).

Building a moto World is costly, so one serves every example of the test; each
example draws fresh run ids and hook tokens (tokens are global to a World) and
a fresh ``MemoryWorld`` whose clock starts where the AWS World's clock is.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import event as tally
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    precondition,
    rule,
    run_state_machine_as_test,
)

from world_aws.aws.world import AwsWorld
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import (
    EventData,
    EventRequest,
    EventType,
    Hook,
    HookCreatedData,
    HookReceivedData,
    PatchAppliedData,
    RunCancelledData,
    RunCompletedData,
    RunCreatedData,
    RunCreation,
    RunFailedData,
    RunStartedData,
    Step,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
    Wait,
    WaitCreatedData,
    patch_correlation_id,
)
from world_aws.contract.world import SPEC_VERSION_CURRENT, World
from world_aws.errors import Conflict, NotFound, RunExpired, TooEarly
from world_aws.local.memory import create_memory_world
from world_aws.testing.aws_factory import aws_world

RUNS = st.integers(0, 2)
STEPS = st.integers(0, 2).map(lambda i: f"step_{i}")
HOOKS = st.integers(0, 1).map(lambda i: f"hook_{i}")
TOKENS = st.integers(0, 1)
WAITS = st.integers(0, 1).map(lambda i: f"wait_{i}")
RESUMES = st.integers(0, 2)
OFFSETS = st.sampled_from([1, 5, 30])
ALL_PARTS = frozenset({"run", "steps", "hooks", "waits", "log"})
# What an event of each family can change: a terminal run also drops its hooks.
_PARTS_CHANGED_BY = {
    "run": frozenset({"run", "hooks", "log"}),
    "step": frozenset({"steps", "log"}),
    "hook": frozenset({"hooks", "log"}),
    "wait": frozenset({"waits", "log"}),
    "patch": frozenset({"run", "log"}),
}
# Calls made before any run may end.
RUN_LIFETIME = 12
EXPECTED_KINDS = (NotFound, Conflict, RunExpired, TooEarly)

Outcome = tuple[Any, ...]


@pytest.fixture(scope="module")
def shared_aws() -> Iterator[tuple[AwsWorld, ManualClock]]:
    """One moto World for every example of this module (a fresh table costs seconds)."""
    clock = ManualClock()
    with aws_world(clock) as world:
        yield world, clock


def _outcome(world: World, run_id: str, request: EventRequest) -> Outcome:
    """What a World did with one request: accepted (and which event it logged) or which kind refused it."""
    try:
        result = world.events.create(run_id, request)
    except EXPECTED_KINDS as exc:
        retry_after = exc.retry_after if isinstance(exc, TooEarly) else None
        return ("rejected", type(exc).__name__, retry_after)
    event = result.event
    return (
        "accepted",
        None if event is None else event.type,
        None if event is None else event.correlation_id,
    )


def _fields(record: object | None) -> dict[str, Any] | None:
    return None if record is None else dataclasses.asdict(record)  # type: ignore[call-overload]


def _read(call: Callable[[], object]) -> object | None:
    try:
        return call()
    except NotFound:
        return None


class DifferentialMachine(RuleBasedStateMachine):
    """Applies the same requests to a ``MemoryWorld`` and an AWS World and compares them."""

    def __init__(self, aws: AwsWorld, aws_clock: ManualClock) -> None:
        super().__init__()
        tag = uuid.uuid4().hex[:10]
        self.aws_clock = aws_clock
        self.memory_clock = ManualClock(aws_clock.now())
        self.memory = create_memory_world(clock=self.memory_clock)
        self.worlds: tuple[World, World] = (self.memory, aws)
        self.run_ids = [f"wrun_{tag}_{i}" for i in range(3)]
        self.tokens = [f"tok_{tag}_{i}" for i in range(2)]
        self.calls = 0
        self.applied = 0

    # ------------------------------------------------------------------------- helpers

    def _payload(self, label: str) -> bytes:
        self.calls += 1
        return f"{label}-{self.calls}".encode()

    def _creation(self) -> RunCreation:
        return RunCreation(
            workflow_name="wf_differential",
            deployment_id="dpl_differential",
            spec_version=SPEC_VERSION_CURRENT,
            input=self._payload("run-input"),
            attributes={"k": "v"},
        )

    def _target(self, draw: st.DataObject, kind: str, wanted: StepStatus | None = None) -> tuple[int, str]:
        """A (run, correlation id) for a transition: often one the reference World knows, else any.

        Uniform draws over the pools mostly hit entities never created (NotFound);
        preferring existing ones (steps in the ``wanted`` status) gets transitions
        judged on real state as well.
        """
        size = {"step": 3, "hook": 2, "wait": 2}[kind]
        anything = st.tuples(RUNS, st.integers(0, size - 1).map(lambda i: f"{kind}_{i}"))
        known = [
            (run, cid)
            for run in range(len(self.run_ids))
            for cid in self._known(kind, self.run_ids[run], wanted)
        ]
        # Three draws in four go to a known entity; shrinking (towards 0) prefers "anything".
        if known and draw.draw(st.integers(0, 3), label=f"{kind} known") > 0:
            return draw.draw(st.sampled_from(known), label=kind)
        return draw.draw(anything, label=kind)

    def _known(self, kind: str, run_id: str, wanted: StepStatus | None) -> list[str]:
        if kind == "step":
            steps = self.memory.steps.list(run_id)
            return [step.step_id for step in steps if wanted is None or step.status is wanted]
        if kind == "hook":
            return [hook.hook_id for hook in self.memory.hooks.list(run_id)]
        return [wait.wait_id for wait in self.memory.waits.list(run_id)]

    def _apply(
        self, run: int, etype: EventType, cid: str | None = None, data: EventData | None = None
    ) -> None:
        self.applied += 1
        run_id = self.run_ids[run]
        request = EventRequest(etype, cid, data)
        memory, aws = (_outcome(world, run_id, request) for world in self.worlds)
        assert memory == aws, f"{etype.value} {cid} on {run_id}: memory {memory} != aws {aws}"
        tally(f"{etype.value}: {memory[0]} {memory[1]}")
        # Invariants after the step, limited to what this event can change (moto
        # reads cost milliseconds each); teardown sweeps everything once more.
        self._check_run(run_id, _PARTS_CHANGED_BY[etype.value.split("_")[0]])
        if etype.terminates_run or etype in (EventType.HOOK_CREATED, EventType.HOOK_DISPOSED):
            self._check_tokens()

    # ------------------------------------------------------------------------- runs

    @initialize()
    def two_running_runs(self) -> None:
        # Runs 0 and 1 start out running, and run 0 with a step, a hook and a wait, so
        # transitions are judged on real state from the first rule on; run 2 is left
        # for run_created / creating run_started / NotFound. These calls are compared too.
        for run in (0, 1):
            self.run_created(run)
            self.run_started(run, with_creation=False)
        self.step_created(0, "step_0")
        self.hook_created(0, "hook_0", 0)
        self.wait_created(0, "wait_0", 5)

    @rule(run=RUNS)
    def run_created(self, run: int) -> None:
        self._apply(run, EventType.RUN_CREATED, data=RunCreatedData(creation=self._creation()))

    @rule(run=RUNS, with_creation=st.booleans())
    def run_started(self, run: int, with_creation: bool) -> None:
        self._apply(
            run,
            EventType.RUN_STARTED,
            data=RunStartedData(creation=self._creation() if with_creation else None),
        )

    @precondition(lambda self: self.applied >= RUN_LIFETIME)
    @rule(run=RUNS, how=st.sampled_from(["completed", "failed", "cancelled"]))
    def run_ended(self, run: int, how: str) -> None:
        # One rule for the three endings, and only once the runs have lived a while:
        # ended early, runs would refuse everything else, and the fence (contract §3.1)
        # has most to judge when the run ends with steps, hooks and waits in flight.
        if how == "completed":
            self._apply(
                run, EventType.RUN_COMPLETED, data=RunCompletedData(output=self._payload("run-output"))
            )
        elif how == "failed":
            data = RunFailedData(error=self._payload("run-error"), error_code="E_DIFF")
            self._apply(run, EventType.RUN_FAILED, data=data)
        else:
            self._apply(run, EventType.RUN_CANCELLED, data=RunCancelledData(reason="differential"))

    # ------------------------------------------------------------------------- steps

    @rule(run=RUNS, step=STEPS)
    def step_created(self, run: int, step: str) -> None:
        data = StepCreatedData(step_name="step_diff", input=self._payload("step-input"))
        self._apply(run, EventType.STEP_CREATED, step, data)

    @rule(draw=st.data())
    def step_started(self, draw: st.DataObject) -> None:
        run, step = self._target(draw, "step", StepStatus.PENDING)
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_diff"))

    @rule(draw=st.data())
    def step_started_naming_another_step(self, draw: st.DataObject) -> None:
        # A stale start of another step under the same id (contract §3: the step-name fence):
        # Conflict on both, after the fence and before TooEarly, whatever state the step is in.
        run, step = self._target(draw, "step")
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_other"))

    @rule(draw=st.data(), delay=st.none() | OFFSETS)
    def step_retrying(self, draw: st.DataObject, delay: int | None) -> None:
        # Of a running step also after its run ended: accepted, as the outcomes are (contract §3.1).
        run, step = self._target(draw, "step", StepStatus.RUNNING)
        retry_after = None if delay is None else self.memory_clock.now() + timedelta(seconds=delay)
        data = StepRetryingData(error=self._payload("step-error"), retry_after=retry_after)
        self._apply(run, EventType.STEP_RETRYING, step, data)

    def _backing_off(self) -> list[tuple[int, str]]:
        """Steps whose retry_after is still ahead (on the shared clock): where TooEarly is judged."""
        now = self.memory_clock.now()
        return [
            (run, step.step_id)
            for run, run_id in enumerate(self.run_ids)
            for step in self.memory.steps.list(run_id)
            if step.retry_after is not None and step.retry_after > now and not step.status.terminal
        ]

    @precondition(lambda self: bool(self._backing_off()))
    @rule(draw=st.data())
    def step_restarted_early(self, draw: st.DataObject) -> None:
        # A redelivery that comes back before the step's backoff ran out: both Worlds must
        # refuse it with TooEarly and the same seconds left (or RunExpired, the fence first).
        run, step = draw.draw(st.sampled_from(self._backing_off()), label="backing off")
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_diff"))

    @rule(run=RUNS, step=STEPS, delay=OFFSETS)
    def step_backs_off(self, run: int, step: str, delay: int) -> None:
        # A whole backoff in one rule (create, start, retry with a delay, start too early),
        # each call compared: drawn one by one, this sequence almost never happens, and it
        # is the only road to TooEarly. Refusals on the way (a finished step, an ended run)
        # are compared just the same.
        self.step_created(run, step)
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_diff"))
        retry_after = self.memory_clock.now() + timedelta(seconds=delay)
        data = StepRetryingData(error=self._payload("step-error"), retry_after=retry_after)
        self._apply(run, EventType.STEP_RETRYING, step, data)
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_diff"))

    @precondition(lambda self: self.applied >= RUN_LIFETIME)
    @rule(run=RUNS, step=STEPS, how=st.sampled_from(["completed", "failed", "cancelled"]))
    def step_outlives_its_run(self, run: int, step: str, how: str) -> None:
        # A step running when its run ends, whose body then fails: its retry is accepted
        # (contract §3.1, as an outcome would be) and the redelivered start meets the fence.
        # Drawn one by one, this sequence almost never happens.
        self.step_created(run, step)
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_diff"))
        self.run_ended(run, how)
        self._apply(run, EventType.STEP_RETRYING, step, StepRetryingData(error=self._payload("step-error")))
        self._apply(run, EventType.STEP_STARTED, step, StepStartedData(step_name="step_diff"))

    @rule(draw=st.data(), completed=st.booleans())
    def step_finished(self, draw: st.DataObject, completed: bool) -> None:
        run, step = self._target(draw, "step", StepStatus.RUNNING)
        if completed:
            self._apply(
                run, EventType.STEP_COMPLETED, step, StepCompletedData(output=self._payload("result"))
            )
        else:
            self._apply(run, EventType.STEP_FAILED, step, StepFailedData(error=self._payload("step-error")))

    # ------------------------------------------------------------------------- hooks

    @rule(run=RUNS, hook=HOOKS, token=TOKENS)
    def hook_created(self, run: int, hook: str, token: int) -> None:
        data = HookCreatedData(token=self.tokens[token], metadata=self._payload("meta"))
        self._apply(run, EventType.HOOK_CREATED, hook, data)

    @rule(draw=st.data(), resume=RESUMES)
    def hook_received(self, draw: st.DataObject, resume: int) -> None:
        # resume ids come from a pool of three, so repeats (deduplicated, contract §6.2) happen.
        run, hook = self._target(draw, "hook")
        data = HookReceivedData(payload=self._payload("hook-payload"), resume_id=f"resume_{resume}")
        self._apply(run, EventType.HOOK_RECEIVED, hook, data)

    @rule(draw=st.data())
    def hook_disposed(self, draw: st.DataObject) -> None:
        run, hook = self._target(draw, "hook")
        self._apply(run, EventType.HOOK_DISPOSED, hook)

    # ------------------------------------------------------------------------- waits and time

    @rule(run=RUNS, wait=WAITS, delay=OFFSETS)
    def wait_created(self, run: int, wait: str, delay: int) -> None:
        data = WaitCreatedData(resume_at=self.memory_clock.now() + timedelta(seconds=delay))
        self._apply(run, EventType.WAIT_CREATED, wait, data)

    @rule(draw=st.data())
    def wait_completed(self, draw: st.DataObject) -> None:
        run, wait = self._target(draw, "wait")
        self._apply(run, EventType.WAIT_COMPLETED, wait)

    # ------------------------------------------------------------------------- patch markers

    @rule(run=RUNS, change=st.sampled_from(["c1", "c2"]))
    def patch_applied(self, run: int, change: str) -> None:
        data = PatchAppliedData(change_id=change)
        self._apply(run, EventType.PATCH_APPLIED, patch_correlation_id(change), data)

    @rule(seconds=st.sampled_from([0.5, 1, 4, 31]))
    def advance_clock(self, seconds: float) -> None:
        self.memory_clock.advance(seconds)
        self.aws_clock.advance(seconds)

    # ------------------------------------------------------------------------- checks

    def _check_run(self, run_id: str, parts: frozenset[str] = ALL_PARTS) -> None:
        """Both Worlds hold the same ``parts`` (run, steps, live hooks, waits, log) of ``run_id``."""
        memory, aws = (_snapshot(world, run_id, parts) for world in self.worlds)
        for part, value in memory.items():
            assert value == aws[part], f"{part} of {run_id} differs"

    def _check_tokens(self) -> None:
        """Both Worlds agree on which hook (if any) holds each token."""
        for token in self.tokens:
            memory, aws = (_fields(_read(_holder(world, token))) for world in self.worlds)
            assert memory == aws, f"holder of {token} differs"

    def teardown(self) -> None:
        # Every step checked what it could change; this last sweep covers the whole pool.
        for run_id in self.run_ids:
            self._check_run(run_id)
        self._check_tokens()


def _holder(world: World, token: str) -> Callable[[], object]:
    return lambda: world.hooks.get_by_token(token)


def _snapshot(world: World, run_id: str, parts: frozenset[str]) -> dict[str, Any]:
    """The ``parts`` of a run's state, as comparable values; the log without positions (see above)."""
    readers: dict[str, Callable[[], Any]] = {
        "run": lambda: _fields(_read(lambda: world.runs.get(run_id))),
        "steps": lambda: (
            [_fields(step) for step in sorted(world.steps.list(run_id), key=_step_id)],
            world.steps.any_pending(run_id),
        ),
        "hooks": lambda: [_fields(hook) for hook in sorted(world.hooks.list(run_id), key=_hook_id)],
        "waits": lambda: [_fields(wait) for wait in sorted(world.waits.list(run_id), key=_wait_id)],
        "log": lambda: [
            (event.type, event.correlation_id, event.data) for event in world.events.list(run_id)
        ],
    }
    return {part: read() for part, read in readers.items() if part in parts}


def _step_id(step: Step) -> str:
    return step.step_id


def _hook_id(hook: Hook) -> str:
    return hook.hook_id


def _wait_id(wait: Wait) -> str:
    return wait.wait_id


def test_random_event_sequences_agree_on_memory_and_dynamodb(
    shared_aws: tuple[AwsWorld, ManualClock],
) -> None:
    # GIVEN one moto World shared by every example, and a fresh MemoryWorld per example
    aws, aws_clock = shared_aws
    # WHEN hypothesis applies random sequences of events to both
    # THEN each call has the same outcome and the read-back state stays equal
    # hypothesis takes any factory of machines here; its stub only names the class.
    run_state_machine_as_test(
        lambda: DifferentialMachine(aws, aws_clock),  # type: ignore[arg-type]
        settings=settings(
            max_examples=20,
            stateful_step_count=30,
            deadline=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        ),
    )
