"""What the test kit reads back about a run: its outcome, and each step call's inputs, attempts and errors.

Everything here is read from the run's event log through the World, the same
records ``world-aws inspect`` shows: a test asserts on what was durably recorded,
not on what the code happened to return.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from world_aws.client.stream_reader import StreamCursor
from world_aws.contract.records import (
    STEP_RECORDS,
    Event,
    EventType,
    HookCreatedData,
    ResolveData,
    Run,
    RunStatus,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
)
from world_aws.contract.streams import DEFAULT_STREAM
from world_aws.contract.world import World
from world_aws.engine.children import child_of_token
from world_aws.runtime.runtime import Runtime
from world_aws.serde.codec import Serializer
from world_aws.serde.errors import ErrorInfo, decode_error
from world_aws.workflow.registry import StepFunction, Workflows


class KitView(Protocol):
    """What a run reads of its kit (a ``WorkflowKit``): its World, runtime and app."""

    @property
    def world(self) -> World: ...

    @property
    def runtime(self) -> Runtime: ...

    @property
    def app(self) -> Workflows: ...


@dataclass
class StepCall:
    """One call of a step in a run, as its log recorded it.

    Attributes:
        step_id: the call's correlation id (``step_<run>_<n>``).
        name: the step's registered name.
        args, kwargs: the arguments the workflow passed.
        status: pending, running, completed or failed.
        attempts: how many times its body started.
        output: the returned value (None unless completed).
        errors: the error of every failed attempt, in order (the last is the final one if it failed).
    """

    step_id: str
    name: str
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    status: StepStatus = StepStatus.PENDING
    attempts: int = 0
    output: Any = None
    errors: list[ErrorInfo] = field(default_factory=list)

    @property
    def error(self) -> ErrorInfo | None:
        """The final error of a failed step (type, message, stack); None otherwise."""
        return self.errors[-1] if self.status is StepStatus.FAILED and self.errors else None


class KitRun:
    """A run started by a :class:`~world_aws.testing.kit.WorkflowKit`: status, result, steps, events."""

    def __init__(self, kit: KitView, run_id: str) -> None:
        self._kit = kit
        self.run_id = run_id

    def __repr__(self) -> str:
        return f"KitRun({self.run_id!r}, {self.status.value})"

    @property
    def status(self) -> RunStatus:
        return self.record(resolve_data=ResolveData.NONE).status

    def record(self, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        """The run record as the World stores it."""
        return self._kit.world.runs.get(self.run_id, resolve_data=resolve_data)

    @property
    def result(self) -> Any:
        """The workflow's return value.

        Raises:
            WorkflowFailedError: the run failed (its ``error_type``, ``error_message``, ``error_code``).
            RunCancelledError: the run was cancelled.
            RuntimeError: the run has not ended (finish it with ``kit.finish(run)``).
        """
        run = self.record()
        if not run.status.terminal:
            raise RuntimeError(f"run {self.run_id} is still {run.status.value}: call kit.finish(run)")
        return self._kit.runtime.get_run(self.run_id).outcome_of(run)

    @property
    def error(self) -> ErrorInfo | None:
        """The run's stored error (type, message, stack, cause) if it failed."""
        run = self.record()
        return decode_error(run.error) if run.status is RunStatus.FAILED and run.error else None

    def events(self) -> list[Event]:
        """The run's log, with payloads."""
        return self._kit.world.events.list(self.run_id, resolve_data=ResolveData.ALL)

    def steps(self) -> list[StepCall]:
        """Every step call of the run, in the order the workflow made them."""
        return step_calls(self.events(), self._kit.app.serializer)

    def calls(self, step: StepFunction[Any, Any] | str) -> list[StepCall]:
        """The calls of one step (the function or its name), in order."""
        name = step if isinstance(step, str) else step.name
        return [call for call in self.steps() if call.name == name]

    def step(self, step: StepFunction[Any, Any] | str) -> StepCall:
        """The only call of ``step`` in this run.

        Raises:
            LookupError: the step was called zero times or more than once (use ``calls``).
        """
        found = self.calls(step)
        if len(found) != 1:
            name = step if isinstance(step, str) else step.name
            raise LookupError(f"step {name!r} ran {len(found)} times in run {self.run_id}: use calls()")
        return found[0]

    def stream(self, name: str = DEFAULT_STREAM) -> list[Any]:
        """The values the run's steps wrote to stream ``name`` so far, each once, in order."""
        cursor = StreamCursor(self._kit.world, self._kit.app.serializer, self.run_id, name)
        return [value for _, value in cursor.poll()]

    def waiting_hooks(self) -> list[str]:
        """Tokens of the hooks the run has created and not disposed (a test resumes them).

        A child run's start (recorded as a hook with a reserved token) is not one of them.
        """
        return open_hooks(self._kit.world.events.list(self.run_id, resolve_data=ResolveData.NONE))


def open_hooks(events: list[Event], *, unanswered: bool = False) -> list[str]:
    """Tokens of the hooks ``events`` (one run's log) created and did not dispose, children's left out.

    ``unanswered``: only those that have received no payload yet.
    """
    tokens: dict[str, str] = {}
    answered: set[str] = set()
    for event in events:
        cid = event.correlation_id or ""
        if isinstance(event.data, HookCreatedData):
            if child_of_token(event.data.token) is None:
                tokens[cid] = event.data.token
        elif event.type is EventType.HOOK_RECEIVED:
            answered.add(cid)
        elif event.type is EventType.HOOK_DISPOSED:
            tokens.pop(cid, None)
    return [token for cid, token in tokens.items() if not (unanswered and cid in answered)]


def step_calls(events: list[Event], serializer: Serializer) -> list[StepCall]:
    """The step calls a run's log (read with payloads) records."""
    calls: dict[str, StepCall] = {}
    for event in events:
        cid = event.correlation_id or ""
        data = event.data
        if not isinstance(data, STEP_RECORDS):
            continue
        call = calls.get(cid)
        if call is None:
            name = data.step_name if isinstance(data, StepCreatedData | StepStartedData) else None
            call = calls[cid] = StepCall(step_id=cid, name=name or "")
        if isinstance(data, StepCreatedData) and data.input is not None:
            value = serializer.loads(data.input)
            call.args, call.kwargs = tuple(value.get("args", ())), dict(value.get("kwargs", {}))
        if event.starts_attempt:  # a step_started, or an inline step's create
            call.attempts += 1
            call.status = StepStatus.RUNNING
        elif isinstance(data, StepRetryingData):
            call.status = StepStatus.PENDING
            if data.error is not None:
                call.errors.append(decode_error(data.error))
        elif isinstance(data, StepCompletedData):
            call.status = StepStatus.COMPLETED
            call.output = serializer.loads(data.output) if data.output is not None else None
        elif isinstance(data, StepFailedData):
            call.status = StepStatus.FAILED
            if data.error is not None:
                call.errors.append(decode_error(data.error))
    # In the order the workflow made the calls (the n of ``step_<run>_<n>``), not the log's:
    # the creates of a fan-out are written in parallel.
    return sorted(calls.values(), key=lambda call: _call_number(call.step_id))


def _call_number(step_id: str) -> int:
    tail = step_id.rsplit("_", 1)[-1]
    return int(tail) if tail.isdigit() else 0
