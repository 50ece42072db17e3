"""Hook events on DynamoDB: hook_created, hook_received, hook_disposed.

``hook_created`` (3 round trips when the token is free): consistent read of run
and hook (a duplicate hook id is refused there), reserve (fenced; it also marks the
run item ``hooked``, which tells the run's end that it has hooks to release) + commit
``[Put event, Put hook attribute_not_exists(sk), Put token attribute_not_exists(pk)]``.
The token item (``token#<token>``) makes tokens unique among live hooks. If the token is held:

* by a live hook (its run not terminal, its hook not disposed): the reserved
  position gets a ``hook_conflict`` event (token, conflicting run id) instead,
  committed with a tombstone of the hook id (its item, disposed, no token), and that
  is the answer (contract §3; no error). +1 read, +1 transaction;
* by a dead holder (its run ended or its hook is gone, and the cleanup that
  should have freed the token was lost): the token is taken over, conditioned
  on the old holder still being the one named in it. +1 read, +1 transaction.

A duplicate hook id (live or disposed: the hook item stays as a tombstone)
fails the hook condition: Conflict, position sealed.

``hook_received`` (3 round trips): consistent read of run, hook and the
``resume#<resume_id>`` dedup item; a known resume id returns the first event
(contract §6.2) even after the hook was disposed. Then reserve (fenced) + commit
``[Put event, ConditionCheck hook live, Put resume item (its position)]``. Of two
racing resumes with one id, the second fails the resume condition, seals its
position and returns the first event.

``hook_disposed`` (3 round trips): read run and hook (the token is on the hook),
reserve (fenced) + commit ``[Put event, Update hook disposed_at, Update token
released if it is still this hook's]``. A released token item is kept a week
(``items.TOKEN_KEEPS_SECONDS``, the table's TTL) naming its last holder
(``hooks.resumed``); a ``hook_created`` claims it as it claims a missing one.
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import Action, Cancelled, Item
from world_aws.aws.codec.payloads import PayloadReader, PayloadWriter
from world_aws.aws.write import plans
from world_aws.aws.write.sequencer import (
    MAX_RESERVATIONS,
    NOT_TERMINAL,
    TERMINAL_STATUSES,
    Appended,
    EntityActions,
    EventCommit,
    PositionTaken,
    Sequencer,
)
from world_aws.aws.write.template import EntityWrite, Seen, read_judge_commit
from world_aws.contract import rules
from world_aws.contract.records import (
    Event,
    EventRequest,
    EventResult,
    EventType,
    Hook,
    HookConflictData,
    HookCreatedData,
    HookReceivedData,
    ResolveData,
    Run,
)
from world_aws.contract.world import BlobStore
from world_aws.errors import Transient

_LIVE_HOOK = "attribute_exists(sk) AND attribute_not_exists(disposed_at)"
# Takeovers of a dead holder's token tried at one position before giving up.
_MAX_TAKEOVERS = 4


class HookEvents:
    """Writes the hook events of one table."""

    def __init__(self, sequencer: Sequencer, blobs: BlobStore) -> None:
        self._seq = sequencer
        self._table = sequencer.table
        self._blobs = blobs
        self._headers = PayloadReader(blobs, ResolveData.NONE)

    # ------------------------------------------------------------------------- hook_created

    def hook_created(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        assert request.correlation_id is not None
        hook_key = keys.hook_key(run_id, request.correlation_id)
        run_item, entity_item = self._seq.read_run_and(run_id, hook_key)
        rules.judge_child_create(request, self._seq.run_header(run_item), entity_item)
        hook = rules.apply_hook_event(request, run_id, None, now)
        takeover: list[Item] = []  # the dead holder whose token we take over, if any

        def entity_actions(position: int, writer: PayloadWriter) -> list[Action]:
            return [
                self._table.put_action(
                    items.hook_item(hook, writer, position=position),
                    condition="attribute_not_exists(sk)",
                    name=plans.ENTITY,
                ),
                self._token_put(hook, takeover[0] if takeover else None),
                # Timeline: the run's end writes the run item after this reservation, then
                # queries its hooks; a commit after that write would leave this hook and its
                # token behind, live, on an ended run. Checked here, the commit either
                # precedes the end's write (and its consistent Query finds the hook) or is
                # refused, and the position is sealed.
                self._table.check_action(
                    keys.run_key(run_id),
                    NOT_TERMINAL,
                    names={"#status": "status"},
                    values=TERMINAL_STATUSES,
                    name=plans.RUN,
                ),
            ]

        build = EventCommit(self._seq, run_id, request, now, entity_actions, entity_fields=("metadata",))

        for _ in range(MAX_RESERVATIONS):
            # Timeline: this reservation marks the run ``hooked`` (``keys.HOOKED``) before the
            # hook item can exist, and it is fenced, so it precedes any end of the run: the
            # end's write of the run item sees the mark and releases the hooks. A refused or
            # conflicting create leaves the mark with no hook: the end queries for nothing.
            position, run_item = self._seq.reserve(
                run_id,
                now,
                fenced=plans.plan(request.type).fenced,
                judge=lambda run: rules.judge_child_create(request, run, None),
                mark=keys.HOOKED,
            )
            try:
                cancelled = self._seq.commit(run_id, position, build(position, run_item), now)
                for _ in range(_MAX_TAKEOVERS):
                    if cancelled is None:
                        break
                    holder = self._judge_created(request, run_item, position, cancelled, now)
                    if holder is not None and self._holder_live(holder):
                        return self._conflict(run_id, request, position, holder, hook, run_item, now)
                    takeover[:] = [holder] if holder is not None else []
                    cancelled = self._seq.commit(run_id, position, build(position, run_item), now)
            except PositionTaken:
                continue
            if cancelled is not None:
                # The token kept changing hands under us: give the position up.
                self._seq.seal_noop(run_id, position, now)
                raise Transient(f"token of hook {hook.hook_id} kept changing hands; retry", retry_after=0.1)
            return EventResult(event=build.event, hook=hook)
        raise Transient(f"run {run_id}: reserved positions kept being sealed; retry", retry_after=0.5)

    def _token_put(self, hook: Hook, holder: Item | None) -> Action:
        item = items.token_item(hook.token, hook.run_id, hook.hook_id)
        if holder is None:
            # Timeline: two hooks (of any runs) claim one free token; the first commit holds it.
            return self._table.put_action(item, condition=items.TOKEN_FREE, name=plans.TOKEN)
        # Take over a dead holder's token, only if nobody else took it since we looked.
        return self._table.put_action(
            item,
            condition=f"{items.TOKEN_FREE} OR (run_id = :old_run AND hook_id = :old_hook)",
            values={":old_run": holder["run_id"], ":old_hook": holder["hook_id"]},
            name=plans.TOKEN,
        )

    def _judge_created(
        self, request: EventRequest, run_item: Item, position: int, cancelled: Cancelled, now: datetime
    ) -> Item | None:
        """Raise the rejection of a refused hook_created, or return the token's holder (None: free now)."""
        if cancelled.refused_by(plans.RUN):  # the run ended since the reservation
            self._seq.seal_noop(keys.run_id_of(run_item), position, now)
            rules.judge_child_create(request, self._seq.run_header(cancelled.item_of(plans.RUN)), None)
        if cancelled.refused_by(plans.ENTITY):
            self._seq.seal_noop(keys.run_id_of(run_item), position, now)
            rules.judge_child_create(request, self._seq.run_header(run_item), cancelled.item_of(plans.ENTITY))
        return cancelled.item_of(plans.TOKEN)

    def _holder_live(self, holder: Item) -> bool:
        holder_run, holder_hook = str(holder["run_id"]), str(holder["hook_id"])
        found = {
            str(i[keys.SK]): i
            for i in self._table.batch_get([keys.run_key(holder_run), keys.hook_key(holder_run, holder_hook)])
        }
        run = self._seq.run_header(found.get(keys.RUN_SK))
        return (
            run is not None
            and not run.status.terminal
            and items.hook_is_live(found.get(keys.hook_key(holder_run, holder_hook)[keys.SK]))
        )

    def _conflict(
        self,
        run_id: str,
        request: EventRequest,
        position: int,
        holder: Item,
        hook: Hook,
        run_item: Item,
        now: datetime,
    ) -> EventResult:
        """Commit ``hook_conflict`` at the reserved position, with the hook id's tombstone.

        The tombstone (the hook item, disposed, holding no token) keeps the id taken, as a
        disposed hook's item does: a later create of it (a pass that replayed the log before
        the conflict, once the holder freed the token) is a duplicate, not a hook its
        workflow was told it does not have. A conflict is rare: its commit is a transaction.
        """
        token = request.data_as(HookCreatedData).token
        data = HookConflictData(token=token, conflicting_run_id=str(holder["run_id"]))
        event = Event(run_id, position, EventType.HOOK_CONFLICT, request.correlation_id, now, data)
        writer = PayloadWriter(self._blobs, run_id)
        tombstone = {**items.hook_item(hook, writer, position=position), "disposed_at": items.iso(now)}
        actions = [
            self._seq.item_put(items.event_item(event, writer)),
            self._table.put_action(tombstone, condition="attribute_not_exists(sk)", name=plans.ENTITY),
        ]
        cancelled = self._seq.commit(run_id, position, actions, now)
        if cancelled is not None:
            # The id was created meanwhile (a racing create of it committed first).
            self._seq.seal_noop(run_id, position, now)
            rules.judge_child_create(request, self._seq.run_header(run_item), cancelled.item_of(plans.ENTITY))
            raise Transient("hook_conflict could not be written; retry")  # pragma: no cover
        return EventResult(event=event)

    # ------------------------------------------------------------------------- hook_received

    def hook_received(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        assert request.correlation_id is not None
        hook_key = keys.hook_key(run_id, request.correlation_id)
        resume_id: str | None = request.data_as(HookReceivedData).resume_id
        resume_key = keys.resume_key(run_id, resume_id) if resume_id is not None else None

        def judge(run: Run | None, hook: Hook | None) -> None:
            rules.judge_hook_event(request, run, hook)

        def read() -> Seen[Hook] | EventResult:
            wanted = [keys.run_key(run_id), hook_key] + ([resume_key] if resume_key else [])
            found = {str(i[keys.SK]): i for i in self._table.batch_get(wanted)}
            run_item, hook_item = found.get(keys.RUN_SK), found.get(hook_key[keys.SK])
            seen = self._hook(run_id, hook_item, self._headers)
            if run_item is None:
                judge(None, seen)
            if resume_key is not None and resume_key[keys.SK] in found:
                return self._first(run_id, found[resume_key[keys.SK]], hook_item)
            return Seen(run_item, hook_item, seen)

        def actions(_seen: Seen[Hook]) -> EntityActions:
            def entity_actions(position: int, _writer: PayloadWriter) -> list[Action]:
                actions = [
                    # Timeline: a resume racing hook_disposed or the run's end; a disposed hook
                    # receives nothing.
                    self._table.check_action(hook_key, _LIVE_HOOK, name=plans.ENTITY),
                ]
                if resume_key is not None:
                    # Timeline: the direct resume and the consumer's re-ensure (contract §6.2)
                    # race; one event per resume id.
                    resume = {**resume_key, "pos": position}
                    actions.append(
                        self._table.put_action(
                            resume, condition="attribute_not_exists(sk)", name=plans.RESUME
                        )
                    )
                return actions

            return entity_actions

        def refused(appended: Appended, seen: Seen[Hook]) -> EventResult | None:
            assert appended.refused is not None
            plan = plans.plan(request.type)
            if plan.refused_by(appended.refused):  # a resume with this id was written first
                first = plan.refused_item(appended.refused)
                assert first is not None
                return self._first(run_id, first, seen.item)
            judge(self._seq.run_header(appended.run_item), None)
            return None

        return read_judge_commit(
            self._seq,
            run_id,
            request,
            now,
            EntityWrite(
                key=hook_key,
                decode=lambda item: self._hook(run_id, item, self._headers),
                judge=judge,
                actions=actions,
                committed=self._committed,
                gave_up=f"hook {request.correlation_id} kept changing; retry",
                read=read,
                refused=refused,
            ),
        )

    def _committed(self, appended: Appended, seen: Seen[Hook]) -> EventResult:
        hook = self._hook(appended.event.run_id, seen.item, PayloadReader(self._blobs))
        return EventResult(event=appended.event, hook=hook)

    def _first(self, run_id: str, resume_item: Item, hook_item: Item | None) -> EventResult:
        """The event the first resume with this id wrote."""
        stored = self._table.get(keys.event_key(run_id, int(resume_item["pos"])))
        if stored is None:
            raise Transient(f"run {run_id}: the first resume's event is not readable yet; retry")
        event = items.event_from_item(run_id, stored, PayloadReader(self._blobs))
        return EventResult(event=event, hook=self._hook(run_id, hook_item, PayloadReader(self._blobs)))

    # ------------------------------------------------------------------------- hook_disposed

    def hook_disposed(self, run_id: str, request: EventRequest, now: datetime) -> EventResult:
        assert request.correlation_id is not None
        hook_key = keys.hook_key(run_id, request.correlation_id)

        def judge(run: Run | None, hook: Hook | None) -> None:
            rules.judge_hook_event(request, run, hook)

        def actions(seen: Seen[Hook]) -> EntityActions:
            hook = seen.entity
            assert hook is not None

            def entity_actions(position: int, _writer: PayloadWriter) -> list[Action]:
                return [
                    # Timeline: a dispose racing another dispose or a resume: the hook is live for
                    # exactly one of them.
                    self._table.update_action(
                        hook_key,
                        "SET disposed_at = :now, ver = :pos",
                        condition=_LIVE_HOOK,
                        values={":now": items.iso(now), ":pos": position},
                        name=plans.ENTITY,
                    ),
                    # Free the token, unless it is no longer this hook's; its item stays,
                    # naming this hook as its last holder (items.TOKEN_KEEPS_SECONDS).
                    self._table.update_action(
                        keys.token_key(hook.token),
                        items.TOKEN_RELEASE,
                        condition="attribute_not_exists(pk) OR (run_id = :run AND hook_id = :hook)",
                        values={":run": run_id, ":hook": hook.hook_id, **items.token_release_values(now)},
                        name=plans.TOKEN,
                    ),
                ]

            return entity_actions

        def refused(appended: Appended, _seen: Seen[Hook]) -> EventResult | None:
            assert appended.refused is not None
            if plans.plan(request.type).refused_by(appended.refused):
                judge(self._seq.run_header(appended.run_item), None)
            return None

        return read_judge_commit(
            self._seq,
            run_id,
            request,
            now,
            EntityWrite(
                key=hook_key,
                decode=lambda item: self._hook(run_id, item, self._headers),
                judge=judge,
                actions=actions,
                committed=self._committed,
                gave_up=f"hook {request.correlation_id} could not be disposed; retry",
                refused=refused,
            ),
        )

    @staticmethod
    def _hook(run_id: str, item: Item | None, reader: PayloadReader) -> Hook | None:
        return items.hook_from_item(run_id, item, reader) if items.hook_is_live(item) and item else None
