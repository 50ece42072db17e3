"""Records and status enums for the entities of a run (SPEC §2) and its events (SPEC §3).

All records are frozen dataclasses. Payload fields (``input``, ``output``,
``error``, ``metadata``, ``payload``) are opaque bytes produced by the runtime's
serializer; a World stores them and gives them back byte for byte, or ``None``
when they were read with ``ResolveData.NONE``.
"""

from __future__ import annotations

import builtins
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeVar, get_args, get_type_hints


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


# ----------------------------------------------------------------------------- event data
#
# One record per event type with exactly the fields that type takes (SPEC §3's
# table); ``TYPE`` names it and ``DATA_RECORDS`` maps each type to its record. A
# field without a default is required (``contract.shapes`` refuses a request
# without it); payload fields are typed ``bytes | None`` because a read with
# ``ResolveData.NONE`` leaves them out. ``owner`` on a step event is the delivery
# that runs an inline step's body ("<message id>#<receive count>#<handling>",
# runtime/inline.py): an owned ``step_created`` also starts the step (attempt 1)
# and, having no message of its own, never counts for the last completer; an owned
# outcome has no marker to clear.


@dataclass(frozen=True, slots=True)
class RunCreatedData:
    TYPE: ClassVar[EventType] = EventType.RUN_CREATED
    creation: RunCreation


@dataclass(frozen=True, slots=True)
class RunStartedData:
    TYPE: ClassVar[EventType] = EventType.RUN_STARTED
    creation: RunCreation | None = None  # the resilient start: creates the run if missing (SPEC §6.1)


@dataclass(frozen=True, slots=True)
class RunCompletedData:
    TYPE: ClassVar[EventType] = EventType.RUN_COMPLETED
    output: bytes | None = None


@dataclass(frozen=True, slots=True)
class RunFailedData:
    TYPE: ClassVar[EventType] = EventType.RUN_FAILED
    error: bytes | None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class RunCancelledData:
    TYPE: ClassVar[EventType] = EventType.RUN_CANCELLED
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class StepCreatedData:
    TYPE: ClassVar[EventType] = EventType.STEP_CREATED
    step_name: str
    input: bytes | None
    via_step_dispatch: bool = False  # a consumer's re-ensure of a step its message names (SPEC §4.3)
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class StepStartedData:
    TYPE: ClassVar[EventType] = EventType.STEP_STARTED
    step_name: str | None = None  # the step the start is for: a stale message's start is refused
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class StepRetryingData:
    TYPE: ClassVar[EventType] = EventType.STEP_RETRYING
    error: bytes | None
    retry_after: datetime | None = None
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class StepCompletedData:
    TYPE: ClassVar[EventType] = EventType.STEP_COMPLETED
    output: bytes | None = None
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class StepFailedData:
    TYPE: ClassVar[EventType] = EventType.STEP_FAILED
    error: bytes | None
    owner: str | None = None


@dataclass(frozen=True, slots=True)
class HookCreatedData:
    TYPE: ClassVar[EventType] = EventType.HOOK_CREATED
    token: str
    metadata: bytes | None = None


@dataclass(frozen=True, slots=True)
class HookConflictData:
    """The World's own: a ``hook_created`` whose token another run holds."""

    TYPE: ClassVar[EventType] = EventType.HOOK_CONFLICT
    token: str
    conflicting_run_id: str


@dataclass(frozen=True, slots=True)
class HookReceivedData:
    TYPE: ClassVar[EventType] = EventType.HOOK_RECEIVED
    payload: bytes | None
    resume_id: str | None = None  # a resume with an id is recorded once (SPEC §5.2)
    token: str | None = None  # the runtime names the hook it resumes by it (the World keys by hook id)


@dataclass(frozen=True, slots=True)
class HookDisposedData:
    TYPE: ClassVar[EventType] = EventType.HOOK_DISPOSED


@dataclass(frozen=True, slots=True)
class WaitCreatedData:
    TYPE: ClassVar[EventType] = EventType.WAIT_CREATED
    resume_at: datetime


@dataclass(frozen=True, slots=True)
class WaitCompletedData:
    TYPE: ClassVar[EventType] = EventType.WAIT_COMPLETED


@dataclass(frozen=True, slots=True)
class NoopData:
    """The World's own: a sealed position (SPEC §3.2)."""

    TYPE: ClassVar[EventType] = EventType.NOOP


EventData = (
    RunCreatedData
    | RunStartedData
    | RunCompletedData
    | RunFailedData
    | RunCancelledData
    | StepCreatedData
    | StepStartedData
    | StepRetryingData
    | StepCompletedData
    | StepFailedData
    | HookCreatedData
    | HookConflictData
    | HookReceivedData
    | HookDisposedData
    | WaitCreatedData
    | WaitCompletedData
    | NoopData
)
DATA_RECORDS: dict[EventType, type[EventData]] = {record.TYPE: record for record in get_args(EventData)}
# The step events' records: each may name its owner.
StepData = StepCreatedData | StepStartedData | StepRetryingData | StepCompletedData | StepFailedData
STEP_RECORDS: tuple[type[StepData], ...] = get_args(StepData)


_FIELDS = {record: tuple(f.name for f in fields(record)) for record in get_args(EventData)}
_REQUIRED = {
    record: tuple(f.name for f in fields(record) if f.default is MISSING and f.default_factory is MISSING)
    for record in get_args(EventData)
}


def _declared(record: type) -> dict[str, tuple[type, ...]]:
    """Each field's declared types, ``None`` left out (``bytes | None`` is ``(bytes,)``)."""
    hints = get_type_hints(record)
    return {
        name: tuple(t for t in getattr(hints[name], "__args__", (hints[name],)) if t is not type(None))
        for name in _FIELDS[record]
    }


_TYPES = {record: _declared(record) for record in get_args(EventData)}


class FieldKind(StrEnum):
    """What a record's field holds, from its declared type: how a World stores it."""

    PAYLOAD = "payload"  # opaque bytes (``bytes | None``): offloaded when large, left out by NONE
    TIME = "time"  # a datetime
    CREATION = "creation"  # a RunCreation
    FLAG = "flag"  # a bool, stored only when true
    TEXT = "text"  # a name, a token, an id, a reason


def _kind(declared: tuple[type, ...]) -> FieldKind:
    for python_type, kind in (
        (bytes, FieldKind.PAYLOAD),
        (datetime, FieldKind.TIME),
        (RunCreation, FieldKind.CREATION),
        (bool, FieldKind.FLAG),
        (str, FieldKind.TEXT),
    ):
        if declared == (python_type,):
            return kind
    raise TypeError(f"an event record's field of type {declared!r} has no stored form")


_KINDS = {record: {name: _kind(t) for name, t in hints.items()} for record, hints in _TYPES.items()}


def data_fields(record: type[EventData]) -> tuple[str, ...]:
    return _FIELDS[record]


def field_types(record: type[EventData]) -> dict[str, tuple[type, ...]]:
    """Each field's declared types but ``None`` (``contract.shapes`` checks a request's values by them)."""
    return _TYPES[record]


def field_kinds(record: type[EventData]) -> dict[str, FieldKind]:
    """Each field's kind, in declaration order: a World's codec follows it (``aws/items``)."""
    return _KINDS[record]


def payload_fields(record: type[EventData]) -> tuple[str, ...]:
    return tuple(name for name, kind in _KINDS[record].items() if kind is FieldKind.PAYLOAD)


def required_fields(record: type[EventData]) -> tuple[str, ...]:
    """The fields ``record`` must be given: those without a default."""
    return _REQUIRED[record]


def empty_data(etype: EventType) -> EventData:
    """``etype``'s record with its defaults, the data of a request that gives none.

    A required field is ``None`` then: ``contract.shapes`` refuses such a request
    ("<type> needs <field>") before anything is read or written.
    """
    record = DATA_RECORDS[etype]
    return record(**dict.fromkeys(required_fields(record)))  # type: ignore[arg-type]


D = TypeVar("D", bound=EventData)


def data_as(data: EventData, record: type[D]) -> D:
    """``data`` as ``record``, narrowed for the type checker.

    Raises:
        TypeError: ``data`` is another type's record.
    """
    if not isinstance(data, record):
        raise TypeError(f"{type(data).__name__} is {data.TYPE.value}'s data, not {record.TYPE.value}'s")
    return data


# The records that carry an error, and those that may name a hook's token.
ErrorData = RunFailedData | StepRetryingData | StepFailedData
TokenData = HookCreatedData | HookConflictData | HookReceivedData


def creation_of(data: EventData) -> RunCreation | None:
    """The creation data of a ``run_created``, or of a creating ``run_started``; None for any other."""
    return data.creation if isinstance(data, RunCreatedData | RunStartedData) else None


def owner_of(data: EventData) -> str | None:
    """The delivery that owns the inline step this event is of; None for any other event."""
    return data.owner if isinstance(data, STEP_RECORDS) else None


def without_payloads(data: EventData) -> EventData:
    """``data`` with every opaque payload left out (``ResolveData.NONE``); a creation keeps ``b""``."""
    changes: dict[str, Any] = dict.fromkeys(payload_fields(type(data)))
    if isinstance(data, RunCreatedData | RunStartedData) and data.creation is not None:
        changes["creation"] = replace(data.creation, input=b"")
    return replace(data, **changes) if changes else data


@dataclass(frozen=True, slots=True)
class EventRequest:
    """What a writer asks a World to append: ``events.create(run_id, request)``."""

    type: EventType
    correlation_id: str | None = None
    # None: the type's record with its defaults (``empty_data``).
    data: EventData = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.data is None:
            object.__setattr__(self, "data", empty_data(self.type))

    def data_as(self, record: builtins.type[D]) -> D:
        """This request's data as ``record`` (``data_as``)."""
        return data_as(self.data, record)


@dataclass(frozen=True, slots=True)
class Event:
    """One committed event of a run's log, at a dense position 1, 2, 3, ... (SPEC §3.2)."""

    run_id: str
    position: int
    type: EventType
    correlation_id: str | None
    created_at: datetime
    # None: the type's record with its defaults (``empty_data``).
    data: EventData = None  # type: ignore[assignment]

    def __post_init__(self) -> None:
        if self.data is None:
            object.__setattr__(self, "data", empty_data(self.type))

    def data_as(self, record: builtins.type[D]) -> D:
        """This event's data as ``record`` (``data_as``)."""
        return data_as(self.data, record)

    @property
    def starts_attempt(self) -> bool:
        """Whether this event starts an attempt of its step: a ``step_started``, or an owned
        (inline) ``step_created``, which is also its step's first start."""
        return self.type is EventType.STEP_STARTED or (
            isinstance(self.data, StepCreatedData) and self.data.owner is not None
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
