"""Wait events on DynamoDB: wait_created and wait_completed.

``wait_created`` (2 round trips, ``Sequencer.create_child``): reserve (fenced, noting
the wait's due time on the run item: ``LiveRun.due_at``, the previous one beside it) +
commit ``[Put event, Put wait attribute_not_exists(sk)]``; a duplicate puts the
previous due time back (one conditional ``UpdateItem``) and fails the
wait condition, seals its position and is named Conflict from the ``ALL_OLD`` image.

``wait_completed`` (3 round trips): consistent read of run and wait (judged
with ``rules.judge_wait_event``; a rejection costs no position), reserve
(fenced) + commit ``[Put event, Update wait status = completed if ver = :seen]``.
Of two racing completions, the second fails the version condition and is named
Conflict from the ``ALL_OLD`` image.
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import Action, ConditionFailed, Item
from world_aws.aws.codec.payloads import PayloadWriter
from world_aws.aws.write import plans
from world_aws.aws.write.sequencer import Sequencer, until_settled
from world_aws.contract import rules
from world_aws.contract.records import EventRequest, EventResult, Run, Wait, WaitStatus
from world_aws.contract.world import BlobStore
from world_aws.errors import Conflict, Throttled, Transient


class WaitEvents:
    """Writes the wait events of one table."""

    def __init__(self, sequencer: Sequencer, blobs: BlobStore) -> None:
        self._seq = sequencer
        self._table = sequencer.table
        self._blobs = blobs

    def wait_created(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        assert request.correlation_id is not None
        wait = rules.apply_wait_event(request, run_id, None, now)

        def entity_actions(position: int, _writer: PayloadWriter) -> list[Action]:
            return [
                self._table.put_action(
                    items.wait_item(wait, position=position),
                    condition="attribute_not_exists(sk)",
                    name=plans.ENTITY,
                )
            ]

        try:
            event = self._seq.create_child(run_id, request, now, entity_actions, due=wait.resume_at)
        except Conflict:
            self.restore_due(run_id, wait.resume_at)
            raise
        return EventResult(event=event, wait=wait)

    def restore_due(self, run_id: str, due: datetime) -> None:
        """Put back the run's due time that a refused (duplicate) create's reservation replaced.

        Only if no later reservation set its own since; best effort: a due time left wrong
        makes the reconciler look at the run once more, or later, never lose it.
        """
        try:
            # Timeline: a later wait_created's reservation changes due_us, and this write
            # then leaves that one standing.
            self._table.update(
                keys.run_key(run_id),
                f"SET {items.DUE_US} = {items.DUE_PREV_US}",
                condition=f"{items.DUE_US} = :ours AND attribute_exists({items.DUE_PREV_US})",
                values={":ours": items.epoch_us(due)},
                return_values="NONE",
            )
        except (ConditionFailed, Throttled, Transient):
            pass

    def wait_completed(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        return until_settled(
            lambda: self._try_complete(run_id, request, now),
            f"wait {request.correlation_id} kept changing; retry",
        )

    def _try_complete(self, run_id: str, request: EventRequest, now: datetime) -> EventResult | None:
        assert request.correlation_id is not None
        wait_key = keys.wait_key(run_id, request.correlation_id)
        run_item, wait_item = self._seq.read_run_and(run_id, wait_key)
        seen = self._wait(run_id, wait_item)
        rules.judge_wait_event(request, self._seq.run_header(run_item), seen)
        assert wait_item is not None and seen is not None
        version = int(wait_item["ver"])

        def entity_actions(position: int, _writer: PayloadWriter) -> list[Action]:
            return [
                # Timeline: two wakes of one sleep race; the first completes it, the second
                # fails the version condition and is named Conflict.
                self._table.update_action(
                    wait_key,
                    "SET #status = :completed, completed_at = :now, ver = :pos",
                    condition="ver = :ver",
                    names={"#status": "status"},
                    values={
                        ":completed": WaitStatus.COMPLETED.value,
                        ":now": items.iso(now),
                        ":pos": position,
                        ":ver": version,
                    },
                    name=plans.ENTITY,
                ),
            ]

        def judge(run: Run | None) -> None:
            rules.judge_wait_event(request, run, seen)

        appended = self._seq.append_event(run_id, request, now, judge=judge, entity_actions=entity_actions)
        if appended.refused is None:
            return EventResult(event=appended.event, wait=rules.apply_wait_event(request, run_id, seen, now))
        old = self._wait(run_id, plans.plan(request.type).refused_item(appended.refused))
        rules.judge_wait_event(request, self._seq.run_header(appended.run_item), old)
        return None

    @staticmethod
    def _wait(run_id: str, item: Item | None) -> Wait | None:
        return None if item is None else items.wait_from_item(run_id, item)
