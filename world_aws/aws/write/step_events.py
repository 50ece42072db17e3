"""Step events on DynamoDB: step_created, step_started, step_retrying, step_completed, step_failed.

``step_created`` (2 round trips): reserve (fenced) + commit ``[Put event, Put step
attribute_not_exists(sk), Put pend# marker]``, no read first
(``Sequencer.create_child``). A duplicate fails the step condition: its position
is sealed with a ``noop`` and the ``ALL_OLD`` image names the rejection
(Conflict). A step consumer's create (``via_step_dispatch``) is mostly a
re-ensure of a step that exists (contract §5.2): it reads run and step first and is
refused there, without a position (3 round trips when it does create).

``step_started`` (3 round trips): one consistent ``BatchGetItem`` of the run and the
step, judged with ``rules.judge_step_event`` (TooEarly needs the step's
``retry_after``; a rejection costs this one read and no position); reserve
(fenced, contract §3.1); commit ``[Put event, Update step]`` with the condition
``ver = :seen`` (the step is still exactly as judged) and, when the start names
its step, ``step_name = :name`` (the step-name fence: a stale start of another
step under the same id is Conflict, named by the read or else by the ``ALL_OLD``
image, at no extra round trip). The read is needed anyway:
the result carries the whole step (its input, to execute it), and a transaction
returns no item images on success. If another writer changed the step in
between, the position is sealed and the ``ALL_OLD`` image judged: a rejection is
raised from it, an acceptable new state is tried again.

``step_retrying`` / ``step_completed`` / ``step_failed`` (2 round trips): no read.
Reserve (*unfenced*, because a running step may report its retry or its outcome
after its run ended; a retry then starts nothing, the next ``step_started`` is
fenced) + commit ``[Put event, Update step if status = running]`` (plus ``Delete
pend# marker`` for an outcome). These are accepted exactly when the step is
running, so the condition is the whole rule; a refused commit seals its position
and the ``ALL_OLD`` image, judged with the run as of the reservation, names the
rejection. Their result carries no
step (nothing was read); the caller has what it wrote.

``append_after``: the single writer's batch of owned step writes (an outcome, the next
creates). Its run item write takes the positions (``seq = :after``, fenced); then the
events in as few items as fit (``items.batch_items``: an outcome and the next create
share one), then the same entity actions as above, except for an owned step appended
alone: no item while it runs (the run item's ``own#`` entry) nor after its owner settles
it (its events are its record, ``logged_steps``; ARCHITECTURE §8 "The owned step without
an item"). With no entity action and one small batch item (the sequential shape) the
run item write alone commits it, keeping the batch as its ``tail``, and the batch item's
put follows (2 plain writes; ARCHITECTURE §8 "The tail"); else all of it is one
``TransactWriteItems`` (1 round trip).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Generic, TypeVar

from world_aws.aws.codec import items, keys, sizes
from world_aws.aws.codec.dynamo import Action, Cancelled, ConditionFailed, Item, to_item
from world_aws.aws.codec.payloads import ENTITY_INLINE_LIMIT, PayloadReader, PayloadWriter
from world_aws.aws.write import plans
from world_aws.aws.write.landings import Landings
from world_aws.aws.write.run_events import transition_changes
from world_aws.aws.write.sequencer import (
    TAIL_SLOT,
    Appended,
    EntityActions,
    EventCommit,
    Sequencer,
    tail_batch,
    tail_copy,
)
from world_aws.aws.write.template import EntityWrite, Seen, read_judge_commit
from world_aws.contract import rules
from world_aws.contract.records import (
    STEP_STATUS_AFTER,
    EventRequest,
    EventResult,
    EventType,
    ResolveData,
    Run,
    Step,
    StepCompletedData,
    StepCreatedData,
    StepFailedData,
    StepRetryingData,
    StepStartedData,
    StepStatus,
    data_as,
    owner_of,
)
from world_aws.contract.world import BlobStore
from world_aws.errors import Conflict, Transient

logger = logging.getLogger(__name__)

# Payload fields the step item stores beside its event: a create's input, a retry's or
# an outcome's output and error (``PayloadWriter.prepare``).
_CREATE_FIELDS: tuple[str, ...] = ("input",)
_SETTLE_FIELDS: tuple[str, ...] = ("output", "error")


def _no_actions(_position: int, _writer: PayloadWriter) -> list[Action]:
    """A batch's ``patch_applied``: its event item is all it writes."""
    return []


# An append that creates at most this many owned steps writes no item for them: the
# sequential shape (an outcome and the next create) and a wave as wide as the default
# inline fan-out (WORKFLOW_MAX_INLINE_STEPS = 3). Each such step costs its run item an
# entry (~40 B) while it runs, which every append rewrites; a wider wave writes items.
LAZY_CREATES = 3
# A tail is taken while the run item holding it stays within ``TAIL_UNITS`` write units
# (its ``tail`` attribute's bytes by ``sizes``): the run item's last size as this World's
# last tail append returned it (less that tail), or ``UNSIZED_RUN_BYTES`` for a run it has
# not sized yet, and ``TAIL_MARGIN`` for the entries (``own#``) that vary between appends.
# Two units, not one: the update then costs what the transaction's run item action would
# (2 × 1 unit), the batch item's put is not doubled, and the next write of the run item
# pays one more unit for its before image, so a tail up to that size is never dearer than
# the transaction and a chain of large batches saves a unit each (§8 "The tail").
TAIL_UNITS = 2
UNSIZED_RUN_BYTES = 540
TAIL_MARGIN = 24
# Steps created without their item that this World remembers, for their owner's outcome
# (each until that outcome: one per run this process continues; an entry holds the step's
# input inline, up to 64 KiB, so the bound is what keeps a leak on a fallback path small).
UNWRITTEN_MEMORY = 256
# Runs whose item size this World remembers, for their next tail's budget (an int each).
RUN_SIZES_MEMORY = 256
# Runs whose steps created in the log this World remembers, for creates written one by one.
LOGGED_RUNS_MEMORY = 32


@dataclass(frozen=True, slots=True)
class BatchAppended:
    """What a landed ``append_after`` answers (``StepEvents.append_after``).

    ``run_item``: the run item after the append when it was one plain write (a tail,
    ``ALL_NEW``); None after a transaction, which returns no image.
    """

    results: list[EventResult]
    run_item: Item | None


@dataclass(frozen=True, slots=True)
class _Unwritten:
    """A step created owned without its item: the item its create would have written, and where."""

    item: Item
    position: int


_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


class _Recent(Generic[_K, _V]):
    """A bounded, thread-safe map that forgets its least recently put entries.

    This World's memory of the steps it created without their item (a miss costs
    nothing but a slower path: an outcome that finds no entry is written as if the
    item existed, is refused, and is written one by one, which materialises the item
    first: ``StepEvents.materialize``), and of its runs' item sizes (a miss: the
    default tail budget).
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._entries: OrderedDict[_K, _V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: _K) -> _V | None:
        with self._lock:
            return self._entries.get(key)

    def put(self, key: _K, value: _V) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self._size:
                self._entries.popitem(last=False)

    def pop(self, key: _K) -> None:
        with self._lock:
            self._entries.pop(key, None)


class StepEvents:
    """Writes the step events of one table."""

    def __init__(self, sequencer: Sequencer, blobs: BlobStore, landings: Landings) -> None:
        self._seq = sequencer
        self._table = sequencer.table
        self._blobs = blobs
        self._headers = PayloadReader(blobs, ResolveData.NONE)
        self._unwritten: _Recent[tuple[str, str], _Unwritten] = _Recent(UNWRITTEN_MEMORY)
        self._run_sizes: _Recent[str, int] = _Recent(RUN_SIZES_MEMORY)
        self._landings = landings
        self._logged_creates = _LoggedCreates(sequencer, LOGGED_RUNS_MEMORY)

    def step_created(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        assert request.correlation_id is not None
        step = rules.apply_step_event(request, run_id, None, now)
        entity_actions = self._create_actions(run_id, request, step)
        # A consumer's create (via_step_dispatch) is mostly a re-ensure of a step that exists.
        via_dispatch = request.data_as(StepCreatedData).via_step_dispatch
        likely_duplicate = keys.step_key(run_id, step.step_id) if via_dispatch else None
        event = self._seq.create_child(
            run_id,
            request,
            now,
            entity_actions,
            entity_fields=_CREATE_FIELDS,
            read_first=likely_duplicate,
            check=partial(self._refuse_existing, run_id, step.step_id),
        )
        return EventResult(event=event, step=step)

    def append_after(
        self,
        run_id: str,
        after: int,
        requests: Sequence[EventRequest],
        at: datetime,
        *,
        flush_later: bool = False,
    ) -> BatchAppended | None:
        """Step writes at ``after + 1`` on, committed with the run item's write that takes their positions.

        The run item's write moves ``seq`` from ``after`` to ``after + n`` on the
        condition ``seq = :after`` and the fence (not terminal): so the batch lands only
        if nothing took a position since the caller's log ended, and it takes its
        positions in the same write that orders it against every reservation (§8's
        argument, with the reservation inside the commit). A batch of one small item
        and no entity action is committed by that write alone, as the run item's
        ``tail``, then put (``_Landings``); any other is one transaction with the batch
        items and, per request, the entity actions ``create`` would commit. A refused
        condition (or a conflict with a concurrent write) writes nothing: None.
        ``flush_later``: a tail's item is put by :meth:`flush`, not before the answer.

        Raises:
            Transient: this batch, or this World's last tail of the run before it, is
                committed but its item could not be put.
        """
        # Never replace a tail whose item is missing (Transient): carry it (a young one this
        # append follows directly) or put it first.
        carried = self._landings.young(run_id)
        # Never carry the run's creation: its event is read by key (``keys.run_input_key``:
        # ``runs.get``/``runs.list`` take the input from ``evt#1`` alone), so it lands on its own.
        if (
            carried is None
            or items.item_span(carried)[1] != after
            or items.item_span(carried)[0] == keys.RUN_CREATED_POSITION
        ):
            carried = None
            self._landings.settle(run_id)
        start, steps, end = rules.split_batch(requests)
        first = after + (1 if start is not None else 0)  # the position before the first step write
        event_items: list[Item] = []
        entity_actions: list[Action] = []
        commits: list[tuple[EventCommit, Step | None]] = []
        # Only owned creates may go without their item: a dispatched step's consumer claims it.
        creates = sum(request.type is EventType.STEP_CREATED for request in steps)
        itemless = creates <= LAZY_CREATES and all(
            r.data.owner is not None for r in steps if isinstance(r.data, StepCreatedData)
        )
        made: dict[str, _Unwritten] = {}  # the owned steps this append creates without their item
        settled: dict[str, _Unwritten] = {}  # such steps whose outcome puts their item now
        for offset, request in enumerate(steps, start=1):
            step_id = request.correlation_id
            assert step_id is not None
            step = (
                rules.apply_step_event(request, run_id, None, at)
                if request.type is EventType.STEP_CREATED
                else None
            )
            unwritten = None if step is not None else self._unwritten.get((run_id, step_id))
            actions_of: EntityActions
            fields: tuple[str, ...]
            if request.type is EventType.PATCH_APPLIED:  # the log alone: its event item, no action
                actions_of, fields = _no_actions, ()
            elif step is not None and itemless:
                actions_of, fields = self._lazy_create_actions(step, made), _CREATE_FIELDS
            elif step is not None:
                actions_of, fields = self._create_actions(run_id, request, step), _CREATE_FIELDS
            elif unwritten is not None:
                actions_of, fields = self._lazy_settle_actions(request, unwritten, at), _SETTLE_FIELDS
                settled[step_id] = unwritten
            else:
                actions_of, fields = self._settle_actions(run_id, request, at), _SETTLE_FIELDS
            commit = EventCommit(self._seq, run_id, request, at, actions_of, entity_fields=fields)
            event_item, actions = commit.parts(first + offset)
            event_items.append(event_item)
            entity_actions += actions
            commits.append((commit, step))
        # The run's start or end (a batch has at most one): its event first or last, its
        # status change in action 0.
        run_commit = None
        run_event = start or end
        run_position = 0
        if run_event is not None:
            run_position = after + 1 if start is not None else after + len(requests)
            run_commit = EventCommit(self._seq, run_id, run_event, at, lambda _position, _writer: [])
            event_item, _ = run_commit.parts(run_position)
            event_items.insert(0 if start is not None else len(event_items), event_item)
        batch = self._carry(run_id, carried, event_items, entity_actions)
        # The batch committed in its reservation (ARCHITECTURE §8 "The tail"): no entity
        # action, one small item.
        tail = batch[0] if not entity_actions and len(batch) == 1 else None
        tail_bytes = 0 if tail is None else _tail_bytes(tail)
        if tail_bytes > self._tail_budget(run_id):
            tail = None
        transition = None
        if run_event is not None and run_commit is not None:
            transition = transition_changes(
                run_event.type,
                run_event.data,
                at,
                run_commit.writer,
                position=":rpos",
                copy_start=tail is None,
            )
            if transition.copy_slot is not None:  # the repair copy names its position
                transition.values[":rpos"] = run_position
        take = self._seq.take_positions_action(
            run_id,
            after,
            len(requests),
            at,
            own=[(step_id, lazy.position) for step_id, lazy in made.items()],
            disown=[(step_id, lazy.position) for step_id, lazy in settled.items()],
            transition=transition,
            tail=tail,
        )
        run_item: Item | None = None
        try:
            if tail is not None:
                run_item = self._table.apply(take)
                self._run_sizes.put(run_id, sizes.item_size(to_item(run_item)) - tail_bytes)
            else:
                self._table.transact([take, *(self._seq.item_put(item) for item in batch), *entity_actions])
        except (Cancelled, ConditionFailed):
            return None
        for step_id, lazy in made.items():
            self._unwritten.put((run_id, step_id), lazy)
        for step_id in settled:
            self._unwritten.pop((run_id, step_id))
        if tail is not None:
            self._landings.land(run_id, tail, later=flush_later)
        results = [EventResult(event=commit.event, step=step) for commit, step in commits]
        if run_commit is not None:  # no run in its result: a transaction returns no image
            results.insert(0 if start is not None else len(results), EventResult(event=run_commit.event))
        return BatchAppended(results, run_item)

    def _carry(
        self, run_id: str, carried: Item | None, event_items: list[Item], entity_actions: list[Action]
    ) -> list[Item]:
        """The batch items of an append: with the unlanded tail it follows (``carried``) if they fit.

        Carried, the tail's events open this batch's one item, which the run item's
        ``tail`` then holds within one write unit (``_carry_budget``): the tail's own put
        is never made. Otherwise that tail is put first (``Landings.settle``: Transient if
        it cannot), and the batch is this append's events alone.
        """
        if carried is not None and not entity_actions:
            joined = items.batch_items([*items.unbatch(carried), *event_items])
            if len(joined) == 1 and _tail_bytes(joined[0]) <= self._carry_budget(run_id):
                return joined
        if carried is not None:
            self._landings.settle(run_id)
        return items.batch_items(event_items)

    def _carry_budget(self, run_id: str) -> int:
        """The bytes a carrying tail may take: the run item stays within one write unit."""
        return self._tail_budget(run_id) - (TAIL_UNITS - 1) * sizes.WRITE_UNIT_BYTES

    def flush(self, run_id: str) -> None:
        """Put the item of this World's unlanded tail of ``run_id``, best effort, or keep it to carry.

        A tail the run's next append can carry (it takes at most half the carry budget,
        so the next batch likely fits beside it) is kept for that append, whose batch
        then holds both (``_carry``); the caller appends next. One that does not land
        stays kept too: the run's next append puts it first.
        """
        kept = self._landings.young(run_id)
        if kept is not None and 2 * _tail_bytes(kept) <= self._carry_budget(run_id):
            return
        try:
            self._landings.settle(run_id)
        except Transient as exc:
            logger.warning("%s", exc)

    def settle(self) -> None:
        """Put this World's tails whose put failed, best effort (``_Landings.settle_all``)."""
        self._landings.settle_all()

    def _tail_budget(self, run_id: str) -> int:
        """The bytes a tail of this run may take (``TAIL_UNITS``, ``UNSIZED_RUN_BYTES``, ``TAIL_MARGIN``)."""
        known = self._run_sizes.get(run_id)
        base = UNSIZED_RUN_BYTES if known is None else known
        return TAIL_UNITS * sizes.WRITE_UNIT_BYTES - TAIL_MARGIN - base

    def transition(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        """step_started / step_retrying / step_completed / step_failed."""
        if request.type is not EventType.STEP_STARTED:
            return self._settle(run_id, request, now)
        return self._start(run_id, request, now)

    def _start(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        """step_started: read, judge, reserve and commit (``write/template.py``)."""
        assert request.correlation_id is not None
        step_id = request.correlation_id
        step_key = keys.step_key(run_id, step_id)

        def judge(run: Run | None, step: Step | None) -> None:
            rules.judge_step_event(request, run, step, now)

        def read() -> Seen[Step] | None:
            run_item, step_item = self._seq.read_run_and(run_id, step_key)
            if step_item is None and self.materialize(run_id, step_id, run_item):
                return None  # its item is written now: judge it as it is
            seen = self._header(run_id, step_item)
            if step_item is None:  # settled by its owner with no item: as the log has it
                seen = self.logged(run_id, step_id, run_item)
            return Seen(run_item, step_item, seen)

        def actions(seen: Seen[Step]) -> EntityActions:
            assert seen.item is not None and seen.entity is not None
            version = int(seen.item["ver"])

            def entity_actions(position: int, writer: PayloadWriter) -> list[Action]:
                update, values, names = _step_update(request, StepStatus.RUNNING, writer, position, now)
                # Timeline: two deliveries of one step race (two redelivered starts, a start
                # and an outcome): only the writer that saw the current version applies.
                condition = "ver = :ver"
                values[":ver"] = version
                named = request.data_as(StepStartedData).step_name
                if named is not None:
                    # The step-name fence in the condition too, so the commit alone encodes
                    # the rule (the read judged it already: a step's name never changes).
                    condition += " AND step_name = :name"
                    values[":name"] = named
                return [
                    self._table.update_action(
                        step_key, update, condition=condition, names=names, values=values, name=plans.ENTITY
                    )
                ]

            return entity_actions

        def committed(appended: Appended, seen: Seen[Step]) -> EventResult:
            assert seen.item is not None
            full = items.step_from_item(run_id, seen.item, PayloadReader(self._blobs))
            return EventResult(event=appended.event, step=rules.apply_step_event(request, run_id, full, now))

        return read_judge_commit(
            self._seq,
            run_id,
            request,
            now,
            EntityWrite(
                key=step_key,
                # A refused commit's image is judged as the step it shows (still acceptable in
                # its new state, a concurrent start say: read again).
                decode=lambda item: self._header(run_id, item),
                judge=judge,
                actions=actions,
                committed=committed,
                gave_up=f"step {step_id} kept changing; retry",
                read=read,
            ),
        )

    def _settle(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        """step_retrying / step_completed / step_failed: reserve + commit, no read (2 round trips)."""
        step_id = request.correlation_id
        assert step_id is not None
        entity_actions = self._settle_actions(run_id, request, now)
        plan = plans.plan(request.type)
        appended = self._seq.append_event(
            run_id,
            request,
            now,
            # Unfenced (its plan): a running step may report its outcome, or its retry, after
            # its run ended (contract §3.1); the retry starts nothing, the next step_started is fenced.
            judge=lambda run: rules.judge_step_event(request, run, None, now),
            entity_actions=entity_actions,
            entity_fields=_SETTLE_FIELDS,
        )
        if appended.refused is None:
            return EventResult(event=appended.event)
        stored = plan.refused_item(appended.refused)
        if stored is None and self.materialize(run_id, step_id, appended.run_item):
            return self._settle(run_id, request, now)  # its item is written now: once more
        old = self._header(run_id, stored)
        if stored is None:  # settled by its owner with no item: as the log has it
            old = self.logged(run_id, step_id, appended.run_item)
        rules.judge_step_event(request, self._seq.run_header(appended.run_item), old, now)
        raise Transient(f"step {step_id}: commit refused for no rule; retry")

    def logged(self, run_id: str, step_id: str, run_item: Item | None) -> Step | None:
        """The step as its events in the log make it, if it has no item nor entry (``logged_steps``)."""
        found = logged_steps(self._seq, self._blobs, run_id, run_item, ResolveData.NONE, only=step_id)
        return found[step_id][0] if step_id in found else None

    def _refuse_existing(self, run_id: str, step_id: str, run_item: Item) -> None:
        """Refuse a create of a step that exists without an item (its entry, or its events in the log).

        A step with an item is refused by the create's put (``attribute_not_exists``).
        """
        logged_from = run_item.get(keys.LOGGED_FROM)
        if keys.own_attribute(step_id) in run_item or (
            logged_from is not None
            and self._logged_creates.holds(run_id, step_id, int(str(logged_from)), run_item)
        ):
            raise Conflict(f"step {step_id} already exists")

    def materialize(self, run_id: str, step_id: str, run_item: Item | None) -> bool:
        """Write the item of a step created owned without one, if ``run_item`` says it is; whether it did.

        The item is built from the step's create event as its create would have written
        it, and put in one transaction with the removal of the run item's entry (only if
        it still names that create): so a step has its entry or its item, never both.
        A cancelled write means another writer did it (or the entry is gone): either
        way the step has its item, or no longer needs one, and the caller reads again.
        """
        found = unwritten_step(self._seq, self._blobs, run_id, step_id, run_item)
        if found is None:
            return False
        step, position = found
        item = items.step_item(step, PayloadWriter(self._blobs, run_id), position=position)
        try:
            self._table.transact(
                [
                    self._table.put_action(item, condition="attribute_not_exists(sk)", name=plans.ENTITY),
                    self._table.update_action(
                        keys.run_key(run_id),
                        "REMOVE #own",
                        condition="#own = :pos",
                        names={"#own": keys.own_attribute(step_id)},
                        values={":pos": position},
                        name=plans.OWN,
                    ),
                ]
            )
        except Cancelled as cancelled:
            if not cancelled.only_conditions():
                raise Transient(f"step {step_id}: its item could not be written; retry") from None
        self._unwritten.pop((run_id, step_id))
        return True

    # ------------------------------------------------------------------------- internals

    def _create_actions(self, run_id: str, request: EventRequest, step: Step) -> EntityActions:
        """The entity actions of a ``step_created`` commit: the step put, and its pending marker."""

        def entity_actions(position: int, writer: PayloadWriter) -> list[Action]:
            actions = [
                # Timeline: the producer's create and the consumer's re-ensure (contract §5.2) race;
                # the first commit creates the step, the other fails here and gets Conflict.
                self._table.put_action(
                    items.step_item(step, writer, position=position),
                    condition="attribute_not_exists(sk)",
                    name=plans.ENTITY,
                ),
            ]
            if rules.counts_as_pending(request):
                # Until the outcome deletes it, the step counts as pending for the last completer.
                actions.append(
                    self._table.put_action(keys.pending_key(run_id, step.step_id), name=plans.PENDING)
                )
            return actions

        return entity_actions

    def _lazy_create_actions(self, step: Step, made: dict[str, _Unwritten]) -> EntityActions:
        """An owned create without its item: the run item's entry (``take_positions_action``) stands in.

        The item its create would have written is kept (``made``, then this World's map)
        for a retry to put whole (an outcome puts none). No action here: a
        ``ConditionCheck`` that the step has no item would cost what the item's put did
        (a public measurement bills it as a transactional write), and the append's own
        condition already makes it needless for a caller that keeps ``append_after``'s
        precondition (its creates name steps the log up to ``after`` does not hold; the
        runtime's replay has read that log).
        A second create of a step created this way is refused by its entry, or once
        settled by its create in the log (``_refuse_existing``).
        """

        def entity_actions(position: int, writer: PayloadWriter) -> list[Action]:
            made[step.step_id] = _Unwritten(items.step_item(step, writer, position=position), position)
            return []

        return entity_actions

    def _lazy_settle_actions(
        self, request: EventRequest, unwritten: _Unwritten, now: datetime
    ) -> EntityActions:
        """The owner's write of a step created without its item (its entry goes with it, action 0).

        An outcome writes no item: the step's two events in the log are its whole record
        (``logged_steps``). A retry puts the whole item, pending: the step leaves its
        owner for a retry message, whose consumer claims it like any dispatched step.
        """
        status = STEP_STATUS_AFTER[request.type]
        if status.terminal:
            return lambda _position, _writer: []

        def entity_actions(position: int, writer: PayloadWriter) -> list[Action]:
            sets, removes = _settled_changes(request, status, writer, position, now)
            item = {k: v for k, v in unwritten.item.items() if k not in removes} | sets
            put = self._table.put_action(item, condition="attribute_not_exists(sk)", name=plans.ENTITY)
            return [put, *self._retry_marker(keys.run_id_of(unwritten.item), request)]

        return entity_actions

    def _settle_actions(self, run_id: str, request: EventRequest, now: datetime) -> EntityActions:
        """The entity actions of a retry or outcome commit: the step update while it is running."""
        step_id = request.correlation_id
        assert step_id is not None
        step_key = keys.step_key(run_id, step_id)
        status = STEP_STATUS_AFTER[request.type]

        def entity_actions(position: int, writer: PayloadWriter) -> list[Action]:
            update, values, names = _step_update(request, status, writer, position, now)
            actions = [
                # Timeline: a redelivery re-claims the step while this delivery reports; or the
                # run ends. The write applies while the step is running, whoever started it last.
                self._table.update_action(
                    step_key,
                    update,
                    condition="#status = :running",
                    names=names,
                    values={**values, ":running": StepStatus.RUNNING.value},
                    name=plans.ENTITY,
                ),
            ]
            if status.terminal and owner_of(request.data) is None:
                # In the same transaction as the outcome: a last-completer check that
                # follows this commit cannot see the step as pending. An owned (inline)
                # step never had a marker.
                actions.append(
                    self._table.delete_action(keys.pending_key(run_id, step_id), name=plans.PENDING)
                )
            return [*actions, *self._retry_marker(run_id, request)]

        return entity_actions

    def _retry_marker(self, run_id: str, request: EventRequest) -> list[Action]:
        """An owned step handed to a retry message gets its ``pend#`` marker in the retry's commit.

        From then on it is a dispatched step: its owner no longer continues the run for it,
        and the message's consumer ends with the last-completer check, which must see it
        pending until its outcome's commit deletes the marker (``rules.counts_as_pending``).
        """
        if not rules.counts_as_pending(request):  # a retry or an outcome: only an owned retry counts
            return []
        assert request.correlation_id is not None
        return [self._table.put_action(keys.pending_key(run_id, request.correlation_id), name=plans.PENDING)]

    def _header(self, run_id: str, item: Item | None) -> Step | None:
        return None if item is None else items.step_from_item(run_id, item, self._headers)


def _tail_bytes(tail: Item) -> int:
    """What the ``tail`` attribute of a run item holding the batch item ``tail`` takes."""
    return sizes.item_size(to_item({TAIL_SLOT: tail_copy(tail)}))


def unwritten_step(
    sequencer: Sequencer,
    blobs: BlobStore,
    run_id: str,
    step_id: str,
    run_item: Item | None,
    resolve_data: ResolveData = ResolveData.ALL,
) -> tuple[Step, int] | None:
    """A step created owned without its item (``run_item`` holds its entry), as its create made it.

    With its create position. An entry means no other event of the step has landed
    (every other write of it materialises the item first, or puts it with the outcome).
    """
    stored = None if run_item is None else run_item.get(keys.own_attribute(step_id))
    if stored is None:
        return None
    position = int(str(stored))
    item = sequencer.covering_item(run_id, position)
    if item is None and run_item is not None:
        item = tail_batch(run_item, position)
    if item is None:
        return None
    for event in items.events_from_item(run_id, item, PayloadReader(blobs, resolve_data), since=position):
        if event.position == position and event.correlation_id == step_id:
            if event.type is not EventType.STEP_CREATED:
                return None
            request = EventRequest(event.type, step_id, event.data)
            return rules.apply_step_event(request, run_id, None, event.created_at), position
    return None


def logged_steps(
    sequencer: Sequencer,
    blobs: BlobStore,
    run_id: str,
    run_item: Item | None,
    resolve_data: ResolveData = ResolveData.ALL,
    *,
    only: str | None = None,
) -> dict[str, tuple[Step, int]]:
    """The steps the log holds from the run item's ``logged_from`` on, each folded from its events.

    With its create position. Meant for the steps that have no item and no entry: an
    owned step appended alone whose owner appended its outcome (``_lazy_settle_actions``);
    a step that has an item is read from it. One consistent Query of the log from
    there (holes are no matter: the creates looked for are appended in the transaction
    that takes their positions). ``only``: just that step. Nothing without ``logged_from``.
    """
    if run_item is None or keys.LOGGED_FROM not in run_item:
        return {}
    start = int(str(run_item[keys.LOGGED_FROM]))
    reader = PayloadReader(blobs, resolve_data)
    found: dict[str, tuple[Step, int]] = {}
    read_to = start - 1  # an item may repeat the events of one before it (a carried tail: ``Landings``)
    for item in sequencer.committed_items(run_id, start, run_item):
        since, read_to = read_to + 1, max(read_to, items.item_span(item)[1])
        for event in items.events_from_item(run_id, item, reader, since=since):
            step_id = event.correlation_id
            if step_id is None or (only is not None and step_id != only):
                continue
            request = EventRequest(event.type, step_id, event.data)
            if event.type is EventType.STEP_CREATED:
                if step_id not in found:
                    found[step_id] = (
                        rules.apply_step_event(request, run_id, None, event.created_at),
                        event.position,
                    )
            elif step_id in found and event.type in STEP_STATUS_AFTER:
                step, position = found[step_id]
                found[step_id] = (rules.apply_step_event(request, run_id, step, event.created_at), position)
    return found


class _LoggedCreates:
    """Per run, the steps created in its log from ``logged_from`` on, as far as this World read it.

    For a create written one by one in a run whose log may hold steps without an item:
    each such create reads only the log past what the last one read (bounded: the
    least recently used runs are forgotten, and read again from ``logged_from``).
    Exact for the steps appended without an item: their creates are appended in the
    transaction that takes their positions, so one a read missed lies past its end.
    """

    def __init__(self, sequencer: Sequencer, size: int) -> None:
        self._seq = sequencer
        self._size = size
        self._runs: OrderedDict[str, tuple[int, set[str]]] = OrderedDict()
        self._lock = threading.Lock()

    def holds(self, run_id: str, step_id: str, start: int, run_item: Item) -> bool:
        """Whether the log of ``run_id`` from ``start`` on holds a ``step_created`` of ``step_id``.

        ``run_item``: the run as the caller read it (its ``tail`` counts: ``committed_items``).
        """
        with self._lock:
            read_to, created = self._runs.get(run_id, (start - 1, set()))
        if step_id in created:
            return True
        created = set(created)
        headers = PayloadReader(self._seq.blobs, ResolveData.NONE)
        # Remembered as read only up to ``run_item``'s last position: a batch committed in the
        # run item after that image (its ``tail``, not landed) is in neither this read nor the
        # image, while an item after it may be; the next look reads from there again.
        vouched = int(run_item["seq"])
        for item in self._seq.committed_items(run_id, read_to + 1, run_item):
            read_to = max(read_to, min(items.item_span(item)[1], vouched))
            for event in items.events_from_item(run_id, item, headers, since=start):
                if event.type is EventType.STEP_CREATED and event.correlation_id is not None:
                    created.add(event.correlation_id)
        with self._lock:
            self._runs[run_id] = (read_to, created)
            self._runs.move_to_end(run_id)
            while len(self._runs) > self._size:
                self._runs.popitem(last=False)
        return step_id in created


def _step_update(
    request: EventRequest, status: StepStatus, writer: PayloadWriter, position: int, now: datetime
) -> tuple[str, dict[str, object], dict[str, str]]:
    """The update expression of an accepted step event (contract §2.2): ``status`` is the step's new one.

    ``#status`` is always among the names (the callers' conditions use it).
    """
    if request.type is EventType.STEP_STARTED:
        # Every start counts an attempt; the first one also sets started_at.
        update = (
            "SET #status = :status, ver = :pos, attempt = attempt + :one, "
            "started_at = if_not_exists(started_at, :now) REMOVE retry_after_us"
        )
        values: dict[str, object] = {
            ":status": status.value,
            ":pos": position,
            ":one": 1,
            ":now": items.iso(now),
        }
        return update, values, {"#status": "status"}
    sets, removes = _settled_changes(request, status, writer, position, now)
    names = {f"#a{i}": name for i, name in enumerate(sets)} | {"#status": "status"}
    values = {f":a{i}": value for i, value in enumerate(sets.values())}
    names |= {f"#r{i}": name for i, name in enumerate(removes)}
    update = "SET " + ", ".join(f"#a{i} = :a{i}" for i in range(len(sets)))
    if removes:
        update += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(removes)))
    return update, values, names


def _settled_changes(
    request: EventRequest, status: StepStatus, writer: PayloadWriter, position: int, now: datetime
) -> tuple[dict[str, object], list[str]]:
    """What an accepted retry or outcome sets on its step item, and what it removes."""
    data = request.data
    sets: dict[str, object] = {"status": status.value, "ver": position}
    removes: list[str] = []
    if isinstance(data, StepRetryingData):
        sets["error"] = writer.encode(data.error, ENTITY_INLINE_LIMIT)
        if data.retry_after is not None:
            sets["retry_after_us"] = items.epoch_us(data.retry_after)
        else:
            removes.append("retry_after_us")
    elif isinstance(data, StepCompletedData):
        sets["completed_at"] = items.iso(now)
        if data.output is not None:
            sets["output"] = writer.encode(data.output, ENTITY_INLINE_LIMIT)
    else:
        sets["completed_at"] = items.iso(now)
        sets["error"] = writer.encode(data_as(data, StepFailedData).error, ENTITY_INLINE_LIMIT)
    return sets, removes
