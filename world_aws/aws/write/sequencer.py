"""The run item as sequencer and fence: reserve a position, commit or seal it (contract §3.1, §3.2, §7.2).

Every event but ``run_created`` takes its position from the run item's ``seq``
with one conditional ``UpdateItem`` (the *reservation*). That single-item write
is the linearization point of the event: DynamoDB applies writes to one item
one at a time, so positions are handed out densely and in order, and a
condition on the run's status evaluated there is evaluated at exactly the
moment the position is taken.

The event item and the entity change then commit at the reserved position in
one ``TransactWriteItems`` (the *commit*) that never touches the run item, so a
256-branch fan-out does not collide in transactions on the hot run item. Action
0 of every commit is the event ``Put`` (named ``plans.EVENT``) conditioned on ``attribute_not_exists(sk)``:
if a reader has sealed the position meanwhile (the writer looked dead), the
whole transaction is cancelled, nothing of it is applied, and the writer
reserves again.

A position whose commit was refused by an entity condition is *sealed* with a
``noop`` event, so the log stays dense. A position whose writer died is sealed
by a reader after a grace period (:mod:`world_aws.aws.read.log_reader`), with the
real run event when the reservation itself was a run transition (the run item
keeps a copy of its last ``run_started`` and terminal event for that).

A single writer's batch may also be committed by the run item's write alone, kept
there as its ``tail`` until the batch item lands (ARCHITECTURE §8 "The tail"): a hole
it covers is put from it, whole (``tail_batch``, ``land``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import Action, Cancelled, ConditionFailed, Item, Table
from world_aws.aws.codec.payloads import PayloadReader, PayloadWriter
from world_aws.aws.errors import cancellation_error
from world_aws.aws.write import plans
from world_aws.contract import rules
from world_aws.contract.records import Event, EventRequest, EventType, ResolveData, Run
from world_aws.contract.world import BlobStore
from world_aws.errors import Throttled, Transient, WorldAwsError

# A reader seals a position only after its grace period, so a writer loses its
# position to a seal rarely; a few fresh reservations are plenty.
MAX_RESERVATIONS = 5
# TransactionConflict: another transaction or write on one of our items was in flight.
MAX_CONFLICT_RETRIES = 4
TERMINAL_STATUSES = {":completed": "completed", ":failed": "failed", ":cancelled": "cancelled"}
# The fence's condition on the run item (with ``#status`` = "status" and ``TERMINAL_STATUSES``).
NOT_TERMINAL = "NOT #status IN (:completed, :failed, :cancelled)"

# Attributes of the run item that keep a copy of the run events, so a reader can
# repair a position whose run-transition writer died before putting the event:
# ``<slot>`` = {type, created_at, data}, ``<slot>_pos`` = its position (set in the
# reserving write as ``seq + 1``: an update's operands see the item before it).
STARTED_SLOT = "rev_started"
FINAL_SLOT = "rev_final"
# The run item's copy of the last batch its single writer committed there (``tail_item``).
TAIL_SLOT = "tail"
# Tries of the put of an event already committed (a run transition's, a tail batch: ``land``).
LAND_ATTEMPTS = 3

Judge = Callable[[Run | None], None]


EntityActions = Callable[[int, PayloadWriter], Sequence[Action]]


class PositionTaken(Exception):
    """The reserved position already holds an item (a reader sealed it): reserve again."""


class EventCommit:
    """The commit of one requested event at whatever position it is given.

    Calling it with a position builds the actions: action 0 the event put, then
    the entity's actions from ``entity_actions(position, writer)``. Payloads are
    put in S3 once, up front (``PayloadWriter.prepare``), before any position is
    reserved. ``event`` is the event as last built.
    """

    def __init__(
        self,
        sequencer: Sequencer,
        run_id: str,
        request: EventRequest,
        now: datetime,
        entity_actions: EntityActions,
        *,
        entity_fields: Iterable[str] = (),
    ) -> None:
        self._seq = sequencer
        self._run_id = run_id
        self._request = request
        self._now = now
        self._entity_actions = entity_actions
        self.writer = PayloadWriter(sequencer.blobs, run_id)
        self.writer.prepare(request.data, entity_fields=entity_fields)
        self._event: Event | None = None

    @property
    def event(self) -> Event:
        assert self._event is not None, "the commit was never built"
        return self._event

    def __call__(self, position: int, _run_item: Item) -> list[Action]:
        event_item, entity_actions = self.parts(position)
        return [self._seq.item_put(event_item), *entity_actions]

    def parts(self, position: int) -> tuple[Item, Sequence[Action]]:
        """The event's item at ``position`` and its entity's actions (``append_after`` groups the items)."""
        request = self._request
        self._event = Event(
            self._run_id, position, request.type, request.correlation_id, self._now, request.data
        )
        return items.event_item(self._event, self.writer), self._entity_actions(position, self.writer)


@dataclass(frozen=True, slots=True)
class Appended:
    """What ``Sequencer.append_event`` did: ``refused`` is None when the event committed.

    When an entity condition refused the commit, its position has been sealed
    with a ``noop``; ``refused`` holds the cancellation (with the ``ALL_OLD``
    images) and ``run_item`` the run as of that position, for the caller to judge.
    """

    event: Event
    run_item: Item
    refused: Cancelled | None


@dataclass
class RunChanges:
    """A run transition's part of a run item update, less the position it takes.

    ``position`` (given to ``run_events.transition_changes``) is the expression of the
    event's position, kept with the repair copy: ``seq + :one`` in the reserving
    write, a value in an ``append_after`` transaction (``take_positions_action``).
    """

    sets: list[str]
    removes: list[str]
    names: dict[str, str]
    values: dict[str, object]
    condition: str
    # The repair copy this transition writes (``STARTED_SLOT`` / ``FINAL_SLOT``), whose
    # ``_pos`` is the ``position`` expression; None when it writes none (a tail's start).
    copy_slot: str | None

    def update_expression(self) -> str:
        return "SET " + ", ".join(self.sets) + (" REMOVE " + ", ".join(self.removes) if self.removes else "")


class Sequencer:
    """Reservations, commits and seals on one table."""

    def __init__(
        self, table: Table, blobs: BlobStore, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.table = table
        self.blobs = blobs
        self._headers = PayloadReader(blobs, ResolveData.NONE)
        self._sleep = sleep

    def run_header(self, item: Item | None) -> Run | None:
        """The run of a run item without its payloads (never touches S3): enough for the rules."""
        return None if item is None else items.run_from_item(item, self._headers)

    def read_run_and(self, run_id: str, entity_key: keys.Key) -> tuple[Item | None, Item | None]:
        """The run item and one of its children, in one consistent ``BatchGetItem``."""
        found = {
            str(item[keys.SK]): item for item in self.table.batch_get([keys.run_key(run_id), entity_key])
        }
        return found.get(keys.RUN_SK), found.get(str(entity_key[keys.SK]))

    def item_put(self, event_item: Item) -> Action:
        """The ``Put`` of an event item at its reserved position; it fails if a reader sealed it."""
        return self.table.put_action(event_item, condition="attribute_not_exists(sk)", name=plans.EVENT)

    # ----------------------------------------------------------------------- reserve

    def reserve(
        self,
        run_id: str,
        now: datetime,
        *,
        fenced: bool,
        judge: Judge,
        mark: str | None = None,
        due: datetime | None = None,
    ) -> tuple[int, Item]:
        """Take the next position of the run, and note ``now`` as its last progress (``prog_us``).

        Args:
            run_id: the run.
            now: the writer's time, kept as the run's last sign of life (the reconciler's
                measure of progress: no other write, and no index write, per event).
            fenced: also require the run not to be terminal (contract §3.1). Evaluated
                in the same single-item write that takes the position, so a
                fenced event reserved after a terminal transition is refused, and
                one reserved before it sits at a lower position.
            judge: called with the run as it was when the reservation is refused;
                it must raise the rejection (``rules.judge_*``).
            mark: a run item attribute set to ``true`` in the same write (``keys.HOOKED``):
                a fact about the run that every later write of the item, the run's end
                included, then sees in its image.
            due: a wait's ``resume_at``, kept as the run's ``due_us`` in the same write
                (``LiveRun.due_at``: the reconciler looks at a silent run soon after it).

        Returns:
            The position and the run item as of that position (``ALL_NEW``).
        """
        # seq, not pk: an erased run's tombstone has no seq, so nothing takes a position in it.
        condition = "attribute_exists(seq)"
        values: dict[str, object] = {":one": 1, ":at": items.epoch_us(now)}
        names: dict[str, str] = {}
        if fenced:
            # The fence. Timeline it protects: run_completed reserves p (status ->
            # completed in that same write); a step_started reserving p+1 evaluates
            # this against the completed status and is refused (RunExpired). One
            # reserving p-1 saw "running" and is ordered before the completion.
            condition += f" AND {NOT_TERMINAL}"
            values.update(TERMINAL_STATUSES)
            names["#status"] = "status"
        update = f"SET seq = seq + :one, {items.PROGRESS_US} = :at"
        if mark is not None:
            update += ", #mark = :true"
            names["#mark"] = mark
            values[":true"] = True
        if due is not None:
            # The old value is kept beside it (0: none) for a refused create to put back
            # (``WaitEvents.wait_created``): SET reads the item as it was before this write.
            update += f", {items.DUE_PREV_US} = if_not_exists({items.DUE_US}, :nodue), {items.DUE_US} = :due"
            values[":due"] = items.epoch_us(due)
            values[":nodue"] = 0
        try:
            run_item = self.table.update(
                keys.run_key(run_id),
                update,
                condition=condition,
                names=names,
                values=values,
            )
        except ConditionFailed as refused:
            judge(self.run_header(refused.item))
            raise Transient("the run changed while reserving a position; retry") from None
        self.pull_back_mark(run_id, run_item, now)
        return int(run_item["seq"]), run_item

    def pull_back_mark(self, run_id: str, run_item: Item, now: datetime) -> None:
        """Bring the run's reconcile mark back to ``now`` if it is later (the live index, ``live_index``).

        The reconciler moves a silent run's mark to when its next wake is due, up to a day
        ahead. A run that progresses before then and goes silent again must be looked at
        ``after_seconds`` after that progress, as any run is, not when the old silence's next
        wake would have been. ``run_item`` is the reservation's image, so a run whose mark is
        not ahead (every run but one just woken by the reconciler) pays nothing; one whose
        mark is ahead pays one conditional ``UpdateItem`` (and its index entry), once. Best
        effort: the event is not refused for it, and without it the run is looked at late.
        """
        seen = run_item.get(keys.LIVE_SK)
        due = keys.live_sk(items.iso(now), run_id)
        if seen is None or str(seen) <= due:
            return
        try:
            # Timeline: the run's end removes live_sk, and the reconciler may move the mark
            # meanwhile: either makes this condition fail, and that write stands.
            self.table.update(
                keys.run_key(run_id),
                f"SET {keys.LIVE_SK} = :due",
                condition=f"{keys.LIVE_SK} = :seen",
                values={":due": due, ":seen": seen},
                return_values="NONE",
            )
        except (ConditionFailed, Throttled, Transient):
            pass

    def take_positions_action(
        self,
        run_id: str,
        after: int,
        count: int,
        now: datetime,
        *,
        own: Sequence[tuple[str, int]] = (),
        disown: Sequence[tuple[str, int]] = (),
        transition: RunChanges | None = None,
        tail: Item | None = None,
    ) -> Action:
        """The run item's part of an ``append_after`` transaction: positions ``after + 1..after + count``.

        Conditioned on ``seq = :after`` (nothing took a position since the caller's
        log ended) and the fence: inside the commit, this is the reservation. ``own``:
        (step id, create position) entries to add, each only if absent; ``disown``:
        entries to remove, each only if it still names that create (``keys.own_attribute``).
        ``transition``: the run's start or end, whose event opens or closes the batch (its
        status change is then in this write, which is what keeps the fence exact: §8).
        ``tail``: the batch's one event item, committed here as the run item's ``tail``
        copy (``StepEvents.append_after``); without it, an older tail is removed (its item
        has landed: the caller's log reached it), so it does not weigh on later writes.
        """
        sets = [f"seq = :last, {items.PROGRESS_US} = :at"]
        removes: list[str] = []
        if transition is None or transition.copy_slot != STARTED_SLOT:
            # ``seq = :after`` says the writer's log reached ``after``, so a run_started
            # before it has landed: its repair copy is no longer needed, nor carried.
            removes += [STARTED_SLOT, f"{STARTED_SLOT}_pos"]
        if tail is None:
            removes.append(TAIL_SLOT)
        else:
            sets.append(f"{TAIL_SLOT} = :tail")
        conditions = [f"seq = :after AND {NOT_TERMINAL}"]
        names = {"#status": "status"}
        values: dict[str, object] = {
            ":after": after,
            ":last": after + count,
            ":at": items.epoch_us(now),
            **TERMINAL_STATUSES,
        }
        if tail is not None:
            values[":tail"] = tail_copy(tail)
        if own:
            # Kept for good: from here on, the log may hold steps with no item (§8).
            sets.append(f"{keys.LOGGED_FROM} = if_not_exists({keys.LOGGED_FROM}, :logged)")
            values[":logged"] = min(position for _, position in own)
        for index, (step_id, position) in enumerate(own):
            names[f"#own{index}"] = keys.own_attribute(step_id)
            values[f":own{index}"] = position
            sets.append(f"#own{index} = :own{index}")
            conditions.append(f"attribute_not_exists(#own{index})")
        for index, (step_id, position) in enumerate(disown):
            names[f"#dis{index}"] = keys.own_attribute(step_id)
            values[f":dis{index}"] = position
            removes.append(f"#dis{index}")
            conditions.append(f"#dis{index} = :dis{index}")
        if transition is not None:
            sets += transition.sets
            removes += transition.removes
            conditions.append(transition.condition)
            names.update(transition.names)
            values.update(transition.values)
        update = "SET " + ", ".join(sets) + (" REMOVE " + ", ".join(removes) if removes else "")
        return self.table.update_action(
            keys.run_key(run_id),
            update,
            condition=" AND ".join(conditions),
            names=names,
            values=values,
            name=plans.RUN,
        )

    def event_items(self, run_id: str, first: int) -> Iterator[Item]:
        """The run's event items from position ``first`` on, in order (one consistent Query, paged).

        A batch item is keyed by its last position, so one that holds ``first`` is among them.
        """
        if first > keys.MAX_POSITION:
            return iter(())
        return self.table.query_all(
            "pk = :pk AND sk BETWEEN :from AND :to",
            {
                ":pk": keys.run_pk(run_id),
                ":from": keys.event_sk(first),
                ":to": keys.event_sk(keys.MAX_POSITION),
            },
        )

    def committed_items(self, run_id: str, first: int, run_item: Item | None) -> Iterator[Item]:
        """``event_items``, with the run item's ``tail`` batch in its place if its item has not landed.

        For readers that only look (the steps a log holds): the tail's events are
        committed, so they count; ``LogReader.list`` is what puts it.
        """
        tail = None if run_item is None else tail_item(run_item)
        pending = tail is not None and items.item_span(tail)[1] >= first
        for item in self.event_items(run_id, first):
            if pending and tail is not None and items.item_span(item)[1] >= items.item_span(tail)[1]:
                pending = False
                if item.get(keys.SK) != tail[keys.SK]:
                    yield tail
            yield item
        if pending and tail is not None:
            yield tail

    def covering_item(self, run_id: str, position: int) -> Item | None:
        """The event item holding ``position``: its own, or the batch item keyed by a later one."""
        page = self.table.query_page(
            "pk = :pk AND sk BETWEEN :from AND :to",
            {
                ":pk": keys.run_pk(run_id),
                ":from": keys.event_sk(position),
                ":to": keys.event_sk(keys.MAX_POSITION),
            },
            limit=1,
        )
        for item in page.items:
            if items.item_span(item)[0] <= position:
                return item
        return None

    # ----------------------------------------------------------------------- commit

    def commit(
        self, run_id: str, position: int, actions: Sequence[Action], now: datetime
    ) -> Cancelled | None:
        """Commit ``actions`` (action 0: the event put at ``position``) in one transaction.

        Returns:
            ``None`` when committed; the cancellation when an entity condition
            failed (the position is then still open: the caller seals it or puts
            another event there).

        Raises:
            PositionTaken: the position was sealed by a reader; nothing was applied.
            Throttled, Transient, BadInput: the commit failed otherwise; the position
                was sealed (best effort) so readers need not wait for it.
        """
        for attempt in range(MAX_CONFLICT_RETRIES + 1):
            try:
                self.table.transact(actions)
                return None
            except Cancelled as cancelled:
                if cancelled.refused_by(plans.EVENT):
                    raise PositionTaken from None
                if cancelled.only_conditions():
                    return cancelled
                codes = [r.code for r in cancelled.reasons]
                if attempt < MAX_CONFLICT_RETRIES and set(codes) <= {"None", "TransactionConflict"}:
                    self._sleep(0.005 * 2**attempt)
                    continue
                self.seal_noop(run_id, position, now)
                raise cancellation_error(codes, operation="events.create commit") from None
            except WorldAwsError:
                # Throttled, or the outcome is unknown (a timeout): seal the position if it
                # is still open. If our transaction did commit, the seal fails harmlessly
                # and a retry of the request is answered by the entity rules (Conflict).
                self.seal_noop(run_id, position, now)
                raise
        raise AssertionError("unreachable")  # pragma: no cover

    def append(
        self,
        run_id: str,
        now: datetime,
        *,
        fenced: bool,
        judge: Judge,
        build: Callable[[int, Item], Sequence[Action]],
        check: Callable[[Item], None] | None = None,
        due: datetime | None = None,
    ) -> tuple[int, Item, Cancelled | None]:
        """Reserve a position and commit ``build(position, run_item)`` at it, re-reserving if it was sealed.

        ``check``, given the run item as of the reservation, raises the rejection the
        run item alone decides (a step created owned without its item: ``step_events``);
        the position is sealed first. ``due``: as in :meth:`reserve`.

        Returns:
            The position, the run item as of it, and the cancellation if an entity
            condition refused the commit (the position is still open then).
        """
        for _ in range(MAX_RESERVATIONS):
            position, run_item = self.reserve(run_id, now, fenced=fenced, judge=judge, due=due)
            if check is not None:
                try:
                    check(run_item)
                except WorldAwsError:
                    self.seal_noop(run_id, position, now)
                    raise
            try:
                cancelled = self.commit(run_id, position, build(position, run_item), now)
            except PositionTaken:
                continue
            return position, run_item, cancelled
        raise Transient(f"run {run_id}: reserved positions kept being sealed; retry", retry_after=0.5)

    def append_event(
        self,
        run_id: str,
        request: EventRequest,
        now: datetime,
        *,
        judge: Judge,
        entity_actions: EntityActions,
        entity_fields: Iterable[str] = (),
        check: Callable[[Item], None] | None = None,
        due: datetime | None = None,
    ) -> Appended:
        """Append ``request`` as an event with its entity's change, in one commit at a fresh position.

        The shape of every event writer but ``run_created`` and ``hook_created``:
        payloads prepared, then reserve (fenced as the type's plan says, ``plans.EventPlan.fenced``;
        ``judge`` names a refusal; ``check``
        as in :meth:`append`) and commit ``[event put, *entity_actions(position, writer)]``,
        re-reserving if a reader sealed the position. A commit refused by an entity
        condition has its position sealed here; the caller judges ``Appended.refused``.
        """
        commit = EventCommit(self, run_id, request, now, entity_actions, entity_fields=entity_fields)
        position, run_item, cancelled = self.append(
            run_id,
            now,
            fenced=plans.plan(request.type).fenced,
            judge=judge,
            build=commit,
            check=check,
            due=due,
        )
        if cancelled is not None:
            self.seal_noop(run_id, position, now)
        return Appended(commit.event, run_item, cancelled)

    def create_child(
        self,
        run_id: str,
        request: EventRequest,
        now: datetime,
        entity_actions: EntityActions,
        *,
        entity_fields: Iterable[str] = (),
        read_first: keys.Key | None = None,
        check: Callable[[Item], None] | None = None,
        due: datetime | None = None,
    ) -> Event:
        """``step_created`` / ``wait_created``: reserve (fenced), commit with the entity's put: 2 round trips.

        No read first: a missing or terminal run refuses the reservation, and a
        duplicate (rare: a resilient re-ensure racing its producer, contract §5.2) fails
        its entity put's ``attribute_not_exists(sk)`` (its plan's refusal, ``plans.ENTITY``): its
        position is sealed with a ``noop`` and the ``ALL_OLD`` image names the Conflict.
        A read before reserving would cost every create a round trip to save the
        rare duplicate two.

        ``read_first`` (the entity's key) is for a create that is likely a duplicate
        (a step consumer's re-ensure, contract §5.2): one consistent read of run and entity
        refuses it without taking a position, so the log shows no sealed gap.
        ``due``: a wait's ``resume_at``, noted on the run item by the reservation (:meth:`reserve`).
        """
        if read_first is not None:
            run_item, existing = self.read_run_and(run_id, read_first)
            rules.judge_child_create(request, self.run_header(run_item), existing)
            if check is not None and run_item is not None:
                check(run_item)
        appended = self.append_event(
            run_id,
            request,
            now,
            judge=lambda run: rules.judge_child_create(request, run, None),
            entity_actions=entity_actions,
            entity_fields=entity_fields,
            check=check,
            due=due,
        )
        if appended.refused is None:
            return appended.event
        rules.judge_child_create(
            request,
            self.run_header(appended.run_item),
            plans.plan(request.type).refused_item(appended.refused),
        )
        raise Transient(f"{request.type.value} {request.correlation_id}: commit refused for no rule; retry")

    # ----------------------------------------------------------------------- seals

    def seal_noop(self, run_id: str, position: int, now: datetime) -> None:
        """Fill an open position with a ``noop`` (best effort: a reader repairs it otherwise)."""
        try:
            self.table.put(items.noop_item(run_id, position, now), condition="attribute_not_exists(sk)")
        except (ConditionFailed, WorldAwsError):
            pass

    def seal_hole(self, run_id: str, position: int, now: datetime) -> Item:
        """Fill a position whose writer looks dead; returns whatever the position holds afterwards.

        If the run item's ``tail`` copy holds a batch that covers it, that batch item is
        put (keyed by its last position, so the whole batch lands and no seal splits it);
        if the reservation of ``position`` was a run transition (the run item says so),
        the real run event is rebuilt from the run item; otherwise, unless a batch item
        that landed since the caller's look covers it, a ``noop``.
        """
        run_item = self.table.get(keys.run_key(run_id))
        item = None
        if run_item is not None:
            item = tail_batch(run_item, position) or rebuild_run_event(run_item, position)
        if item is None:
            # A batch that was the tail when the caller last looked may have landed and left
            # the tail since: a noop at ``position`` (its key is not the batch's) would hide its
            # event. A batch leaves the tail only once landed (or carried by the next tail), so
            # a Query after this read of the run item finds it.
            covering = self.covering_item(run_id, position)
            if covering is not None:
                return covering
            item = items.noop_item(run_id, position, now)
        return self.land(item)

    def land_committed(self, item: Item, what: str) -> None:
        """``land`` an item already committed, ``LAND_ATTEMPTS`` tries; else Transient naming ``what``.

        The commit stands either way: a reader of the log (or of the run) puts it.
        """
        try:
            self.land(item, attempts=LAND_ATTEMPTS)
        except WorldAwsError:
            raise Transient(
                f"{what} is committed but its item did not land yet; a reader puts it", retry_after=0.1
            ) from None

    def land(self, item: Item, *, attempts: int = 1) -> Item:
        """Put an event item if its key is free; the item its key holds afterwards.

        For an event already committed (a run transition's, a tail batch) or a repair:
        a repair put is identical to what its writer puts (a tail, a run event's copy),
        or a ``noop`` that the writer's commit then finds in its way. ``attempts``: tries
        of a put that failed otherwise (a throttle, a timeout) before that error is raised.
        """
        for attempt in range(attempts):
            try:
                self.table.put(item, condition="attribute_not_exists(sk)")
                return item
            except ConditionFailed as taken:
                # Its writer (or a reader's repair) put it meanwhile: that one stands.
                assert taken.item is not None
                return taken.item
            except WorldAwsError:
                if attempt == attempts - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover


def tail_item(run_item: Item) -> Item | None:
    """The event item kept in the run item's ``tail`` copy (with its ``pk``), if it has one.

    The last batch ``StepEvents.append_after`` committed in the run item itself, kept
    until a later append replaces or removes it: by then its own put has landed
    (ARCHITECTURE §8 "The tail").
    """
    tail: dict[str, Any] | None = run_item.get(TAIL_SLOT)
    if not tail:
        return None
    return {keys.PK: run_item[keys.PK], **tail}


def tail_copy(batch_item: Item) -> Item:
    """The run item's ``tail`` value that commits ``batch_item``: the item less its ``pk``."""
    return {k: v for k, v in batch_item.items() if k != keys.PK}


def tail_batch(run_item: Item, position: int) -> Item | None:
    """The run item's ``tail`` event item (``tail_item``), if it covers ``position``."""
    item = tail_item(run_item)
    return item if item is not None and covers(item, position) else None


def covers(item: Item, position: int) -> bool:
    """Whether the event item (keyed by its last position) holds ``position``."""
    first, last = items.item_span(item)
    return first <= position <= last and item.get(keys.SK) == keys.event_sk(last)


def run_event_slot(etype: EventType) -> str:
    return STARTED_SLOT if etype is EventType.RUN_STARTED else FINAL_SLOT


def rebuild_run_event(run_item: Item, position: int) -> Item | None:
    """The event item of the run transition reserved at ``position``, from the run item's copy.

    Payloads are copied as stored (inline bytes or S3 reference): no S3 call.
    """
    for slot in (STARTED_SLOT, FINAL_SLOT):
        copy: dict[str, Any] | None = run_item.get(slot)
        if copy is None or run_item.get(f"{slot}_pos") != position:
            continue
        data: dict[str, Any] = dict(copy.get("data") or {})
        etype = EventType(copy["type"])
        # run_completed's output and run_failed's error are the run's own fields: not copied twice.
        if etype is EventType.RUN_COMPLETED and run_item.get("output") is not None:
            data["output"] = run_item["output"]
        if etype is EventType.RUN_FAILED and run_item.get("error") is not None:
            data["error"] = run_item["error"]
        return {
            **keys.event_key(keys.run_id_of(run_item), position),
            "pos": position,
            "type": etype.value,
            "created_at": copy["created_at"],
            "data": data,
        }
    return None
