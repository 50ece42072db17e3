"""Run-level events on DynamoDB: run_created, run_started, run_completed, run_failed, run_cancelled.

* ``run_created``: the run item's put (``seq = 1``, condition
  ``attribute_not_exists(pk)``) holding event 1 as its ``tail``, then event 1's
  put: 2 plain writes (ARCHITECTURE §8 "The tail"). When the two do not fit one
  write unit (a large input inline), one ``TransactWriteItems`` puts both. The
  run's input is kept in event 1 only (``keys.run_input_key``): the run item,
  which every later event rewrites, stays small whatever the input (the first
  append replaces its tail).
* A transition changes the run item **in the reserving write**: one conditional
  ``UpdateItem`` that checks the allowed current status, sets the new status and
  fields, takes the next position (``seq + 1``), keeps a copy of the event
  (``rev_started`` / ``rev_final``) for repair and, when terminal, removes the
  run from the sparse live index (``live_pk``/``live_sk``, the reconciler's);
  then the event item is put at that position. 2 round trips (+ hook release after a
  terminal transition, when the run item is marked ``hooked``: the run made a hook).
  Because the status change and the position are one single-item write, it is
  the linearization point of the fence: a fenced event (step_started, creates,
  ...) reserved after it sees the terminal status and is refused; one reserved
  before it holds a lower position.
  If the writer dies between the two writes, a reader rebuilds the event from
  the copy (``Sequencer.seal_hole``); if the reader got there first, the
  writer's conditional put fails and the rebuilt (identical) event stands.
* ``run_started`` on a running run is refused by the status condition; the
  ``ALL_OLD`` image shows "running", so it is the accepted no-op (no position).
* The run a transition returns is its run item's ``ALL_NEW`` (or, refused,
  ``ALL_OLD``) image: without its input (``None``, as the contract allows), which
  only ``runs.get`` reads; the runtime reads it when it starts a replay.
* ``run_started`` with creation data on a missing run: one transaction creates
  the run already running (``seq = 2``) with ``run_created`` (1) and
  ``run_started`` (2). If the run appeared meanwhile, the normal path runs.
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws.codec import items, keys, sizes
from world_aws.aws.codec.dynamo import Cancelled, ConditionFailed, Item, to_item
from world_aws.aws.codec.payloads import ENTITY_INLINE_LIMIT, PayloadReader, PayloadWriter
from world_aws.aws.errors import cancellation_error
from world_aws.aws.write import plans
from world_aws.aws.write.sequencer import (
    FINAL_SLOT,
    LAND_ATTEMPTS,
    MAX_RESERVATIONS,
    TAIL_SLOT,
    RunChanges,
    Sequencer,
    rebuild_run_event,
    run_event_slot,
    tail_batch,
    tail_copy,
)
from world_aws.contract import rules
from world_aws.contract.records import (
    RUN_TRANSITIONS,
    Event,
    EventData,
    EventRequest,
    EventResult,
    EventType,
    Run,
    RunCompletedData,
    RunFailedData,
    creation_of,
)
from world_aws.contract.world import BlobStore
from world_aws.errors import Conflict, Transient, WorldAwsError


class RunEvents:
    """Writes the run-level events of one table."""

    def __init__(self, sequencer: Sequencer, blobs: BlobStore) -> None:
        self._seq = sequencer
        self._table = sequencer.table
        self._blobs = blobs

    def run_created(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        run = rules.new_run(run_id, request, now)
        writer = PayloadWriter(self._blobs, run_id)
        event = Event(run_id, 1, EventType.RUN_CREATED, None, now, rules.created_data(request))
        event_item = items.event_item(event, writer)
        run_item = items.run_item(run, seq=1)
        with_tail = {**run_item, TAIL_SLOT: tail_copy(event_item)}
        if sizes.item_size(to_item(with_tail)) <= sizes.WRITE_UNIT_BYTES:
            self._create_as_tail(request, with_tail, event_item)
            return EventResult(event=event, run=run)
        try:
            self._table.transact(
                [
                    # Timeline: two creators of the same run id race; exactly one run item wins.
                    self._table.put_action(run_item, condition="attribute_not_exists(pk)", name=plans.RUN),
                    self._seq.item_put(event_item),
                ]
            )
        except Cancelled as cancelled:
            if cancelled.refused_by(plans.RUN):
                rules.judge_run_event(request, self._seq.run_header(cancelled.item_of(plans.RUN)))
            raise cancellation_error([r.code for r in cancelled.reasons], operation="run_created") from None
        return EventResult(event=event, run=run)

    def _create_as_tail(self, request: EventRequest, run_item: Item, event_item: Item) -> None:
        """``run_created`` as a tail (§8 "The tail"): the run item's put holds event 1, then its put.

        The put of the run item is the commit point. If event 1's put keeps failing,
        Transient: the run exists and its first message creates nothing (``run_started``
        finds it); ``runs.get`` reads the input from the tail and the continuation's
        ``events.list`` puts it.
        """
        try:
            # Timeline: two creators of the same run id race; exactly one run item wins.
            self._table.put(run_item, condition="attribute_not_exists(pk)")
        except ConditionFailed as refused:
            rules.judge_run_event(request, self._seq.run_header(refused.item))
            raise Conflict(f"run {keys.run_id_of(run_item)} already exists") from None
        self._seq.land_committed(event_item, f"run {keys.run_id_of(run_item)}: its run_created event")

    def transition(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        """run_started / run_completed / run_failed / run_cancelled (and the creating run_started)."""
        etype = request.type
        logged = rules.logged_data(request)
        for _ in range(MAX_RESERVATIONS):
            writer = PayloadWriter(self._blobs, run_id)
            try:
                run_item = self._reserve_transition(run_id, etype, logged, now, writer)
            except ConditionFailed as refused:
                if refused.item is None and creation_of(request.data) is not None:
                    created = self._create_started(run_id, request, logged, now)
                    if created is not None:
                        return created
                    continue  # the run appeared meanwhile: take the normal path
                header = self._seq.run_header(refused.item)
                if refused.item is not None and header is not None and header.status.terminal:
                    # Whoever ended the run may have died (or lost its answer) between
                    # the reservation and the event put: finish its work first.
                    self._finish_terminal(run_id, refused.item, now)
                if rules.judge_run_event(request, header):
                    continue  # the run moved on between our write and its refusal: try again
                assert refused.item is not None
                return EventResult(event=None, run=self._full_run(refused.item))
            event = Event(run_id, int(run_item["seq"]), etype, None, now, logged)
            stored = self._put_event(event, writer)
            run = self._full_run(run_item)
            if run.status.terminal:
                self.release_hooks(run_id, now, run_item)
            return EventResult(event=stored, run=run)
        raise Transient(f"run {run_id} kept changing during {etype.value}; retry", retry_after=0.5)

    # ------------------------------------------------------------------------- internals

    def _reserve_transition(
        self, run_id: str, etype: EventType, data: EventData, now: datetime, writer: PayloadWriter
    ) -> Item:
        changes = transition_changes(etype, data, now, writer, position="seq + :one")
        changes.sets[:0] = ["seq = seq + :one", f"{items.PROGRESS_US} = :at"]
        changes.values.update({":one": 1, ":at": items.epoch_us(now)})
        # Timeline: two transitions race (run_completed vs run_cancelled, or a redelivered
        # run_started): the first write changes the status, the second fails this condition.
        run_item = self._table.update(
            keys.run_key(run_id),
            changes.update_expression(),
            condition=changes.condition,
            names=changes.names,
            values=changes.values,
        )
        self._seq.pull_back_mark(run_id, run_item, now)  # an end removed it: nothing to do
        return run_item

    def _create_started(
        self, run_id: str, request: EventRequest, logged: EventData, now: datetime
    ) -> EventResult | None:
        """Create a missing run already running (resilient start, contract §6.1); None if it exists."""
        run = rules.apply_run_event(request, rules.new_run(run_id, request, now), now)
        writer = PayloadWriter(self._blobs, run_id)
        created = Event(run_id, 1, EventType.RUN_CREATED, None, now, rules.created_data(request))
        started = Event(run_id, 2, EventType.RUN_STARTED, None, now, logged)
        run_item = items.run_item(run, seq=2)
        run_item[run_event_slot(EventType.RUN_STARTED)] = {
            "type": EventType.RUN_STARTED.value,
            "created_at": items.iso(now),
            "data": items.encode_data(logged, writer, limit=ENTITY_INLINE_LIMIT),
        }
        run_item[f"{run_event_slot(EventType.RUN_STARTED)}_pos"] = 2
        try:
            self._table.transact(
                [
                    self._table.put_action(run_item, condition="attribute_not_exists(pk)", name=plans.RUN),
                    self._seq.item_put(items.event_item(created, writer)),
                    self._table.put_action(
                        items.event_item(started, writer),
                        condition="attribute_not_exists(sk)",
                        name=plans.STARTED,
                    ),
                ]
            )
        except Cancelled as cancelled:
            if cancelled.refused_by(plans.RUN):
                return None
            raise cancellation_error([r.code for r in cancelled.reasons], operation="run_started") from None
        return EventResult(event=started, run=run)

    def _put_event(self, event: Event, writer: PayloadWriter) -> Event:
        """Put the event of a reserved run transition; if a reader rebuilt it first, that one stands."""
        # The transition is applied; a reader would rebuild the event after its grace
        # period, but putting it now keeps readers from waiting for it.
        item = items.event_item(event, writer)
        landed = self._seq.land(item, attempts=LAND_ATTEMPTS)
        if landed is item:
            return event
        return items.event_from_item(event.run_id, landed, PayloadReader(self._blobs))

    def _finish_terminal(self, run_id: str, run_item: Item, now: datetime) -> None:
        """Make sure the terminal event of an ended run is in its log, and its hooks released.

        The transition's reservation is the run's end (status and position in one
        write); the event put and the hook release follow it. A writer that died
        in between, or whose reservation landed while its answer was lost (so its
        in-process retry was refused as "already terminal"), leaves a run that reads
        ``completed`` with no ``run_completed`` in its log, and nothing later turns
        that last position into an interior hole for a reader to repair. Every
        refused transition of a terminal run (a redelivered continuation, a late
        cancel) checks the position (one GetItem) and puts the event rebuilt from
        the run item's copy if it is missing (conditionally: a writer still in flight
        finds it and keeps it, as it does a reader's repair), then releases the hooks
        (idempotent: conditional deletes).
        """
        position = run_item.get(f"{FINAL_SLOT}_pos")
        if position is None or self._table.get(keys.event_key(run_id, int(position))) is not None:
            return
        # A tail batch that ends with the event lands whole (its outcome with it).
        rebuilt = tail_batch(run_item, int(position)) or rebuild_run_event(run_item, int(position))
        if rebuilt is None:
            return
        if self._seq.land(rebuilt) is not rebuilt:
            return  # its writer (or a reader's repair) put it meanwhile
        self.release_hooks(run_id, now, run_item)

    def _full_run(self, item: Item) -> Run:
        return items.run_from_item(item, PayloadReader(self._blobs))

    def release_hooks(self, run_id: str, now: datetime, run_item: Item | None = None) -> None:
        """Dispose the live hooks of a run that just became terminal and free their tokens (contract §3.1).

        ``run_item``: the run item as the run's end left it (its reservation's ``ALL_NEW``,
        or a later image); without the ``hooked`` mark, the run never made a hook and
        there is nothing to query (``keys.HOOKED``: every ``hook_created`` sets it in its
        fenced reservation, which precedes the end, so an image from the end on has it).
        None (a transaction's end, which returns no image): query.

        Best effort: if this is lost (a crash, throttling), the hook store treats the
        hooks of a terminal run as gone, and ``hook_created`` takes over a token whose
        holder is dead.
        """
        if run_item is not None and not run_item.get(keys.HOOKED):
            return
        try:
            hooks = self._table.query_all(
                "pk = :pk AND begins_with(sk, :hook)", {":pk": keys.run_pk(run_id), ":hook": keys.HOOK_PREFIX}
            )
            for hook in hooks:
                if not items.hook_is_live(hook):
                    continue
                try:
                    self._table.update(
                        keys.token_key(str(hook["token"])),
                        items.TOKEN_RELEASE,
                        condition="run_id = :run AND hook_id = :hook",
                        values={":run": run_id, ":hook": hook["hook_id"], **items.token_release_values(now)},
                        return_values="NONE",
                    )
                except ConditionFailed:
                    pass  # the token is no longer this hook's
                try:
                    self._table.update(
                        keys.hook_key(run_id, str(hook["hook_id"])),
                        "SET disposed_at = :now",
                        condition="attribute_exists(sk) AND attribute_not_exists(disposed_at)",
                        values={":now": items.iso(now)},
                    )
                except ConditionFailed:
                    pass
        except WorldAwsError:
            pass


def transition_changes(
    etype: EventType,
    data: EventData,
    now: datetime,
    writer: PayloadWriter,
    *,
    position: str,
    copy_start: bool = True,
) -> RunChanges:
    """The run item changes of ``etype``: status, its fields, the repair copy, the live index.

    ``copy_start`` False: no repair copy of a ``run_started`` (its batch is the run item's
    ``tail``, which repairs it; the copy would weigh on every later write of the item).

    The condition is the statuses the transition leaves (``records.RUN_TRANSITIONS``).
    """
    slot = run_event_slot(etype)
    # The copy kept for repair leaves out output/error: they are the run's own fields.
    copy = {
        "type": etype.value,
        "created_at": items.iso(now),
        "data": items.encode_data(data, writer, limit=ENTITY_INLINE_LIMIT, leave_out=("output", "error")),
    }
    sets = ["#status = :new"]  # the run's updated_at is its start's or end's (items.run_from_item)
    allowed, status = RUN_TRANSITIONS[etype]
    values: dict[str, object] = {
        ":new": status.value,
        ":now": items.iso(now),
        **{f":from{i}": status.value for i, status in enumerate(allowed)},
    }
    copy_slot = slot if copy_start or etype is not EventType.RUN_STARTED else None
    if copy_slot is not None:
        sets += [f"{slot} = :copy", f"{slot}_pos = {position}"]
        values[":copy"] = copy
    if etype is EventType.RUN_STARTED:
        sets.append("started_at = if_not_exists(started_at, :now)")
    else:
        sets.append("completed_at = :now")
    names = {"#status": "status"}
    if isinstance(data, RunCompletedData) and data.output is not None:
        sets.append("#output = :output")
        names["#output"] = "output"
        values[":output"] = writer.encode(data.output, ENTITY_INLINE_LIMIT)
    if isinstance(data, RunFailedData):
        sets.append("#error = :error")
        names["#error"] = "error"
        values[":error"] = writer.encode(data.error, ENTITY_INLINE_LIMIT)
        if data.error_code is not None:
            sets.append("error_code = :code")
            values[":code"] = data.error_code
    # A terminal transition takes the run out of the sparse live index in this same write.
    # and out of the deployment index (deployment_index): it is pinned to nothing any more.
    removes = [keys.LIVE_PK, keys.LIVE_SK, keys.DEP_PK] if status.terminal else []
    if status.terminal:
        # Its expiry (end + retention): a run created with a retention has xp_pk, so this puts
        # it in the expiring index (erasure); one without has no xp_pk and is not indexed.
        sets.append(f"{keys.XP_US} = if_not_exists({keys.RET_US}, :noret) + :end_us")
        values[":noret"] = 0
        values[":end_us"] = items.epoch_us(now)
    condition = "#status IN (" + ", ".join(f":from{i}" for i in range(len(allowed))) + ")"
    return RunChanges(sets, removes, names, values, condition, copy_slot)
