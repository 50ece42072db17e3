"""``DynamoEventStore``: ``events.create`` and the log reads of the AWS World (contract §3, §7.2).

The write path, in one table (layout in ``keys.py``):

1. **Reserve** — one ``UpdateItem`` on the run item: ``SET seq = seq + 1`` with
   ``attribute_exists(pk)`` and, for events that start or create work
   (step_started, step_created, hook_*, wait_*: ``plans.EventPlan.fenced``), the fence
   ``NOT status IN (completed, failed, cancelled)``. ``ReturnValues=ALL_NEW``
   gives the position and the run as of it; a refusal returns ``ALL_OLD``, which
   ``rules.judge_*`` names (missing → NotFound, terminal → RunExpired). Single-item
   writes on the run item are applied one at a time, so this write is where the
   event is ordered, and where the fence is decided.
2. **Commit** — one ``TransactWriteItems`` at that position: the event ``Put``
   (``attribute_not_exists(sk)``) plus the entity change, with conditions that
   encode the rules. It never touches the run item, so a wide fan-out never
   conflicts in transactions on it. If an entity condition fails, the position
   is **sealed** with a ``noop`` event and the rejection is named from the
   cancellation reason's ``ALL_OLD`` image with ``rules.judge_*`` (no second read).
   If the event put fails, a reader sealed the position (the writer looked
   dead): nothing was applied, reserve again.

Run transitions make the status change *in* the reservation (so the fence
linearizes at one write) and then put the event; ``run_created`` is one
transaction. What each event type reads first, how it reserves, its commit's
actions by name and which one names a refusal are its plan (``aws/write/plans.py``);
its round trips and write units follow from the plan, and ARCHITECTURE §8
states them (checked on moto by ``tests/aws/test_event_plans.py``).
"""

from __future__ import annotations

import builtins
from collections.abc import Callable, Sequence
from datetime import datetime

from world_aws.aws.codec import keys
from world_aws.aws.read.log_reader import HoleRepairPolicy, LogReader
from world_aws.aws.write.hook_events import HookEvents
from world_aws.aws.write.landings import Landings
from world_aws.aws.write.log_events import LogEvents
from world_aws.aws.write.run_events import RunEvents
from world_aws.aws.write.sequencer import Sequencer
from world_aws.aws.write.step_events import StepEvents
from world_aws.aws.write.wait_events import WaitEvents
from world_aws.contract import rules
from world_aws.contract.clock import Clock
from world_aws.contract.records import Event, EventRequest, EventResult, EventType, ResolveData, RunLog
from world_aws.contract.world import BlobStore, RunEnds
from world_aws.errors import NotFound, WorldAwsError

# One event type's writer: (run id, request, now) -> the appended event and its entity.
Writer = Callable[[str, EventRequest, datetime], EventResult]


class DynamoEventStore:
    """The event log of every run in one DynamoDB table, with the entity changes each event makes."""

    def __init__(
        self,
        sequencer: Sequencer,
        blobs: BlobStore,
        clock: Clock,
        repair: HoleRepairPolicy | None = None,
        ends: RunEnds | None = None,
    ) -> None:
        self._clock = clock
        self.ends = ends or RunEnds()
        policy = repair or HoleRepairPolicy()
        # Shared: a tail the reader keeps, the next append carries (on the readers' time source).
        landings = Landings(sequencer, policy.monotonic)
        self._sequencer = sequencer
        self._runs = RunEvents(sequencer, blobs)
        self._steps = StepEvents(sequencer, blobs, landings)
        self._hooks = HookEvents(sequencer, blobs)
        self._waits = WaitEvents(sequencer, blobs)
        self._log = LogEvents(sequencer)
        self._reader = LogReader(sequencer, blobs, clock, policy, landings)
        # Each event type a caller writes, and its writer (``rules.CLIENT_EVENT_TYPES``; the
        # World's own types, hook_conflict and noop, are written by these writers' refusals).
        self.writers: dict[EventType, Writer] = {
            EventType.RUN_CREATED: self._runs.run_created,
            EventType.RUN_STARTED: self._runs.transition,
            EventType.RUN_COMPLETED: self._runs.transition,
            EventType.RUN_FAILED: self._runs.transition,
            EventType.RUN_CANCELLED: self._runs.transition,
            EventType.STEP_CREATED: self._steps.step_created,
            EventType.STEP_STARTED: self._steps.transition,
            EventType.STEP_RETRYING: self._steps.transition,
            EventType.STEP_COMPLETED: self._steps.transition,
            EventType.STEP_FAILED: self._steps.transition,
            EventType.HOOK_CREATED: self._hooks.hook_created,
            EventType.HOOK_RECEIVED: self._hooks.hook_received,
            EventType.HOOK_DISPOSED: self._hooks.hook_disposed,
            EventType.WAIT_CREATED: self._waits.wait_created,
            EventType.WAIT_COMPLETED: self._waits.wait_completed,
            EventType.PATCH_APPLIED: self._log.append,  # the log alone
        }

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        """Append one event and apply its entity change atomically (contract §3).

        Raises:
            NotFound, Conflict, RunExpired, TooEarly, Throttled, Transient, BadInput.
        """
        rules.validate_request(request)
        writer = self.writers.get(request.type)
        if writer is None:  # a type callers may write that no writer takes: a World bug, not a guess
            raise WorldAwsError(f"no DynamoDB writer for event type {request.type.value!r}")
        result = writer(run_id, request, self._clock.now())
        if request.type.ends_run:
            self.ends.notify(run_id)
        return result

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        *,
        at: datetime,
        flush_later: bool = False,
    ) -> builtins.list[EventResult] | None:
        """Owned step writes (and patch markers), then maybe the run's end, at ``after + 1`` on, all or none.

        Raises:
            BadInput: not owned step writes, or ``at`` later than the World's now.
        """
        rules.validate_batch(requests)
        rules.validate_stamp(at, self._clock.now())
        appended = self._steps.append_after(run_id, after, requests, at, flush_later=flush_later)
        if appended is None:
            return None
        if rules.split_batch(requests).end is not None:
            self.ends.notify(run_id)
            # As after a terminal transition one by one: from a tail's image, only if the run
            # made a hook (``keys.HOOKED``); after a transaction (no image), always.
            self._runs.release_hooks(run_id, at, appended.run_item)
        return appended.results

    def flush(self, run_id: str) -> None:
        """Put the batch item of a tail append that left it (``flush_later``); best effort."""
        self._steps.flush(run_id)

    def settle(self) -> None:
        """Put the batch items whose put failed after their append committed, best effort (a close)."""
        self._steps.settle()

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> builtins.list[Event]:
        """The gap-free log of a run after position ``after``, in position order (contract §3.2).

        Sealed positions (``noop``) are left out; an unknown run gives ``[]``. May
        wait up to the repair grace period for a writer in flight (see ``log_reader``).
        """
        return self._reader.list(run_id, after=after, resolve_data=resolve_data)

    def list_with_run(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> RunLog:
        """The run item's consistent ``GetItem``, then (not terminal) the log read that follows it.

        One read of the run item serves both: the run's header and the log read's view
        of its tail (``LogReader.list_from``), so a continuation's first read costs what
        ``events.list`` does (ARCHITECTURE §8, "The tail"). Raises NotFound.
        """
        run_item = self._sequencer.table.get(keys.run_key(run_id))
        run = self._sequencer.run_header(run_item)
        if run_item is None or run is None:
            raise NotFound(f"run {run_id} not found")
        if run.status.terminal:
            return RunLog(run, None)
        return RunLog(run, self._reader.list_from(run_item, run_id, after=after, resolve_data=resolve_data))
