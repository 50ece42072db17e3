"""Events that change only the log, on DynamoDB: ``patch_applied``.

``patch_applied`` (2 round trips, ``plans.PLANS``): reserve (fenced: a terminal run
takes no new decision, and the reservation is where that is decided) + a plain
conditional ``PutItem`` of the event at that position. There is no entity, so no
transaction: the put is the commit. If a reader sealed the position meanwhile (the
writer looked dead), the put fails its ``attribute_not_exists(sk)`` and nothing was
written: reserve again. If the put fails otherwise (a throttle, an unknown outcome),
the position is sealed with a ``noop`` (best effort; if the put did land, the seal
fails harmlessly and a retry writes a second marker, which the replay reads as one).
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws.codec import items
from world_aws.aws.codec.dynamo import ConditionFailed
from world_aws.aws.codec.payloads import PayloadWriter
from world_aws.aws.write import plans
from world_aws.aws.write.sequencer import MAX_RESERVATIONS, Sequencer
from world_aws.contract import rules
from world_aws.contract.records import Event, EventRequest, EventResult, Run
from world_aws.errors import Transient, WorldAwsError


class LogEvents:
    """Writes the log-only events of one table."""

    def __init__(self, sequencer: Sequencer) -> None:
        self._seq = sequencer

    def append(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        """Append ``request`` (``patch_applied``) at a fresh fenced position.

        Raises:
            NotFound, RunExpired: as ``rules.judge_log_event`` names the refused reservation.
            Throttled, Transient.
        """

        def judge(run: Run | None) -> None:
            rules.judge_log_event(request, run)

        writer = PayloadWriter(self._seq.blobs, run_id)
        for _ in range(MAX_RESERVATIONS):
            position, _run_item = self._seq.reserve(
                run_id, now, fenced=plans.plan(request.type).fenced, judge=judge
            )
            event = Event(run_id, position, request.type, request.correlation_id, now, request.data)
            try:
                self._seq.table.put(items.event_item(event, writer), condition="attribute_not_exists(sk)")
            except ConditionFailed:
                continue  # a reader sealed the position: nothing written, take another
            except WorldAwsError:
                self._seq.seal_noop(run_id, position, now)
                raise
            return EventResult(event=event)
        raise Transient(f"run {run_id}: reserved positions kept being sealed; retry", retry_after=0.5)
