"""The read-judge-commit template: the one loop of every event writer that reads its entity first.

``step_started``, ``wait_completed``, ``hook_received`` and ``hook_disposed`` all go:

1. **read** the run item and the entity item (one ``BatchGetItem``, ``Sequencer.read_run_and``);
2. **judge** the request against them with the contract's rule (``rules.judge_*``): a refusal
   is raised here, before any position is taken;
3. **commit** at a fresh position (``Sequencer.append_event``): the event put plus the entity's
   actions, whose conditions encode the same rule against the version that was read;
4. if an entity condition refused the commit (another writer changed the entity between the
   read and the commit), the position is sealed and the refusal's ``ALL_OLD`` image is judged:
   a refusal is raised, an entity still acceptable in its new state is read again.

An event type supplies its parts as an :class:`EntityWrite`; the loop is written once here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Generic, TypeVar

from world_aws.aws.codec import keys
from world_aws.aws.codec.dynamo import Item
from world_aws.aws.write import plans
from world_aws.aws.write.sequencer import MAX_RESERVATIONS, Appended, EntityActions, Sequencer
from world_aws.contract.records import EventRequest, EventResult, Run
from world_aws.errors import Transient

E = TypeVar("E")


@dataclass(frozen=True)
class Seen(Generic[E]):
    """One read: the run item, the entity's item, and the entity as the rules see it."""

    run_item: Item | None
    item: Item | None
    entity: E | None


@dataclass(frozen=True)
class EntityWrite(Generic[E]):
    """One event type's parts of the loop.

    Attributes:
        key: the entity item's key.
        decode: the entity of an item (None: no item), for the rules.
        judge: the contract's rule for (run, entity); raises the refusal.
        actions: the commit's entity actions, from what was read (its version, say).
        committed: the writer's answer once the commit landed.
        gave_up: the message of the Transient raised when every attempt found a change.
        read: replaces the default read (``read_run_and`` + ``decode``). It may answer at
            once (an ``EventResult``: a resume id's first event) or ask for another read
            (None: it changed the entity itself).
        refused: replaces the default answer to a commit an entity condition refused
            (judge the refusal's image; None: read again).
    """

    key: keys.Key
    decode: Callable[[Item | None], E | None]
    judge: Callable[[Run | None, E | None], None]
    actions: Callable[[Seen[E]], EntityActions]
    committed: Callable[[Appended, Seen[E]], EventResult]
    gave_up: str
    read: Callable[[], Seen[E] | EventResult | None] | None = None
    refused: Callable[[Appended, Seen[E]], EventResult | None] | None = None


def read_judge_commit(
    seq: Sequencer, run_id: str, request: EventRequest, now: datetime, write: EntityWrite[E]
) -> EventResult:
    """Append ``request`` after reading and judging its entity; again while the entity changes.

    Raises:
        what ``write.judge`` raises; Transient: ``write.gave_up``, after ``MAX_RESERVATIONS``
        attempts that each found the entity changed.
    """
    for _ in range(MAX_RESERVATIONS):
        seen = write.read() if write.read is not None else _read(seq, run_id, write)
        if seen is None:
            continue
        if isinstance(seen, EventResult):
            return seen
        write.judge(seq.run_header(seen.run_item), seen.entity)
        appended = seq.append_event(
            run_id,
            request,
            now,
            judge=partial(_judge_run, write.judge, seen.entity),  # the reservation's judge
            entity_actions=write.actions(seen),
        )
        if appended.refused is None:
            return write.committed(appended, seen)
        if write.refused is not None:
            answer = write.refused(appended, seen)
        else:
            answer = _rejudge_image(seq, request, write, appended)
        if answer is not None:
            return answer
    raise Transient(write.gave_up, retry_after=0.1)


def _judge_run(judge: Callable[[Run | None, E | None], None], entity: E | None, run: Run | None) -> None:
    judge(run, entity)


def _read(seq: Sequencer, run_id: str, write: EntityWrite[E]) -> Seen[E]:
    run_item, item = seq.read_run_and(run_id, write.key)
    return Seen(run_item, item, write.decode(item))


def _rejudge_image(
    seq: Sequencer, request: EventRequest, write: EntityWrite[E], appended: Appended
) -> EventResult | None:
    """The entity as the refusal's ``ALL_OLD`` image shows it, judged: raises, or None (read again)."""
    assert appended.refused is not None
    old = write.decode(plans.plan(request.type).refused_item(appended.refused))
    write.judge(seq.run_header(appended.run_item), old)
    return None
