"""Records and status enums for the entities of a run (SPEC §2) and its events (SPEC §3).

All records are frozen dataclasses. Payload fields (``input``, ``output``,
``error``, ``metadata``, ``payload``) are opaque bytes produced by the runtime's
serializer; a World stores them and gives them back byte for byte, or ``None``
when they were read with ``ResolveData.NONE``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        return self in _TERMINAL_RUN


_TERMINAL_RUN = frozenset({RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED})


class StepStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"

    @property
    def terminal(self) -> bool:
        return self in (StepStatus.COMPLETED, StepStatus.FAILED)


class WaitStatus(StrEnum):
    WAITING = "waiting"
    COMPLETED = "completed"


class EventType(StrEnum):
    RUN_CREATED = "run_created"
    RUN_STARTED = "run_started"
    RUN_COMPLETED = "run_completed"
    RUN_FAILED = "run_failed"
    RUN_CANCELLED = "run_cancelled"
    STEP_CREATED = "step_created"
    STEP_STARTED = "step_started"
    STEP_RETRYING = "step_retrying"
    STEP_COMPLETED = "step_completed"
    STEP_FAILED = "step_failed"
    HOOK_CREATED = "hook_created"
    HOOK_CONFLICT = "hook_conflict"
    HOOK_RECEIVED = "hook_received"
    HOOK_DISPOSED = "hook_disposed"
    WAIT_CREATED = "wait_created"
    WAIT_COMPLETED = "wait_completed"
    # Written only by a World to seal a reserved position whose writer lost its
    # entity condition or died before committing (SPEC §3.2).
    NOOP = "noop"

    @property
    def is_run_event(self) -> bool:
        return self.value.startswith("run_")

    @property
    def is_step_event(self) -> bool:
        return self.value.startswith("step_")

    @property
    def is_hook_event(self) -> bool:
        return self.value.startswith("hook_")

    @property
    def is_wait_event(self) -> bool:
        return self.value.startswith("wait_")

    @property
    def terminates_run(self) -> bool:
        return self in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED)

    @property
    def creates_entity(self) -> bool:
        return self in (EventType.STEP_CREATED, EventType.HOOK_CREATED, EventType.WAIT_CREATED)


class ResolveData(StrEnum):
    """Whether a read returns payload bytes (``ALL``) or leaves them out (``NONE``)."""

    ALL = "all"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class RunCreation:
    """The data that creates a run: on ``run_created``, or carried by ``run_started`` (SPEC §6.1)."""

    workflow_name: str
    deployment_id: str
    spec_version: int
    input: bytes
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class EventData:
    """The data of one event. Which fields are set depends on the event type (SPEC §3 table).

    Payload fields are ``bytes``; ``None`` means absent (or left out by
    ``ResolveData.NONE``).
    """

    # run_created / run_started (resilient start)
    creation: RunCreation | None = None
    # run_completed: output; step_completed: result (both in ``output``)
    output: bytes | None = None
    # run_failed, step_failed, step_retrying
    error: bytes | None = None
    error_code: str | None = None
    # run_cancelled
    reason: str | None = None
    # step events
    step_name: str | None = None
    input: bytes | None = None
    via_step_dispatch: bool = False
    retry_after: datetime | None = None
    # Step events of an inline step: the delivery that runs its body ("<message id>#<receive
    # count>#<handling>", runtime/inline.py). An owned step_created also starts the step
    # (attempt 1) and, having no message of its own, never counts for the last completer;
    # an owned outcome has no marker to clear.
    owner: str | None = None
    # hooks
    token: str | None = None
    metadata: bytes | None = None
    payload: bytes | None = None
    resume_id: str | None = None
    conflicting_run_id: str | None = None
    # waits
    resume_at: datetime | None = None

    def without_payloads(self) -> EventData:
        """This data with every opaque payload left out (``ResolveData.NONE``)."""
        creation = self.creation
        if creation is not None:
            creation = replace(creation, input=b"")
        return replace(
            self, creation=creation, output=None, error=None, input=None, metadata=None, payload=None
        )


@dataclass(frozen=True, slots=True)
class EventRequest:
    """What a writer asks a World to append: ``events.create(run_id, request)``."""

    type: EventType
    correlation_id: str | None = None
    data: EventData = field(default_factory=EventData)


@dataclass(frozen=True, slots=True)
class Event:
    """One committed event of a run's log, at a dense position 1, 2, 3, ... (SPEC §3.2)."""

    run_id: str
    position: int
    type: EventType
    correlation_id: str | None
    created_at: datetime
    data: EventData = field(default_factory=EventData)

    @property
    def starts_attempt(self) -> bool:
        """Whether this event starts an attempt of its step: a ``step_started``, or an owned
        (inline) ``step_created``, which is also its step's first start."""
        return self.type is EventType.STEP_STARTED or (
            self.type is EventType.STEP_CREATED and self.data.owner is not None
        )


@dataclass(frozen=True, slots=True)
class Run:
    run_id: str
    workflow_name: str
    status: RunStatus
    deployment_id: str
    spec_version: int
    input: bytes | None
    created_at: datetime
    updated_at: datetime
    output: bytes | None = None
    error: bytes | None = None
    error_code: str | None = None
    attributes: dict[str, str] = field(default_factory=dict)
    started_at: datetime | None = None
    completed_at: datetime | None = None

    @property
    def root_run_id(self) -> str:
        return self.attributes.get("$root_run_id", self.run_id)


@dataclass(frozen=True, slots=True)
class Step:
    run_id: str
    step_id: str
    step_name: str
    status: StepStatus
    attempt: int
    input: bytes | None
    created_at: datetime
    output: bytes | None = None
    error: bytes | None = None
    retry_after: datetime | None = None
    started_at: datetime | None = None
    completed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Hook:
    run_id: str
    hook_id: str
    token: str
    metadata: bytes | None
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Wait:
    run_id: str
    wait_id: str
    status: WaitStatus
    resume_at: datetime
    created_at: datetime
    completed_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class EventResult:
    """What ``events.create`` returns: the committed event and the entity it changed.

    ``event`` is ``None`` only for an accepted no-op (``run_started`` on a running
    run). For ``hook_created`` on a taken token, ``event.type`` is
    ``HOOK_CONFLICT`` and ``hook`` is ``None``. For a deduplicated
    ``hook_received`` the first event is returned. ``step`` is the step after
    ``step_created`` and ``step_started`` (with its input: the consumer runs it);
    after ``step_retrying``, ``step_completed`` and ``step_failed`` a World may
    leave it ``None`` (the DynamoDB World writes those without reading the step).
    ``run`` may lack its ``input`` (``None``): the DynamoDB World keeps the input
    out of the run item its run transitions write (``runs.get`` reads it).
    """

    event: Event | None
    run: Run | None = None
    step: Step | None = None
    hook: Hook | None = None
    wait: Wait | None = None


@dataclass(frozen=True, slots=True)
class RunLog:
    """What ``events.list_with_run`` returns: a run, and its log as read right after it.

    ``run`` is the run without its payloads (as ``runs.get(resolve_data=NONE)`` has it).
    ``events`` is the log after the asked position, holding at least everything
    committed before ``run`` was read; ``None`` when the run is terminal (not read).
    """

    run: Run
    events: list[Event] | None
