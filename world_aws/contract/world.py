"""The World contract: the storage, queue and blob backend behind the runtime.

A World is a set of small protocols. The runtime receives a ``World`` and never
imports a concrete backend; ``MemoryWorld`` and the AWS World both implement it,
and one conformance suite (``world_aws.testing``) checks them alike.

Every method is synchronous and thread-safe: boto3 is synchronous, and the
runtime gets parallelism (fan-out dispatch, parallel create + publish) from
threads.
"""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from world_aws.contract.admission import AdmissionStore
from world_aws.contract.clock import Clock
from world_aws.contract.coalesce import GateStore
from world_aws.contract.erasure import Erasure
from world_aws.contract.payload import HealthCheck, InvokePayload
from world_aws.contract.records import (
    Blocked,
    Event,
    EventRequest,
    EventResult,
    Hook,
    ResolveData,
    Run,
    RunLog,
    RunStatus,
    Step,
    Wait,
)
from world_aws.contract.schedules import ScheduleStore
from world_aws.contract.sealing import PayloadSeal
from world_aws.contract.streams import StreamStore
from world_aws.contract.transport import decode_payload

# The spec version this code mints for new runs. Resilient step dispatch (raw
# bytes on the queue) needs runs of version >= SPEC_VERSION_BINARY_TRANSPORT.
SPEC_VERSION_CURRENT = 3
SPEC_VERSION_BINARY_TRANSPORT = 3


class EventStore(Protocol):
    def create(self, run_id: str, request: EventRequest) -> EventResult:
        """Append one event and apply its entity change atomically (contract §3).

        Raises:
            NotFound, Conflict, RunExpired, TooEarly, Throttled, Transient, BadInput.
        """
        ...

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> list[EventResult] | None:
        """Append ``requests`` at positions ``after + 1`` on, all or none, iff the log ends at ``after``.

        The single writer's fast path (inline execution, ARCHITECTURE §5): an owned
        step's outcome and the next owned steps' creates in one write, a pass's
        dispatched creates (no owner) ten at a time, or a run's last
        outcome and its end (``run_completed`` / ``run_failed``, last in the batch,
        judged and applied as ``create`` would: the run's status, its live hooks
        released; its result may leave ``run`` out). A ``patch_applied`` may go among the
        step writes (a ``patched()`` decision the outcome led to). Each request is
        judged by its rule as if written one by one in order; every event is stamped
        ``at`` (a time read from this World's clock). Returns the results in order, or
        None with nothing written when any position after ``after`` is taken (an event
        or a sealed gap), the run is missing or terminal, or a rule refuses a request:
        the caller then writes them one by one with ``create``.

        Precondition: a create names a step that the log up to ``after`` does not hold
        (the caller's replay has read that log). A World may skip that one check where
        it costs a write (the DynamoDB World for a step it creates without its item,
        ARCHITECTURE §8); every other rule, and a second create after this one, is judged.

        ``flush_later``: the caller will call :meth:`flush` (beside the step bodies the
        append claimed), so the World may leave the append's housekeeping to it instead
        of doing it before it answers. The events are committed when it answers either way.

        Raises:
            BadInput: not step creates and owned outcomes, then maybe the run's end
                (``rules.validate_batch``), or ``at`` is later than the World's now.
            Throttled, Transient: the outcome is unknown (all or nothing landed).
        """
        ...

    def flush(self, run_id: str) -> None:
        """Finish what an ``append_after(..., flush_later=True)`` of ``run_id`` left (none: nothing).

        Best effort, never raising for the World's own writes: what it cannot finish
        now, the run's next append from this World finishes first (raising
        ``Transient`` while it cannot), and any read of the log meanwhile sees the
        events (the DynamoDB World's tail, ARCHITECTURE §8 "The tail").
        """
        ...

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> list[Event]:
        """The gap-free log of a run from position ``after + 1`` on, in position order.

        Includes everything committed before the call began (contract §3.2).
        An unknown run gives an empty list.
        """
        ...

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        """The run, then, unless it is terminal, its log after ``after``: a continuation's first read.

        What ``runs.get(run_id, resolve_data=NONE)`` and then ``list(run_id, after=...,
        resolve_data=...)`` return, in one call that reads the run once (the DynamoDB
        World's log read reads the run item anyway, ARCHITECTURE §8 "The tail"). The
        log holds everything committed before the run was read, as a ``list`` begun
        then would. A terminal run's log is not read (``RunLog.events`` is None): a
        continuation of an ended run replays nothing.

        Raises:
            NotFound: the run is missing.
        """
        ...


@dataclass(frozen=True, slots=True)
class RunPage:
    runs: list[Run]
    cursor: str | None = None


@dataclass(frozen=True, slots=True)
class LiveRun:
    """A non-terminal run as the live index shows it (the reconciler's view, contract §3.1).

    Attributes:
        run_id: the run.
        status: pending or running.
        progress_at: when the run last took a position in its log (the time of its
            last event, or of a position sealed empty): its last sign of life.
        mark: the run's reconcile mark, the key it is listed by (``list_live``): its
            creation time at first, then whatever ``mark_live`` last set.
        due_at: when the wait the run created last is due (``wait_created``'s
            ``resume_at``), None if it made none: the reconciler looks at a silent run
            soon after it, so a lost wake-up is found then, not at the next look its
            silence alone would schedule.
    """

    run_id: str
    status: RunStatus
    progress_at: datetime
    mark: datetime
    due_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class Sweep:
    """What one ``runs.sweep_created`` did.

    Attributes:
        examined: runs read past the World's sweep cursor.
        enrolled: the non-terminal runs among them that it put in the live index,
            each marked at its last progress (``LiveRun.mark == progress_at``).
        caught_up: the cursor reached ``created_before`` (False: ``limit`` cut it short).
    """

    examined: int = 0
    enrolled: builtins.list[LiveRun] = field(default_factory=list)
    caught_up: bool = True


class RunStore(Protocol):
    def get(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        """Raises NotFound."""
        ...

    def list(
        self,
        *,
        status: RunStatus | None = None,
        workflow_name: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RunPage:
        """Runs, newest first, optionally filtered.

        Ordered by creation time, then (runs created at one instant) by run id, both
        descending: every World lists the same runs in the same order.
        """
        ...

    def claim_continuation(self, run_id: str, *, after: int, claimer: str) -> Run | None:
        """Claim the continuation of a fan-out wave: the last completer's run read (contract §5.1 step 6).

        Branches that finish together can each find no other step pending; each then
        claims with the position of its own outcome (``after``) and its step id. The
        claim succeeds, returning the run (as ``get``, except that a World may leave
        its ``input`` out: ``None``, read with ``get``), when no claim was made since
        ``after`` (the run's last claim covers an earlier position, or none was made)
        or this ``claimer`` made the last one (a redelivery of the same completer). A
        success records the run's current last position as covered. Otherwise it
        returns ``None``: a completer whose own outcome preceded the claim will
        continue, and its replay sees this outcome. Linearizable, so of completers
        racing after one wave exactly one wins.

        Raises:
            NotFound: the run is missing.
        """
        ...

    def list_live(self, *, marked_before: datetime, limit: int) -> builtins.list[LiveRun]:
        """Runs of the live index whose reconcile mark is before ``marked_before``, earliest mark first.

        A run enters the live index when ``mark_live`` (or a sweep, ``sweep_created``)
        first marks it, not at its creation: a run that ends before a sweep passes it
        never touches the index. The transition that makes a run terminal takes it out
        in that same write, so a run that ended is never listed, and one in the index
        that did not end always is once its mark is old enough. At most ``limit`` runs:
        a caller pages by moving the marks of what it saw (``mark_live``). Runs are read
        as of the call (a run that ended or was marked during it may be left out).

        Raises:
            BadInput: ``limit`` below 1.
        """
        ...

    def mark_live(self, run_id: str, *, mark: datetime) -> bool:
        """Set the reconcile mark of a non-terminal run, entering it in the live index if it is not.

        A mark later than the run's progress comes back to it when the run next takes a
        position (at least through ``events.create``): the reconciler's look at a run it
        pushed to its next wake is then ``after_seconds`` after the run's new progress.

        ``False`` (no write) if the run ended or is missing: an ended run never enters
        the index, even when this races its terminal transition.
        """
        ...

    def count_live(self, deployment_id: str) -> int:
        """How many runs not yet ended are pinned to ``deployment_id`` (held runs aside).

        What ``deployments retire`` asks before a deployment's code may go: a run pinned
        to it replays there. Read from an index of the runs still going by deployment,
        as of the call.
        """
        ...

    def hold(self, run_id: str, blocked: Blocked) -> bool:
        """Mark a running run held (``Run.blocked``); False (no write) unless it is running."""
        ...

    def release(self, run_id: str, *, deployment_id: str) -> bool:
        """Pin a held run to ``deployment_id`` and mark it released there; False unless it is held."""
        ...

    def unblock(self, run_id: str) -> None:
        """Clear a released run's mark once its replay no longer diverges (nothing if none)."""
        ...

    def list_blocked(self, *, limit: int = 100) -> builtins.list[Run]:
        """The held runs (running, blocked and not released), without their input; at most ``limit``.

        Raises:
            BadInput: ``limit`` below 1.
        """
        ...

    def sweep_created(self, *, created_before: datetime, limit: int) -> Sweep:
        """Enter the non-terminal runs created before ``created_before`` in the live index.

        The World keeps one sweep cursor, in run-creation order (``created_at``, then
        run id). A sweep reads at most ``limit`` runs past it and created before the
        bound, marks each non-terminal one not yet in the index at its last progress
        (``mark_live``), and moves the cursor past what it read. So every run is looked
        at by a sweep once, whatever became of it; concurrent sweeps may read a run twice
        (the marks are hints: harmless). A caller keeps the bound far enough behind its
        clock that no run created before it can still be unwritten (the reconciler's
        ``sweep_lag_seconds``).

        Raises:
            BadInput: ``limit`` below 1.
        """
        ...


class StepStore(Protocol):
    def get(self, run_id: str, step_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Step:
        """Raises NotFound."""
        ...

    def list(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> list[Step]: ...

    def any_pending(self, run_id: str, *, besides: str | None = None) -> bool:
        """Whether a step of the run other than ``besides`` has no outcome yet.

        Pending, running and retrying steps count; completed and failed ones do not.
        Linearizable: the answer reflects every outcome committed before the call, so
        of the branches of a fan-out that each record their outcome and then ask, at
        least one is told ``False`` (contract §5.1 step 6, the last completer). Costs O(1)
        whatever the number of steps. An unknown run gives ``False``.
        """
        ...

    def renew_lease(self, run_id: str, owner: str, *, at: datetime) -> None:
        """Record that ``owner`` (an inline owner's tag) was still running steps of the run ``at``.

        One small item per (run, owner), overwritten by each renewal (``worker/leases.py``);
        it outlives nothing the run needs. An unknown run is not an error (nothing is kept).
        """
        ...

    def lease(self, run_id: str, owner: str) -> datetime | None:
        """When ``owner`` last renewed its lease on the run's steps (None: never). Strongly consistent."""
        ...


class HookStore(Protocol):
    def get_by_token(self, token: str) -> Hook:
        """The live hook holding ``token``. Raises NotFound."""
        ...

    def resumed(self, token: str, resume_id: str) -> Event | None:
        """The ``hook_received`` recorded under ``resume_id`` for ``token`` in its last holder's run.

        Live or not: after the hook was disposed or its run ended, a caller retrying a
        resume whose answer it lost learns that its payload was recorded (contract §6.2
        deduplicates per run, and the token no longer names one). Any hook of that run
        that held the token counts (a workflow may make a hook per round on one token):
        the event's ``token``, or, for one recorded without it, its hook being the last
        holder. None: no such resume, or the token was never held (or its release is
        older than the World keeps it: 7 days on DynamoDB). Payloads are not resolved.
        """
        ...

    def list(self, run_id: str) -> list[Hook]:
        """The live hooks of a run."""
        ...


class WaitStore(Protocol):
    def get(self, run_id: str, wait_id: str) -> Wait:
        """Raises NotFound."""
        ...

    def list(self, run_id: str) -> list[Wait]: ...


@dataclass(frozen=True, slots=True)
class BlobRef:
    """A content-addressed payload in blob storage (S3 above 128 KiB, contract §7.3)."""

    key: str
    size: int
    sha256: str


class BlobStore(Protocol):
    def put(self, data: bytes, *, run_id: str | None = None) -> BlobRef:
        """Store ``data`` under its content address; idempotent.

        ``run_id``: a run that refers to the blob from its stored data. The blob is kept
        while any run that referred to it is kept (``Erasure.delete``): the reference is
        noted before the blob is stored, so an erasure never deletes a blob a run
        writing it meanwhile needs (contract §3.4).
        """
        ...

    def get(self, ref: BlobRef) -> bytes:
        """The bytes behind ``ref``, checked against its sha256.

        Raises:
            NotFound: the object is missing.
            BadInput: the object does not match its digest.
        """
        ...


class QueueName(StrEnum):
    WORKFLOW = "workflow"
    STEP = "step"


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivery of a queue message to a handler (contract §4.3)."""

    queue: QueueName
    message_id: str
    attempt: int
    body: bytes
    # When the handling invocation will be stopped (a Lambda's timeout), if it will be:
    # work done inline (worker/inline.py) is handed on by message before it.
    deadline: datetime | None = None
    # ``body`` decoded by the edge that received it (Lambda's SQS batch validates every
    # record): it travels parsed, so no layer decodes the message again.
    payload: InvokePayload | HealthCheck | None = field(default=None, compare=False, repr=False)

    def parsed(self) -> InvokePayload | HealthCheck:
        """The message: as the edge decoded it, or decoded now (an edge that passed bytes only).

        Raises:
            BadInput: the body is not a valid message.
        """
        return self.payload if self.payload is not None else decode_payload(self.body)


@dataclass(frozen=True, slots=True)
class Ack:
    """Done with this message: delete it."""


@dataclass(frozen=True, slots=True)
class Redeliver:
    """Deliver this same message again after ``seconds`` (attempt + 1)."""

    seconds: float


HandlerResult = Ack | Redeliver
MessageHandler = Callable[[Delivery], HandlerResult]


class Queue(Protocol):
    def publish(
        self,
        queue: QueueName,
        body: bytes,
        *,
        delay_seconds: float = 0,
        idempotency_key: str | None = None,
    ) -> str:
        """Publish ``body`` (an encoded invoke payload); returns the message id.

        Delays beyond the backend's limit are chained until due (contract §4.3). A
        second publish with the same ``idempotency_key`` while the first is
        retained is a no-op returning the first message id (contract §4.4).
        """
        ...


@dataclass(frozen=True, slots=True)
class Deployment:
    """One deployment of the app and the runs still pinned to it (``world-aws deployments``).

    Attributes:
        deployment_id: its id (a version number of the workflow function on AWS).
        live_runs: the runs not yet ended pinned to it (held runs aside): ``runs.count_live``.
        newest: new runs start on it.
    """

    deployment_id: str
    live_runs: int
    newest: bool


class Consumers(Protocol):
    def stop(self) -> None:
        """Stop consuming; in-flight messages finish or become visible again."""
        ...

    def wait_idle(self, timeout: float) -> bool:
        """Block until no message is queued or in flight; False on timeout."""
        ...


@dataclass(frozen=True, slots=True)
class WorldCapabilities:
    """What a World guarantees beyond the base contract. Every member fails closed.

    Attributes:
        deployment_affinity: deployment ids are real and immutable per run, so the
            step consumer's deployment guard is on (contract §5.4).
        hook_resume_dedup: ``hook_received`` is deduplicated on (run, ``resume_id``)
            (contract §6.2).
        precondition_guard: the World enforces a stale-write precondition on
            ``step_created`` (it may refuse a create a replay derived from an old
            snapshot). Resilient dispatch is then unsafe, since nothing orders such a
            refusal before the consumer's re-ensure from the message, and the runtime
            keeps sequential create-then-publish whatever
            ``WORKFLOW_RESILIENT_STEP_DISPATCH`` says (contract §5.2).
    """

    deployment_affinity: bool = False
    hook_resume_dedup: bool = True
    precondition_guard: bool = False


class RunEnds:
    """Wakes this process's waiters on a run the moment this process records the run's end.

    A World notifies it when one of its writes ends a run; ``RunHandle.wait`` waits on it
    between reads instead of sleeping, so a run that ends in this process (the local
    stack, the memory World, the test kit) is seen at once, without a poll interval. A run
    ended by another process is still seen by the handle's next read. Keeps the last
    ``keep`` ended ids (a waiter that comes later reads the end anyway).
    """

    def __init__(self, keep: int = 10_000) -> None:
        self._cond = threading.Condition()
        self._ended: OrderedDict[str, None] = OrderedDict()
        self._keep = keep

    def notify(self, run_id: str) -> None:
        """``run_id`` ended: wake whoever waits on it."""
        with self._cond:
            self._ended[run_id] = None
            while len(self._ended) > self._keep:
                self._ended.popitem(last=False)
            self._cond.notify_all()

    def wait(self, run_id: str, timeout: float) -> bool:
        """Block up to ``timeout`` seconds for this process to record ``run_id``'s end; whether it did."""
        with self._cond:
            return self._cond.wait_for(lambda: run_id in self._ended, timeout)


class World(Protocol):
    events: EventStore
    runs: RunStore
    steps: StepStore
    hooks: HookStore
    waits: WaitStore
    blobs: BlobStore
    queue: Queue
    clock: Clock
    schedules: ScheduleStore
    streams: StreamStore
    admission: AdmissionStore
    gates: GateStore
    # How the runtime seals what it sends outside the stores (contract.sealing).
    payloads: PayloadSeal
    erasure: Erasure
    ends: RunEnds

    @property
    def capabilities(self) -> WorldCapabilities: ...

    def deployment_id(self) -> str:
        """The deployment this process serves (ambient; no backend call)."""
        ...

    def start_consumers(self, handler: MessageHandler) -> Consumers:
        """Deliver both queues' messages to ``handler`` in background threads (local use)."""
        ...

    def close(self) -> None: ...


class ForwardingWorld:
    """A World that hands everything to ``inner``: the base of wrappers that watch some stores.

    A subclass replaces the stores it observes after ``__init__`` and overrides what
    it does differently (its own ``close``, say); the rest stays ``inner``'s.
    """

    def __init__(self, inner: World) -> None:
        self.inner = inner
        self.events: EventStore = inner.events
        self.runs: RunStore = inner.runs
        self.steps: StepStore = inner.steps
        self.hooks: HookStore = inner.hooks
        self.waits: WaitStore = inner.waits
        self.blobs: BlobStore = inner.blobs
        self.queue: Queue = inner.queue
        self.clock: Clock = inner.clock
        self.schedules: ScheduleStore = inner.schedules
        self.streams: StreamStore = inner.streams
        self.admission: AdmissionStore = inner.admission
        self.gates: GateStore = inner.gates
        self.payloads: PayloadSeal = inner.payloads
        self.erasure: Erasure = inner.erasure
        self.ends: RunEnds = inner.ends

    @property
    def capabilities(self) -> WorldCapabilities:
        return self.inner.capabilities

    def deployment_id(self) -> str:
        return self.inner.deployment_id()

    def start_consumers(self, handler: MessageHandler) -> Consumers:
        return self.inner.start_consumers(handler)

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True, slots=True)
class WorldOptions:
    """Construction options common to every World."""

    deployment_id: str = "dpl_local"
    capabilities: WorldCapabilities = field(default_factory=WorldCapabilities)
