"""Records and status enums for the entities of a run (contract §2) and its events (contract §3).

All records are frozen dataclasses. Payload fields (``input``, ``output``,
``error``, ``metadata``, ``payload``) are opaque bytes produced by the runtime's
serializer; a World stores them and gives them back byte for byte, or ``None``
when they were read with ``ResolveData.NONE``.
"""

from __future__ import annotations

import builtins
import math
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeVar, get_args, get_type_hints

from world_aws.errors import Conflict, NotFound, RunExpired, TooEarly


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
    # The run took the patched branch of a change (``world_aws.patched``, workflow/patching.py).
    PATCH_APPLIED = "patch_applied"
    # Written only by a World to seal a reserved position whose writer lost its
    # entity condition or died before committing (contract §3.2).
    NOOP = "noop"

    @property
    def record(self) -> type[EventData]:
        """This type's record: its fields, what it is and its rule (the event data section)."""
        return DATA_RECORDS[self]

    @property
    def entity(self) -> Entity:
        return DATA_RECORDS[self].ENTITY

    @property
    def is_run_event(self) -> bool:
        return self.entity is Entity.RUN

    @property
    def ends_run(self) -> bool:
        """run_completed, run_failed or run_cancelled: the event that makes a run terminal."""
        return self in (EventType.RUN_COMPLETED, EventType.RUN_FAILED, EventType.RUN_CANCELLED)

    @property
    def is_step_event(self) -> bool:
        return self.entity is Entity.STEP

    @property
    def is_hook_event(self) -> bool:
        return self.entity is Entity.HOOK

    @property
    def is_wait_event(self) -> bool:
        return self.entity is Entity.WAIT

    @property
    def terminates_run(self) -> bool:
        return DATA_RECORDS[self].ENDS_RUN

    @property
    def creates_entity(self) -> bool:
        return DATA_RECORDS[self].CREATES


class ResolveData(StrEnum):
    """Whether a read returns payload bytes (``ALL``) or leaves them out (``NONE``)."""

    ALL = "all"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class RunCreation:
    """The data that creates a run: on ``run_created``, or carried by ``run_started`` (contract §6.1)."""

    workflow_name: str
    deployment_id: str
    spec_version: int
    input: bytes
    attributes: dict[str, str] = field(default_factory=dict)


# ----------------------------------------------------------------------------- event data
#
# One record per event type, and the record is the type's whole definition in the
# contract (STYLE "One definition per event type"):
#
# * its fields, exactly those the type takes (contract §3's table). A field without a
#   default is required (``contract.shapes`` refuses a request without it); payload
#   fields are typed ``bytes | None`` because a read with ``ResolveData.NONE`` leaves
#   them out. ``owner`` on a step event is the delivery that runs an inline step's
#   body ("<message id>#<receive count>#<handling>", worker/inline.py): an owned
#   ``step_created`` also starts the step (attempt 1) and, having no message of its
#   own, never counts for the last completer; an owned outcome has no marker to clear;
# * what the type is (``_Definition``): its ``TYPE`` (``DATA_RECORDS`` maps each type
#   to its record), the entity it changes, whether the terminal-run fence refuses it
#   (contract §3.1), whether it creates its entity or ends its run, whether a client may
#   write it;
# * its rule: ``judge`` looks at the state as it is (as read, or as the ``ALL_OLD``
#   image of a refused conditional write names it) and returns, or raises the contract §3
#   rejection; ``apply`` gives the entity after it. ``contract.rules`` dispatches on
#   the record. The memory World runs the rules under its lock; the DynamoDB World
#   encodes them as conditions (its plan of each type: ``aws/write/plans.py``, which takes
#   the fence from ``FENCED``) and judges a refused write's images with them.
#
# A new event type is its ``EventType`` member and its record here, its plan in
# ``aws/write/plans.py`` (a test fails without it) and its conformance tests.


class Entity(StrEnum):
    """What an event changes beside the log."""

    RUN = "run"
    STEP = "step"
    HOOK = "hook"
    WAIT = "wait"
    LOG = "log"  # noop, patch_applied: the log alone


class _Definition:
    """What every event record says of its type beside its fields (the section's comment)."""

    __slots__ = ()
    TYPE: ClassVar[EventType]
    ENTITY: ClassVar[Entity]
    FENCED: ClassVar[bool] = False  # refused on a terminal run (contract §3.1)
    CREATES: ClassVar[bool] = False  # makes its entity (once per correlation id)
    ENDS_RUN: ClassVar[bool] = False
    CLIENT: ClassVar[bool] = True  # False: written by a World only (hook_conflict, noop)


# --- run events (contract §2.1): ``judge`` says whether the event changes the run (False: the
# accepted no-op), ``apply`` gives the run after it. ``run_created``'s run is ``rules.new_run``.


class _RunRule(_Definition):
    __slots__ = ()
    ENTITY = Entity.RUN
    # A transition's statuses: the ones it leaves (``FROM``) and the one it enters
    # (``STATUS``); the DynamoDB World's reservation is conditioned on ``FROM``.
    FROM: ClassVar[tuple[RunStatus, ...]] = (RunStatus.RUNNING,)
    STATUS: ClassVar[RunStatus]

    def judge(self, run: Run | None) -> bool:
        """Raises NotFound (no run), Conflict (a terminal run, or a live one this type may not leave)."""
        if run is None:
            raise NotFound("run not found")
        if run.status.terminal:
            raise Conflict(f"run {run.run_id} is {run.status.value}: no transition out of a terminal run")
        return self._judge_live(run)

    def _judge_live(self, run: Run) -> bool:
        """A live run this type leaves (``FROM``)."""
        if run.status not in self.FROM:
            allowed = " or ".join(status.value for status in self.FROM)
            raise Conflict(
                f"run {run.run_id} is {run.status.value}, not {allowed}: cannot apply {self.TYPE.value}"
            )
        return True

    def apply(self, run: Run, now: datetime) -> Run:  # pragma: no cover - every run record has its own
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class RunCreatedData(_RunRule):
    TYPE: ClassVar[EventType] = EventType.RUN_CREATED
    FROM: ClassVar[tuple[RunStatus, ...]] = ()  # no run before it
    STATUS: ClassVar[RunStatus] = RunStatus.PENDING
    creation: RunCreation

    def judge(self, run: Run | None) -> bool:
        if run is not None:
            raise Conflict(f"run {run.run_id} already exists")
        return True

    def apply(self, run: Run, now: datetime) -> Run:
        return run  # its creation made it (``rules.new_run``)


@dataclass(frozen=True, slots=True)
class RunStartedData(_RunRule):
    TYPE: ClassVar[EventType] = EventType.RUN_STARTED
    FROM: ClassVar[tuple[RunStatus, ...]] = (RunStatus.PENDING,)
    STATUS: ClassVar[RunStatus] = RunStatus.RUNNING
    creation: RunCreation | None = None  # the resilient start: creates the run if missing (contract §6.1)

    def judge(self, run: Run | None) -> bool:
        if run is None and self.creation is not None:
            return True
        return _RunRule.judge(self, run)

    def _judge_live(self, run: Run) -> bool:
        return run.status in self.FROM  # a start of a running run is the accepted no-op

    def apply(self, run: Run, now: datetime) -> Run:
        return replace(run, status=self.STATUS, started_at=run.started_at or now, updated_at=now)


@dataclass(frozen=True, slots=True)
class RunCompletedData(_RunRule):
    TYPE: ClassVar[EventType] = EventType.RUN_COMPLETED
    STATUS: ClassVar[RunStatus] = RunStatus.COMPLETED
    ENDS_RUN: ClassVar[bool] = True
    output: bytes | None = None

    def apply(self, run: Run, now: datetime) -> Run:
        return replace(run, status=self.STATUS, output=self.output, completed_at=now, updated_at=now)


@dataclass(frozen=True, slots=True)
class RunFailedData(_RunRule):
    TYPE: ClassVar[EventType] = EventType.RUN_FAILED
    STATUS: ClassVar[RunStatus] = RunStatus.FAILED
    ENDS_RUN: ClassVar[bool] = True
    error: bytes | None
    error_code: str | None = None

    def apply(self, run: Run, now: datetime) -> Run:
        return replace(
            run,
            status=self.STATUS,
            error=self.error,
            error_code=self.error_code,
            completed_at=now,
            updated_at=now,
        )


@dataclass(frozen=True, slots=True)
class RunCancelledData(_RunRule):
    TYPE: ClassVar[EventType] = EventType.RUN_CANCELLED
    FROM: ClassVar[tuple[RunStatus, ...]] = (RunStatus.PENDING, RunStatus.RUNNING)  # a pending run too
    STATUS: ClassVar[RunStatus] = RunStatus.CANCELLED
    ENDS_RUN: ClassVar[bool] = True
    reason: str | None = None
    actor: str | None = None  # who cancelled (audit): the caller's IAM ARN, or "local"

    def apply(self, run: Run, now: datetime) -> Run:
        return replace(run, status=self.STATUS, completed_at=now, updated_at=now)


# --- child events: ``judge(cid, run, entity, now)`` with the entity as it is (None: missing),
# ``apply(run_id, cid, entity, now)`` the entity after it. The run is checked first for every
# fenced type; a step's report (retrying, an outcome) checks its step first, because a running
# step may still report after its run ended (contract §3.1). The order is part of the contract, so
# that every World names the same kind.


class _CreateRule(_Definition):
    """A create: on a live run (the fence), once per correlation id."""

    __slots__ = ()
    FENCED = True
    CREATES = True

    def judge(
        self, cid: str | None, run: Run | None, existing: object | None, now: datetime | None = None
    ) -> None:
        """Raises NotFound (no run), RunExpired (a terminal run), Conflict (the entity exists).

        ``existing``: anything that says the entity exists (an entity, an item, an id).
        """
        if run is None:
            raise NotFound("run not found")
        if run.status.terminal:
            raise RunExpired(f"run {run.run_id} is {run.status.value}: cannot create {cid}")
        if existing is not None:
            raise Conflict(f"{cid} already exists in run {run.run_id}")


@dataclass(frozen=True, slots=True)
class StepCreatedData(_CreateRule):
    TYPE: ClassVar[EventType] = EventType.STEP_CREATED
    ENTITY: ClassVar[Entity] = Entity.STEP
    step_name: str
    input: bytes | None
    via_step_dispatch: bool = False  # a consumer's re-ensure of a step its message names (contract §4.3)
    owner: str | None = None

    def apply(self, run_id: str, cid: str | None, step: Step | None, now: datetime) -> Step:
        """Pending, or running at attempt 1 when owned (an inline step)."""
        assert cid is not None
        owned = self.owner is not None
        return Step(
            run_id=run_id,
            step_id=cid,
            step_name=self.step_name,
            status=StepStatus.RUNNING if owned else StepStatus.PENDING,
            attempt=1 if owned else 0,
            input=self.input,
            created_at=now,
            started_at=now if owned else None,
        )


class _StepRule(_Definition):
    """A step's transition (contract §2.2): its start, a retry, an outcome."""

    __slots__ = ()
    ENTITY = Entity.STEP
    STATUS: ClassVar[StepStatus]  # the status the step takes

    def judge(self, cid: str | None, run: Run | None, step: Step | None, now: datetime) -> None:
        """Raises NotFound (run or step missing), RunExpired (the fence), Conflict (a terminal
        step, or one this type may not leave), TooEarly (a start before ``retry_after``)."""
        if run is None:
            raise NotFound("run not found")
        if self.FENCED and run.status.terminal:
            raise RunExpired(f"run {run.run_id} is {run.status.value}: {self.TYPE.value} refused")
        if step is None:
            raise NotFound(f"step {cid} not found in run {run.run_id}")
        if step.status.terminal:
            raise Conflict(f"step {step.step_id} is already {step.status.value}")
        self._judge_live(run, step, now)

    def _judge_live(self, run: Run, step: Step, now: datetime) -> None:
        """A report (retry, outcome) is of a running step; accepted after its run's end, it starts
        nothing (the next ``step_started`` meets the fence)."""
        if step.status is not StepStatus.RUNNING:
            if run.status.terminal:
                raise RunExpired(
                    f"run {run.run_id} is {run.status.value} and step {step.step_id} is not running"
                )
            raise Conflict(
                f"step {step.step_id} is {step.status.value}, not running: cannot apply {self.TYPE.value}"
            )

    def apply(
        self, run_id: str, cid: str | None, step: Step | None, now: datetime
    ) -> Step:  # pragma: no cover - every step record has its own
        raise NotImplementedError


@dataclass(frozen=True, slots=True)
class StepStartedData(_StepRule):
    TYPE: ClassVar[EventType] = EventType.STEP_STARTED
    STATUS: ClassVar[StepStatus] = StepStatus.RUNNING
    FENCED: ClassVar[bool] = True
    step_name: str | None = None  # the step the start is for: a stale message's start is refused
    owner: str | None = None
    # A takeover of an owned step from a gone owner (``worker/inline.py``): the attempt the
    # taker saw it running at. Refused unless it still is, so of two takers (two consumers of
    # one redelivery, say) one starts a new attempt (contract §5.5: at most one).
    takes_over: int | None = None

    def _judge_live(self, run: Run, step: Step, now: datetime) -> None:
        """A start that names another step than the entity's (a stale message of a step whose id a
        corrected replay reused, contract §4.4) is refused before ``retry_after`` is looked at; so is
        a takeover of a step no longer running at the attempt it names."""
        if self.step_name is not None and self.step_name != step.step_name:
            raise Conflict(
                f"step {step.step_id} is {step.step_name!r}: a start of {self.step_name!r} is stale"
            )
        if self.takes_over is not None and (
            step.status is not StepStatus.RUNNING or step.attempt != self.takes_over
        ):
            raise Conflict(
                f"step {step.step_id} is {step.status.value} at attempt {step.attempt}: "
                f"not the attempt {self.takes_over} this start takes over"
            )
        if step.retry_after is not None and step.retry_after > now:
            left = (step.retry_after - now).total_seconds()
            raise TooEarly(
                f"step {step.step_id} may not start for {left:.3f}s", retry_after=float(math.ceil(left))
            )

    def apply(self, run_id: str, cid: str | None, step: Step | None, now: datetime) -> Step:
        assert step is not None
        return replace(
            step,
            status=self.STATUS,
            attempt=step.attempt + 1,
            started_at=step.started_at or now,
            retry_after=None,
        )


@dataclass(frozen=True, slots=True)
class StepRetryingData(_StepRule):
    TYPE: ClassVar[EventType] = EventType.STEP_RETRYING
    STATUS: ClassVar[StepStatus] = StepStatus.PENDING
    error: bytes | None
    retry_after: datetime | None = None
    owner: str | None = None

    def apply(self, run_id: str, cid: str | None, step: Step | None, now: datetime) -> Step:
        assert step is not None
        return replace(step, status=self.STATUS, error=self.error, retry_after=self.retry_after)


@dataclass(frozen=True, slots=True)
class StepCompletedData(_StepRule):
    TYPE: ClassVar[EventType] = EventType.STEP_COMPLETED
    STATUS: ClassVar[StepStatus] = StepStatus.COMPLETED
    output: bytes | None = None
    owner: str | None = None

    def apply(self, run_id: str, cid: str | None, step: Step | None, now: datetime) -> Step:
        assert step is not None
        return replace(step, status=self.STATUS, output=self.output, completed_at=now)


@dataclass(frozen=True, slots=True)
class StepFailedData(_StepRule):
    TYPE: ClassVar[EventType] = EventType.STEP_FAILED
    STATUS: ClassVar[StepStatus] = StepStatus.FAILED
    error: bytes | None
    owner: str | None = None

    def apply(self, run_id: str, cid: str | None, step: Step | None, now: datetime) -> Step:
        assert step is not None
        return replace(step, status=self.STATUS, error=self.error, completed_at=now)


@dataclass(frozen=True, slots=True)
class HookCreatedData(_CreateRule):
    TYPE: ClassVar[EventType] = EventType.HOOK_CREATED
    ENTITY: ClassVar[Entity] = Entity.HOOK
    token: str
    metadata: bytes | None = None

    def apply(self, run_id: str, cid: str | None, hook: Hook | None, now: datetime) -> Hook:
        assert cid is not None
        return Hook(run_id=run_id, hook_id=cid, token=self.token, metadata=self.metadata, created_at=now)


@dataclass(frozen=True, slots=True)
class HookConflictData(_Definition):
    """The World's own: a ``hook_created`` whose token another run holds."""

    TYPE: ClassVar[EventType] = EventType.HOOK_CONFLICT
    ENTITY: ClassVar[Entity] = Entity.HOOK
    CLIENT: ClassVar[bool] = False
    token: str
    conflicting_run_id: str


def _judge_use(run: Run | None, entity: object | None, named: str, gone: str) -> None:
    """A use of a run's entity (a hook's, a wait's): the run first (missing: NotFound; terminal:
    RunExpired, ``gone`` saying why), then the entity (missing: NotFound naming it)."""
    if run is None:
        raise NotFound("run not found")
    if run.status.terminal:
        raise RunExpired(f"run {run.run_id} is {run.status.value}: {gone}")
    if entity is None:
        raise NotFound(f"{named} not found in run {run.run_id}")


class _HookRule(_Definition):
    """A live hook's use: a resume, its disposal (the World deduplicates resumes and frees tokens)."""

    __slots__ = ()
    ENTITY = Entity.HOOK
    FENCED = True

    def judge(self, cid: str | None, run: Run | None, hook: Hook | None, now: datetime | None = None) -> None:
        """Raises NotFound (the run or the live hook missing), RunExpired (a terminal run: its hooks
        are gone; checked before the hook)."""
        _judge_use(run, hook, f"hook {cid}", "its hooks are gone")

    def apply(self, run_id: str, cid: str | None, hook: Hook | None, now: datetime) -> Hook:
        assert hook is not None
        return hook  # a use leaves the hook as it is (a disposal removes it)


@dataclass(frozen=True, slots=True)
class HookReceivedData(_HookRule):
    TYPE: ClassVar[EventType] = EventType.HOOK_RECEIVED
    payload: bytes | None
    resume_id: str | None = None  # a resume with an id is recorded once (contract §5.2)
    token: str | None = None  # the runtime names the hook it resumes by it (the World keys by hook id)
    actor: str | None = None  # who resumed it from outside (audit): an IAM ARN, or "local"


@dataclass(frozen=True, slots=True)
class HookDisposedData(_HookRule):
    TYPE: ClassVar[EventType] = EventType.HOOK_DISPOSED


@dataclass(frozen=True, slots=True)
class WaitCreatedData(_CreateRule):
    TYPE: ClassVar[EventType] = EventType.WAIT_CREATED
    ENTITY: ClassVar[Entity] = Entity.WAIT
    resume_at: datetime

    def apply(self, run_id: str, cid: str | None, wait: Wait | None, now: datetime) -> Wait:
        assert cid is not None
        return Wait(
            run_id=run_id, wait_id=cid, status=WaitStatus.WAITING, resume_at=self.resume_at, created_at=now
        )


@dataclass(frozen=True, slots=True)
class WaitCompletedData(_Definition):
    TYPE: ClassVar[EventType] = EventType.WAIT_COMPLETED
    ENTITY: ClassVar[Entity] = Entity.WAIT
    FENCED: ClassVar[bool] = True

    def judge(self, cid: str | None, run: Run | None, wait: Wait | None, now: datetime | None = None) -> None:
        """Exactly once per wait. Raises NotFound (run or wait missing), RunExpired (a terminal run,
        checked before the wait), Conflict (already completed)."""
        _judge_use(run, wait, f"wait {cid}", f"wait {cid} will not complete")
        assert wait is not None
        if wait.status is WaitStatus.COMPLETED:
            raise Conflict(f"wait {wait.wait_id} is already completed")

    def apply(self, run_id: str, cid: str | None, wait: Wait | None, now: datetime) -> Wait:
        assert wait is not None
        return replace(wait, status=WaitStatus.COMPLETED, completed_at=now)


@dataclass(frozen=True, slots=True)
class PatchAppliedData(_Definition):
    """The run reached ``patched(change_id)`` on code that has the change (workflow/patching.py).

    It changes nothing but the log: every replay of the run reads its decision from
    it. Fenced like a create (a terminal run takes no new decision), but not kept as an
    entity: a second marker of one change (two handlers racing) is accepted, and the
    replay reads the set of changes its log names. The correlation id is
    ``patch:<change_id>``.
    """

    TYPE: ClassVar[EventType] = EventType.PATCH_APPLIED
    ENTITY: ClassVar[Entity] = Entity.LOG
    FENCED: ClassVar[bool] = True
    change_id: str

    def judge(self, run: Run | None) -> None:
        """Raises NotFound (no run), RunExpired (a terminal run)."""
        if run is None:
            raise NotFound("run not found")
        if run.status.terminal:
            raise RunExpired(f"run {run.run_id} is {run.status.value}: no patch decision after its end")

    def apply(self, run: Run, now: datetime) -> Run:
        """The run as it is: the event changes the log alone."""
        return run


# A change id names a change in code and in the log: short, printable, no spaces.
MAX_CHANGE_ID_LENGTH = 200


def patch_correlation_id(change_id: str) -> str:
    """The correlation id of a ``patch_applied`` event of ``change_id``."""
    return f"patch:{change_id}"


def change_id_error(change_id: object) -> str | None:
    """What is wrong with ``change_id`` as a patch's change id; None when nothing is."""
    if not isinstance(change_id, str) or not change_id:
        return f"a change id is a non-empty str, not {change_id!r}"
    if len(change_id) > MAX_CHANGE_ID_LENGTH:
        return f"a change id has at most {MAX_CHANGE_ID_LENGTH} characters, not {len(change_id)}"
    if not change_id.isprintable() or any(c.isspace() for c in change_id):
        return f"a change id is printable and has no spaces: {change_id!r}"
    return None


@dataclass(frozen=True, slots=True)
class NoopData(_Definition):
    """The World's own: a sealed position (contract §3.2)."""

    TYPE: ClassVar[EventType] = EventType.NOOP
    ENTITY: ClassVar[Entity] = Entity.LOG
    CLIENT: ClassVar[bool] = False


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
    | PatchAppliedData
    | NoopData
)
DATA_RECORDS: dict[EventType, type[EventData]] = {record.TYPE: record for record in get_args(EventData)}
# Each entity's records (a client's: ``hook_conflict`` is the World's own). The step
# events' records may each name its owner.
RunData = RunCreatedData | RunStartedData | RunCompletedData | RunFailedData | RunCancelledData
RUN_RECORDS: tuple[type[RunData], ...] = get_args(RunData)
StepData = StepCreatedData | StepStartedData | StepRetryingData | StepCompletedData | StepFailedData
STEP_RECORDS: tuple[type[StepData], ...] = get_args(StepData)
HookData = HookCreatedData | HookReceivedData | HookDisposedData
HOOK_RECORDS: tuple[type[HookData], ...] = get_args(HookData)
WaitData = WaitCreatedData | WaitCompletedData
WAIT_RECORDS: tuple[type[WaitData], ...] = get_args(WaitData)
CHILD_RECORDS: tuple[type[StepData | HookData | WaitData], ...] = (
    *STEP_RECORDS,
    *HOOK_RECORDS,
    *WAIT_RECORDS,
)
# Each run transition (not the creation) as (the statuses it leaves, the status it enters).
RUN_TRANSITIONS: dict[EventType, tuple[tuple[RunStatus, ...], RunStatus]] = {
    record.TYPE: (record.FROM, record.STATUS) for record in RUN_RECORDS if not record.CREATES and record.FROM
}
# The status each step transition (not the create: it depends on its owner) leaves its step in.
STEP_STATUS_AFTER: dict[EventType, StepStatus] = {
    record.TYPE: record.STATUS for record in STEP_RECORDS if issubclass(record, _StepRule)
}


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
    NUMBER = "number"  # an int


def _kind(declared: tuple[type, ...]) -> FieldKind:
    for python_type, kind in (
        (bytes, FieldKind.PAYLOAD),
        (datetime, FieldKind.TIME),
        (RunCreation, FieldKind.CREATION),
        (bool, FieldKind.FLAG),
        (str, FieldKind.TEXT),
        (int, FieldKind.NUMBER),
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
    """One committed event of a run's log, at a dense position 1, 2, 3, ... (contract §3.2)."""

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
class Blocked:
    """Where a held run's replay diverged from its log (README "Deploying changes").

    A run whose replay on another deployment's code than the one that wrote its log
    diverges stays ``running``, held with this mark, until a deploy brings code it
    replays on (or an operator cancels it).

    Attributes:
        deployment_id: the deployment whose code diverged.
        position: how far the log went (its last position) when the replay diverged.
        message: the divergence, as the NON_DETERMINISM error names it.
        since: when the run was held.
        at: the diverging call's correlation id, when one call diverged.
        expected: what the log has there (a step's name, a hook's token).
        actual: what the code calls there.
        released_to: set when a deploy released the run onto its code (the run is then
            retried there, and held again if that code diverges too); None while held.
    """

    deployment_id: str
    position: int
    message: str
    since: datetime
    at: str | None = None
    expected: str | None = None
    actual: str | None = None
    released_to: str | None = None

    @property
    def held(self) -> bool:
        """Whether the run waits for a deploy (not released onto one yet)."""
        return self.released_to is None


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
    # Set once the run's replay diverged on another deployment's code (worker/holding.py).
    blocked: Blocked | None = None

    @property
    def held(self) -> bool:
        """Whether the run is running but held: blocked, waiting for a deploy or a cancel."""
        return self.status is RunStatus.RUNNING and self.blocked is not None and self.blocked.held

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
