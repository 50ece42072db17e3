"""The pipelined inline outcome: a step's outcome and the next inline creates in one write.

When an inline round ran one step and its own writes continued the cached log, the
log is known to end at the replay's last position. The outcome is then replayed
there before it is written; if the pass it leads to would do nothing but create
inline steps, the outcome and those creates go in one ``events.append_after`` (one
round trip) and their bodies run, and so on step after step. Anything else in the
pass, and an append that does not land, take the ordinary way (ARCHITECTURE §5,
"Pipelined outcome"). A workflow that returns or fails after the outcome (and tells
no parent) has its end in the same append, and a ``patched()`` decision the outcome
leads to has its marker there too, right after the outcome.
"""

from __future__ import annotations

from collections.abc import Set as AbstractSet
from functools import partial
from typing import Any

from world_aws.client.run_slots import release_run_slot
from world_aws.contract import rules
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventType,
    PatchAppliedData,
    Run,
    RunCompletedData,
    RunFailedData,
)
from world_aws.contract.world import World
from world_aws.engine.children import PARENT_RUN_ID
from world_aws.engine.logcache import LogCache
from world_aws.engine.replay import Completed, Failed, Outcome, Replay, StepRequest, Suspended
from world_aws.engine.replaycache import ReplayCache
from world_aws.worker import stepbody
from world_aws.worker.holding import held_by
from world_aws.worker.inline import InlineRound, InlineSteps, Owner, creates_only, owned_create
from world_aws.worker.outcomes import append_or_none
from world_aws.workflow.patching import patch_marker
from world_aws.workflow.registry import WorkflowFunction, Workflows


class OutcomePipeline:
    """Writes deferred inline outcomes, with the next steps' creates when the next pass has only those."""

    def __init__(
        self,
        world: World,
        app: Workflows,
        logs: LogCache,
        replays: ReplayCache,
        inline: InlineSteps | None,
        max_events_per_run: int,
    ) -> None:
        self._world = world
        self._app = app
        self._logs = logs
        self._replays = replays
        self._inline = inline
        self._max_events = max_events_per_run

    def settle(
        self,
        run: Run,
        workflow: WorkflowFunction[Any, Any],
        replay: Replay,
        settled: EventRequest,
        fed: bool,
        owner: Owner,
        ran: set[str],
        published: AbstractSet[str],
    ) -> tuple[Replay, InlineRound, bool]:
        """Write ``settled`` (a deferred outcome), with the creates of the steps the workflow calls next.

        ``fed``: the round's writes continued the cached log, so the log ends at the
        replay's last position. ``published``: the steps this continuation sent messages
        for (``InlineSteps.plan``). Without that the outcome is simply written. If the
        append does not land (the log moved, or its answer was lost), the outcome is
        written one by one and the replay, which saw it at a position it may not have,
        starts over from the log.

        Returns:
            The replay to go on with, the round of the steps created with the outcome
            (empty if none; its ``deferred`` is the next outcome to settle), and whether
            the cached log is known to be whole.
        """
        if not fed:
            stepbody.record(self._world, run.run_id, settled)
            return replay, InlineRound(), False
        if not self._replays.keeps_replays or self._replays.check_due(replay):
            replay.close()  # every replay cold, or a checked one due (Orchestrator.continue_run)
            replay = Replay(run, workflow, self._app.serializer)
        replay.feed(self._logs.read(run.run_id, after=replay.last_position, fetch=False))
        after = replay.last_position
        at = self._world.clock.now()
        settled_event = Event(run.run_id, after + 1, settled.type, settled.correlation_id, at, settled.data)
        replay.feed([settled_event])
        outcome = replay.outcome()
        if not isinstance(outcome, Suspended) and self._replays.check_before_end(replay):
            # Checked: the end written here is a cold replay's of the whole log and the outcome.
            replay.close()
            replay = Replay(run, workflow, self._app.serializer)
            replay.feed([*self._logs.read(run.run_id, after=0, fetch=False), settled_event])
            outcome = replay.outcome()
        # patched() took a new branch after this outcome: its markers go in this append, after
        # the outcome and before anything the branch writes (workflow/patching.py).
        markers = [patch_marker(change_id) for change_id in replay.patches.unrecorded]
        if len(markers) > rules.MAX_BATCH_EVENTS - 2:  # too many for one batch: the ordinary way
            stepbody.record(self._world, run.run_id, settled)
            replay.close()
            return Replay(run, workflow, self._app.serializer), InlineRound(), False
        room = self._max_events - after - 1 - len(markers)
        closing = None  # the run's end, when the workflow returns or fails here (and tells no parent)
        if (
            isinstance(outcome, Completed | Failed)
            and room >= 0
            and PARENT_RUN_ID not in run.attributes
            and not held_by(self._world, run, outcome)  # the continuation's replay holds it
        ):
            closing = run_end(outcome)
        creates = (
            []
            if closing is not None
            else self._next_creates(
                run.run_id,
                outcome,
                owner,
                ran,
                room=min(room, rules.MAX_BATCH_EVENTS - 1 - len(markers)),
                published=published,
            )
        )
        # Not landed, or unknown: the one-by-one write finds out (a landed batch refuses the
        # outcome; the replay from the log then shows our creates, which the next pass adopts,
        # or the run's end, which the pass's own end then finds written).
        requests = [
            settled,
            *markers,
            *(owned_create(s, owner) for s in creates),
            *([closing] if closing else []),
        ]
        # With creates, their bodies follow: the World's housekeeping of the append (the
        # DynamoDB World's batch item put) runs beside them, off the path between two bodies.
        results = append_or_none(self._world, run.run_id, after, requests, at, flush_later=bool(creates))
        if results is None:
            stepbody.record(self._world, run.run_id, settled)
            replay.close()
            return Replay(run, workflow, self._app.serializer), InlineRound(), False
        replay.patches.recorded([m.data_as(PatchAppliedData).change_id for m in markers])
        if closing is not None:
            release_run_slot(
                self._world, self._app, run, data=replay.run_input
            )  # its end landed (client/run_slots.py)
            return replay, InlineRound(ended=True), False
        fed = self._logs.feed(run.run_id, [r.event for r in results if r.event is not None])
        created = results[1 + len(markers) :]
        claimed = [(r.step, s) for r, s in zip(created, creates, strict=True) if r.step is not None]
        flush = partial(self._world.events.flush, run.run_id)
        if not claimed or self._inline is None:
            if creates:  # appended to flush later, with no body to flush beside
                flush()
            return replay, InlineRound(), fed
        end = results[-1].event.position if results[-1].event is not None else None
        bodies = self._inline.run_claimed(run, claimed, owner, defer=True, after=end, beside=flush)
        if not bodies.written:  # the usual case: the outcome deferred to the next batch
            return replay, bodies, fed and bodies.complete
        return replay, bodies, fed and bodies.complete and self._logs.feed(run.run_id, bodies.written)

    def _next_creates(
        self,
        run_id: str,
        outcome: Outcome,
        owner: Owner,
        ran: set[str],
        *,
        room: int,
        published: AbstractSet[str],
    ) -> list[StepRequest]:
        """The steps to create with the outcome: the next pass's, if it only creates inline ones
        and they fit in ``room`` (the batch's and the log's)."""
        if self._inline is None or not isinstance(outcome, Suspended):
            return []
        if len(outcome.new_steps) > room:
            return []  # wider than one batch (or than the log's room): the normal pass creates them
        plan = self._inline.plan(run_id, outcome, owner, ran, published=published)
        return list(plan.create) if creates_only(outcome, plan) else []


def run_end(outcome: Completed | Failed) -> EventRequest:
    """The event that records a workflow's return or failure."""
    if isinstance(outcome, Completed):
        return EventRequest(EventType.RUN_COMPLETED, data=RunCompletedData(output=outcome.output))
    return EventRequest(
        EventType.RUN_FAILED, data=RunFailedData(error=outcome.error, error_code=outcome.error_code)
    )
