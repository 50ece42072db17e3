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
from world_aws.aws.write.sequencer import Appended, EntityActions, Sequencer
from world_aws.aws.write.template import EntityWrite, Seen, read_judge_commit
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
        assert request.correlation_id is not None
        wait_key = keys.wait_key(run_id, request.correlation_id)

        def judge(run: Run | None, wait: Wait | None) -> None:
            rules.judge_wait_event(request, run, wait)

        def actions(seen: Seen[Wait]) -> EntityActions:
            assert seen.item is not None
            version = int(seen.item["ver"])

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

            return entity_actions

        def committed(appended: Appended, seen: Seen[Wait]) -> EventResult:
            return EventResult(
                event=appended.event, wait=rules.apply_wait_event(request, run_id, seen.entity, now)
            )

        return read_judge_commit(
            self._seq,
            run_id,
            request,
            now,
            EntityWrite(
                key=wait_key,
                decode=lambda item: self._wait(run_id, item),
                judge=judge,
                actions=actions,
                committed=committed,
                gave_up=f"wait {request.correlation_id} kept changing; retry",
            ),
        )

    @staticmethod
    def _wait(run_id: str, item: Item | None) -> Wait | None:
        return None if item is None else items.wait_from_item(run_id, item)
