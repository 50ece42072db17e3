"""Replay: run a workflow function against its run's event log (contract §8.3).

A ``Replay`` starts the workflow coroutine on a ``ReplayLoop`` and feeds it the
log in position order. Each awaited step, hook or timer gets a deterministic
correlation id from a per-kind counter; its outcome is delivered when the replay
reaches the event that recorded it, one event at a time with the loop run to
quiescence in between, so a race (``asyncio.wait(..., FIRST_COMPLETED)``)
resolves the same way on every replay. When the log is exhausted and the
workflow is still waiting, the replay is *suspended* and reports what the code
asked for that the log does not have yet.

A replay is incremental: feeding it more events continues from where it
stopped, which is how a warm handler continues a run without re-reading or
re-running what it already has.
"""

from __future__ import annotations

import asyncio
import contextvars
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from world_aws.contract.limits import MAX_DELAY_SECONDS
from world_aws.contract.records import (
    Event,
    EventType,
    HookConflictData,
    HookCreatedData,
    HookReceivedData,
    Run,
    RunCreatedData,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    WaitCreatedData,
    owner_of,
)
from world_aws.engine import children, ids, unawaited
from world_aws.engine.children import ChildCall, ChildRequest
from world_aws.engine.divergence import Divergence
from world_aws.engine.guard import unguarded
from world_aws.engine.loop import ReplayLoop
from world_aws.errors import (
    BadInput,
    HookConflictError,
    NonDeterminismError,
    SerializationError,
    StepFailedError,
    Transient,
)
from world_aws.serde.codec import Serializer, decode_error, encode_error
from world_aws.serde.errors import RecordedError
from world_aws.serde.limits import Payload
from world_aws.workflow import context
from world_aws.workflow.chain import ContinueAsNew
from world_aws.workflow.hooks import DEFAULT_TOKEN_PREFIX, Hook, check_token, new_hook_token
from world_aws.workflow.patching import PatchBook
from world_aws.workflow.registry import StepFunction, WorkflowFunction

ERROR_CODE_USER = "USER_ERROR"
ERROR_CODE_NON_DETERMINISM = "NON_DETERMINISM"
ERROR_CODE_SERIALIZATION = "SERIALIZATION_ERROR"
# The run's input cannot be decoded or does not fit the workflow: no replay can ever start.
ERROR_CODE_BAD_INPUT = "BAD_INPUT"


@dataclass(frozen=True, slots=True)
class StepRequest:
    step_id: str
    step_name: str
    input: bytes


@dataclass(frozen=True, slots=True)
class OwnedStep:
    """An open inline step: ``owner`` is the delivery that last wrote its state, at ``since``.

    Running: the owner runs attempt ``attempt``. ``retrying``: that attempt failed and
    the owner hands the next one to a delayed message (``worker/inline.py``).
    """

    request: StepRequest
    owner: str
    since: datetime
    attempt: int
    retrying: bool = False


@dataclass(frozen=True, slots=True)
class RetryingStep:
    """A step whose last attempt failed: its next one waits for a retry message, due at ``retry_after``."""

    request: StepRequest
    retry_after: datetime


@dataclass(frozen=True, slots=True)
class HookRequest:
    hook_id: str
    token: str
    metadata: bytes


@dataclass(frozen=True, slots=True)
class WaitRequest:
    wait_id: str
    resume_at: datetime


@dataclass(frozen=True, slots=True)
class Completed:
    output: bytes


@dataclass(frozen=True, slots=True)
class Failed:
    error: bytes
    error_code: str


@dataclass(frozen=True, slots=True)
class Continued:
    """The workflow called ``continue_as_new``: a fresh run of it takes ``input`` (``workflow/chain.py``)."""

    input: bytes


@dataclass(frozen=True, slots=True)
class Suspended:
    """The workflow waits for outcomes the log does not have yet."""

    new_steps: list[StepRequest] = field(default_factory=list)
    undispatched_steps: list[StepRequest] = field(default_factory=list)
    new_hooks: list[HookRequest] = field(default_factory=list)
    new_waits: list[WaitRequest] = field(default_factory=list)
    pending_waits: list[WaitRequest] = field(default_factory=list)
    disposed_hooks: list[str] = field(default_factory=list)  # hook ids disposed in code, not yet in the log
    owned_steps: list[OwnedStep] = field(default_factory=list)  # running inline steps (worker/inline.py)
    new_children: list[ChildRequest] = field(default_factory=list)  # child calls with no hook in the log
    open_children: list[ChildRequest] = field(default_factory=list)  # started, outcome not in the log
    retrying_steps: list[RetryingStep] = field(default_factory=list)  # waiting for their retry message


Outcome = Completed | Failed | Continued | Suspended


@dataclass(slots=True)
class _StepCall:
    name: str
    future: asyncio.Future[Any]
    input: bytes


@dataclass(slots=True)
class _Timer:
    handle: asyncio.TimerHandle
    resume_at: datetime
    fired: bool = False


@dataclass(slots=True)
class _LogIndex:
    """What the log holds per correlation id, over every event fed so far."""

    step_names: dict[str, str] = field(default_factory=dict)
    step_inputs: dict[str, bytes | None] = field(default_factory=dict)
    steps_started: set[str] = field(default_factory=set)
    steps_done: set[str] = field(default_factory=set)
    # Open inline steps: the owner of their latest write, when, and whether it was a retry.
    owners: dict[str, tuple[str, datetime, bool]] = field(default_factory=dict)
    attempts: dict[str, int] = field(default_factory=dict)  # starts recorded per step
    # Steps whose latest event is a step_retrying: when their retry message is due.
    retry_due: dict[str, datetime] = field(default_factory=dict)
    hooks: dict[str, str] = field(default_factory=dict)
    hooks_disposed: set[str] = field(default_factory=set)
    waits: dict[str, datetime] = field(default_factory=dict)
    waits_done: set[str] = field(default_factory=set)
    created_at: dict[str, int] = field(default_factory=dict)  # the position of each create

    def add(self, event: Event) -> None:
        cid = event.correlation_id or ""
        etype = event.type
        if etype.creates_entity or etype is EventType.HOOK_CONFLICT:
            self.created_at.setdefault(cid, event.position)
        if etype.is_step_event:
            self._add_step_event(event, cid)
        elif isinstance(event.data, HookCreatedData | HookConflictData):
            self.hooks.setdefault(cid, event.data.token or "")
        elif etype is EventType.HOOK_DISPOSED:
            self.hooks_disposed.add(cid)
        elif isinstance(event.data, WaitCreatedData) and event.data.resume_at is not None:
            self.waits.setdefault(cid, event.data.resume_at)
        elif etype is EventType.WAIT_COMPLETED:
            self.waits_done.add(cid)

    def _add_step_event(self, event: Event, cid: str) -> None:
        etype = event.type
        owner = owner_of(event.data)
        if isinstance(event.data, StepRetryingData):
            self.retry_due[cid] = event.data.retry_after or event.created_at
        else:
            self.retry_due.pop(cid, None)
        if isinstance(event.data, StepCreatedData):
            self.step_names.setdefault(cid, event.data.step_name or "")
            self.step_inputs.setdefault(cid, event.data.input)
            if owner is None:
                return  # an owned create is also the step's first start: go on
        if etype in (EventType.STEP_CREATED, EventType.STEP_STARTED):
            self.steps_started.add(cid)
            self.attempts[cid] = self.attempts.get(cid, 0) + 1
            if owner is not None:
                self.owners[cid] = (owner, event.created_at, False)
                return
        elif etype is EventType.STEP_RETRYING and owner is not None and cid in self.owners:
            self.owners[cid] = (owner, event.created_at, True)  # its owner publishes the retry
            return
        elif etype in (EventType.STEP_COMPLETED, EventType.STEP_FAILED):
            self.steps_done.add(cid)
        # Started by a step message, retried by one, or settled: no longer inline.
        self.owners.pop(cid, None)


class Replay:
    """One run's workflow function, replayed incrementally from its log."""

    def __init__(self, run: Run, workflow: WorkflowFunction[Any, Any], serializer: Serializer) -> None:
        self.run_id = run.run_id
        self.workflow_name = run.workflow_name
        self.rng = random.Random(run.run_id)
        # A run read without its input (None) gets it from its log's run_created event.
        self._input = run.input
        self._workflow = workflow
        self._serializer = serializer
        self._time = run.started_at or run.created_at
        self.loop = ReplayLoop(self._loop_time, timers=self)  # type: ignore[abstract]
        self._counters = {"step": 0, "hook": 0, "wait": 0, "child": 0}
        self._steps: dict[str, _StepCall] = {}
        # The calls and timers a suspension may still report: each leaves once settled,
        # so a pass costs what is open, not everything the run ever called.
        self._open_steps: dict[str, _StepCall] = {}
        self._open_timers: dict[str, _Timer] = {}
        self._hooks: dict[str, Hook] = {}
        self._children: dict[str, ChildCall] = {}
        self._timers: dict[str, _Timer] = {}
        self._early: dict[str, list[Event]] = {}
        self._index = _LogIndex()
        self.patches = PatchBook()  # patched() decisions (workflow/patching.py)
        self._fatal: NonDeterminismError | None = None
        self.divergence: Divergence | None = None  # where, once the code no longer matches the log
        self._bad_input: BadInput | None = None  # the run's input does not decode or fit
        self._task: asyncio.Task[Any] | None = None
        self.last_position = 0
        # The log position its first feed reached: the code re-ran against every event up to
        # here; later ones it may have written itself (``engine/replaycache.py``, checked).
        self.cold_through = 0

    # --- driving --------------------------------------------------------------------

    def feed(self, events: list[Event]) -> None:
        """Deliver more of the log (positions after ``last_position``), in order.

        Raises:
            Transient: another handler recorded a hook this (kept) replay created with a
                different default token; the caller drops this replay and starts from the log.
        """
        first = self.last_position == 0
        for event in events:
            self._index.add(event)
            self.patches.add(event)
            if self._input is None and isinstance(event.data, RunCreatedData) and event.data.creation:
                self._input = event.data.creation.input
            hook = self._hooks.get(event.correlation_id or "")
            if (
                hook is not None
                and isinstance(event.data, HookCreatedData)
                and event.data.token != hook.token
            ):
                raise Transient(f"hook {hook.hook_id} was recorded by another handler first; replaying anew")
        if self._task is None:
            self._start()
        for event in events:
            self.last_position = max(self.last_position, event.position)
            if self.done:
                continue
            self._time = max(self._time, event.created_at)
            self._apply(event)
            self.loop.run_until_quiescent()
        if first:
            self.cold_through = self.last_position

    @property
    def done(self) -> bool:
        if self._fatal is not None or self._bad_input is not None:
            return True
        return self._task is not None and self._task.done()

    def now(self) -> datetime:
        return self._time

    def outcome(self) -> Outcome:
        """What the replay has reached: the workflow's result, its failure, or a suspension."""
        if self._task is None:
            self._start()
        if self._bad_input is not None:
            return Failed(encode_error(self._bad_input), ERROR_CODE_BAD_INPUT)
        assert self._task is not None
        if self._fatal is not None:
            return Failed(encode_error(self._fatal), ERROR_CODE_NON_DETERMINISM)
        if not self._task.done():
            return self._suspension()
        if self._task.cancelled():
            return Failed(encode_error(asyncio.CancelledError("workflow task cancelled")), ERROR_CODE_USER)
        exc = self._task.exception()
        if isinstance(exc, NonDeterminismError):  # a refused call (engine/guard.py)
            if self.divergence is None:
                self.divergence = Divergence(None, None, None, str(exc), str(exc))
            return Failed(encode_error(exc), ERROR_CODE_NON_DETERMINISM)
        if isinstance(exc, ContinueAsNew):
            return self._continued(exc)
        dropped = unawaited.untaken(self._calls())
        if exc is not None:
            if dropped:
                unawaited.report(self.workflow_name, self.run_id, dropped)  # the run's own error stands
            return Failed(encode_error(exc), ERROR_CODE_USER)
        if dropped:
            unawaited_error = unawaited.report(self.workflow_name, self.run_id, dropped)
            return Failed(encode_error(unawaited_error), unawaited.ERROR_CODE_UNAWAITED_CALL)
        unreached = sorted(set(self._index.step_names) - set(self._steps))
        if unreached:
            names = ", ".join(f"{cid} ({self._index.step_names[cid]})" for cid in unreached)
            error = NonDeterminismError(f"the log has steps the code never called: {names}")
            first = min(unreached, key=lambda cid: self._index.created_at.get(cid, 0))
            self.divergence = self.divergence or Divergence(
                self._index.created_at.get(first),
                first,
                f"step {self._index.step_names[first]!r}",
                "returns without calling it",
                str(error),
            )
            return Failed(encode_error(error), ERROR_CODE_NON_DETERMINISM)
        try:
            return Completed(
                self._serializer.dumps(
                    self._task.result(),
                    context=f"result of {self.workflow_name!r}",
                    payload=Payload.RUN_RESULT,
                )
            )
        except SerializationError as err:
            return Failed(encode_error(err), ERROR_CODE_SERIALIZATION)

    def _calls(self) -> Iterator[tuple[str, str, asyncio.Future[Any]]]:
        for cid, call in self._steps.items():
            yield cid, call.name, call.future
        for cid, child in self._children.items():
            yield cid, child.request.workflow_name, child.future

    @property
    def run_input(self) -> bytes | None:
        """The run's serialized input, once known (from the run read or its log's ``run_created``)."""
        return self._input

    def live_hooks(self) -> list[str]:
        """The ids of this run's hooks whose create the log holds and whose disposal it does not."""
        index = self._index
        return [cid for cid in self._hooks if cid in index.hooks and cid not in index.hooks_disposed]

    def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            self.loop.run_until_quiescent()
        self.loop.close()

    # --- calls from workflow code ---------------------------------------------------

    def call_step(self, step: StepFunction[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        cid = self._next_id("step")
        payload = self._arguments(args, kwargs, f"arguments of step {step.name!r}")
        future: asyncio.Future[Any] = unawaited.CallFuture(loop=self.loop)
        logged = self._index.step_names.get(cid)
        if logged is not None and logged != step.name:
            self._diverged(
                f"at {cid} the log has step {logged!r} but the code calls step {step.name!r}",
                cid,
                f"step {logged!r}",
                f"calls step {step.name!r}",
            )
            future.set_exception(self._fatal or NonDeterminismError("diverged"))
            return future
        self._steps[cid] = self._open_steps[cid] = _StepCall(step.name, future, payload)
        self._apply_early(cid)
        return future

    def call_child(
        self, workflow: WorkflowFunction[Any, Any], args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """A child run of ``workflow`` (``engine/children.py``): a future of its result."""
        cid = self._next_id("child")
        payload = self._arguments(args, kwargs, f"arguments of child workflow {workflow.name!r}")
        unguarded(workflow.bind, args, kwargs)
        request = ChildRequest(cid, children.child_run_id(self.run_id, cid), workflow.name, payload)
        future: asyncio.Future[Any] = unawaited.CallFuture(loop=self.loop)
        logged = self._index.hooks.get(cid)
        if logged is not None and logged != request.token:
            self._diverged(
                f"at {cid} the log has hook token {logged!r} but the code starts child {request.token!r}",
                cid,
                f"hook {logged!r}",
                f"starts child {request.token!r}",
            )
        self._children[cid] = ChildCall(request, future)
        self._apply_early(cid)
        return future

    def create_hook(self, *, token: str | None, metadata: Any) -> Hook:
        cid = self._next_id("hook")
        logged = self._index.hooks.get(cid)
        if token is None and logged is not None and logged.startswith(DEFAULT_TOKEN_PREFIX):
            hook_token = logged  # a default token is random: the log holds the one this hook has
        else:
            hook_token = check_token(token) if token else new_hook_token()
            children.refuse_reserved_token(hook_token)
        metadata_bytes = unguarded(self._serializer.dumps, metadata, context="hook metadata")
        hook = Hook(self.loop, cid, hook_token, metadata_bytes)
        if logged is not None and logged != hook_token:
            self._diverged(
                f"at {cid} the log has hook token {logged!r} but the code creates {hook_token!r}",
                cid,
                f"hook {logged!r}",
                f"creates hook {hook_token!r}",
            )
        self._hooks[cid] = hook
        self._apply_early(cid)
        return hook

    def patched(self, change_id: str) -> bool:
        """``world_aws.patched(change_id)`` at this point of the code (``workflow/patching.py``)."""
        return self.patches.decide(change_id, self._counters)

    def timer_created(self, handle: asyncio.TimerHandle, delay: float) -> None:
        if delay > MAX_DELAY_SECONDS:
            # Raised into the workflow's ``await sleep(...)``: no queue accepts a wake-up that far out.
            raise BadInput(f"a sleep of {delay:.0f} s is beyond the {MAX_DELAY_SECONDS} s (366-day) horizon")
        cid = self._next_id("wait")
        resume_at = self._index.waits.get(cid) or self._time + timedelta(seconds=delay)
        self._timers[cid] = self._open_timers[cid] = _Timer(handle, resume_at)
        self._apply_early(cid)

    # --- internals ------------------------------------------------------------------

    def _start(self) -> None:
        try:
            args, kwargs = self._decode_input()
            self._workflow.bind(args, kwargs)
        except BadInput as err:  # it never will decode: the run fails instead of being redelivered
            self._bad_input = err
            return
        ctx = contextvars.copy_context()
        ctx.run(context.set_replay, self)
        self._task = self.loop.create_task(self._workflow.fn(*args, **kwargs), context=ctx)
        self.loop.run_until_quiescent()

    def _decode_input(self) -> tuple[tuple[Any, ...], dict[str, Any]]:
        if self._input is None:
            raise SerializationError(f"run {self.run_id} was read without its input")
        value = self._serializer.loads(self._input, context=f"input of run {self.run_id}")
        args = value.get("args", []) if isinstance(value, dict) else None
        kwargs = value.get("kwargs", {}) if isinstance(value, dict) else None
        if (
            not isinstance(args, list | tuple)
            or not isinstance(kwargs, dict)
            or not all(type(k) is str for k in kwargs)
        ):
            raise SerializationError(
                f"input of run {self.run_id} must be {{'args': [...], 'kwargs': {{str: ...}}}}, "
                f"got {type(value).__name__}"
            )
        return tuple(args), dict(kwargs)

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any], what: str) -> bytes:
        """A call's arguments, serialized with the guard off (raises SerializationError at the call)."""
        return unguarded(
            self._serializer.dumps,
            {"args": list(args), "kwargs": kwargs},
            context=what,
            payload=Payload.STEP_INPUT,
        )

    def _loop_time(self) -> float:
        return self._time.timestamp()

    def _next_id(self, kind: str) -> str:
        self._counters[kind] += 1
        return ids.correlation_id(kind, self.run_id, self._counters[kind])

    def _diverged(self, message: str, cid: str | None, logged: str | None, called: str) -> None:
        if self._fatal is None:
            self._fatal = NonDeterminismError(
                f"workflow {self.workflow_name!r} no longer matches its log: {message}"
            )
            position = self._index.created_at.get(cid or "")
            self.divergence = Divergence(position, cid, logged, called, str(self._fatal))

    def _apply_early(self, cid: str) -> None:
        for event in self._early.pop(cid, []):
            self._apply(event)

    def _apply(self, event: Event) -> None:
        cid = event.correlation_id
        if cid is None:
            return
        etype = event.type
        if etype in (EventType.STEP_COMPLETED, EventType.STEP_FAILED):
            call = self._steps.get(cid)
            if call is None:
                self._early.setdefault(cid, []).append(event)
            elif not call.future.done():
                self._settle_step(call, event)
        elif etype is EventType.HOOK_RECEIVED and cid.startswith("child_"):
            child = self._children.get(cid)
            if child is None:
                self._early.setdefault(cid, []).append(event)
            else:
                payload: bytes | None = event.data_as(HookReceivedData).payload
                children.settle(child, self._serializer, self._load(payload, f"outcome of {cid}"))
        elif etype in (EventType.HOOK_RECEIVED, EventType.HOOK_CONFLICT):
            hook = self._hooks.get(cid)
            if hook is None:
                self._early.setdefault(cid, []).append(event)
            elif etype is EventType.HOOK_CONFLICT:
                # The holder's run id is not the workflow's to know (the log keeps it for operators).
                hook.conflict(HookConflictError(hook.token, None))
            else:
                hook.deliver(
                    self._load(event.data_as(HookReceivedData).payload, f"payload of hook {hook.token!r}")
                )
        elif etype is EventType.WAIT_COMPLETED:
            timer = self._timers.get(cid)
            if timer is None:
                self._early.setdefault(cid, []).append(event)
            elif not timer.fired:
                timer.fired = True
                self.loop.fire(timer.handle)

    def _settle_step(self, call: _StepCall, event: Event) -> None:
        if isinstance(event.data, StepCompletedData):
            try:
                call.future.set_result(self._load(event.data.output, f"result of step {call.name!r}"))
            except SerializationError as err:
                call.future.set_exception(err)
            return
        info = decode_error(event.data_as(StepFailedData).error or b"")
        failure = StepFailedError(call.name, info.type, info.message)
        failure.__cause__ = RecordedError(info)  # the run's error, if it ends so, keeps the step's
        call.future.set_exception(failure)

    def _load(self, data: bytes | None, what: str) -> Any:
        if data is None:
            raise SerializationError(f"{what} is missing from the log")
        return self._serializer.loads(data)

    def _suspension(self) -> Suspended:
        index = self._index
        new_steps: list[StepRequest] = []
        undispatched: list[StepRequest] = []
        owned: list[OwnedStep] = []
        to_retry: list[RetryingStep] = []
        for cid, call in list(self._open_steps.items()):
            if call.future.done():
                del self._open_steps[cid]
                continue
            request = StepRequest(cid, call.name, call.input)
            if cid not in index.step_names:
                new_steps.append(request)
            elif cid not in index.steps_started and cid not in index.steps_done:
                undispatched.append(request)
            elif cid in index.owners:
                owner, since, retrying = index.owners[cid]
                owned.append(OwnedStep(request, owner, since, index.attempts.get(cid, 1), retrying))
            if cid in index.retry_due:
                to_retry.append(RetryingStep(request, index.retry_due[cid]))
        new_hooks = [
            HookRequest(cid, hook.token, hook.metadata)
            for cid, hook in self._hooks.items()
            if cid not in index.hooks
        ]
        new_waits: list[WaitRequest] = []
        pending_waits: list[WaitRequest] = []
        for cid, timer in list(self._open_timers.items()):
            if timer.fired or timer.handle.cancelled() or cid in index.waits_done:
                del self._open_timers[cid]
                continue
            wait = WaitRequest(cid, timer.resume_at)
            pending_waits.append(wait)
            if cid not in index.waits:
                new_waits.append(wait)
        disposed = [
            cid for cid, hook in self._hooks.items() if hook.disposed and cid not in index.hooks_disposed
        ]
        open_children = [c.request for c in self._children.values() if not c.future.done()]
        new_children = [c for c in open_children if c.call_id not in index.hooks]
        return Suspended(
            new_steps,
            undispatched,
            new_hooks,
            new_waits,
            pending_waits,
            disposed,
            owned,
            new_children=new_children,
            open_children=open_children,
            retrying_steps=to_retry,
        )

    def _continued(self, signal: ContinueAsNew) -> Outcome:
        try:
            self._workflow.bind(signal.call_args, signal.call_kwargs)
            data = self._serializer.dumps(
                {"args": list(signal.call_args), "kwargs": signal.call_kwargs},
                context=f"arguments of continue_as_new in {self.workflow_name!r}",
                payload=Payload.STEP_INPUT,
            )
        except SerializationError as err:
            return Failed(encode_error(err), ERROR_CODE_SERIALIZATION)
        except BadInput as err:
            return Failed(encode_error(err), ERROR_CODE_BAD_INPUT)
        return Continued(data)
