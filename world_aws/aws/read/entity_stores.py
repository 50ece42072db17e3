"""The read-side stores of the AWS World: runs, steps, hooks and waits (entities change only by events).

Reads of one run's items are strongly consistent (``ConsistentRead``);
``runs.list`` reads the ``runs_by_created`` index (newest first), which DynamoDB keeps
eventually consistent. Payloads are resolved from S3 only when asked for
(``ResolveData.NONE`` never touches S3).

Hooks of a terminal run are gone (contract §3.1) even if the release that follows
the terminal transition was lost: the hook reads check the run's status.
"""

from __future__ import annotations

import base64
import binascii
import builtins
import json
from datetime import datetime

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.aws.codec.payloads import PayloadReader
from world_aws.aws.write import deployment_index, live_index
from world_aws.aws.write.sequencer import Sequencer, tail_batch
from world_aws.aws.write.step_events import logged_steps, unwritten_step
from world_aws.contract.clock import epoch_ms, from_epoch_ms
from world_aws.contract.records import Blocked, Event, Hook, ResolveData, Run, RunStatus, Step, Wait
from world_aws.contract.rules import resumed_by
from world_aws.contract.world import BlobStore, LiveRun, RunPage, Sweep
from world_aws.errors import BadInput, NotFound, Transient

_CURSOR_PREFIX = "ddb1:"
_CURSOR_KEYS = (keys.PK, keys.SK, keys.GSI1_PK, keys.GSI1_SK)


class _Reader:
    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table = table
        self._blobs = blobs

    def _children(self, run_id: str, prefix: str) -> builtins.list[Item]:
        """The run's items under a sort-key prefix, in creation order (``cpos``)."""
        found = self._table.query_all(
            "pk = :pk AND begins_with(sk, :prefix)", {":pk": keys.run_pk(run_id), ":prefix": prefix}
        )
        return sorted(found, key=lambda item: int(item.get("cpos", 0)))

    def _run_and(self, run_id: str, other: keys.Key) -> tuple[Item | None, Item | None]:
        """The run item and one more item, in one consistent ``BatchGetItem``."""
        found = {str(item[keys.SK]): item for item in self._table.batch_get([keys.run_key(run_id), other])}
        return found.get(keys.RUN_SK), found.get(str(other[keys.SK]))

    def _run_terminal(self, run_id: str) -> bool:
        run = self._table.get(keys.run_key(run_id), attributes=["status"])
        return run is None or RunStatus(run["status"]).terminal


class DynamoRunStore(_Reader):
    """``runs.get`` / ``runs.list`` / ``runs.claim_continuation``; the live index (``live_index``)."""

    def get(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Run:
        """The run. Raises NotFound.

        With its data: the run item and its ``run_created`` event (which holds the
        input) in one ``BatchGetItem``; without: one ``GetItem`` of the run item.
        """
        reader = PayloadReader(self._blobs, resolve_data)
        if reader.wanted:
            item, created = self._run_and(run_id, keys.run_input_key(run_id))
        else:
            item, created = self._table.get(keys.run_key(run_id)), None
        if item is None:
            raise NotFound(f"run {run_id} not found")
        return items.run_from_item(item, reader, created or _unlanded_created(item))

    def claim_continuation(self, run_id: str, *, after: int, claimer: str) -> Run | None:
        """Claim the continuation after the outcome at ``after`` (see ``RunStore``): one UpdateItem.

        The run item keeps ``cont_seq`` (the run's ``seq`` when the last claim was
        made) and ``cont_by``. The claim costs what the ``runs.get`` it replaces did,
        one round trip, and returns the run from ``ALL_NEW``: without its input
        (``None``; the run item does not hold it, and a warm continuation does not
        need it). Raises NotFound.
        """
        try:
            item = self._table.update(
                keys.run_key(run_id),
                "SET cont_seq = seq, cont_by = :me",
                condition=(
                    "attribute_exists(pk) AND "
                    "(attribute_not_exists(cont_seq) OR cont_seq < :after OR cont_by = :me)"
                ),
                values={":me": claimer, ":after": after},
            )
        except ConditionFailed as refused:
            if refused.item is None:
                raise NotFound(f"run {run_id} not found") from None
            return None
        return items.run_from_item(item, PayloadReader(self._blobs))

    def list_live(self, *, marked_before: datetime, limit: int) -> builtins.list[LiveRun]:
        """Non-terminal runs marked before ``marked_before``: one index Query, one BatchGetItem."""
        return live_index.list_live(self._table, marked_before=marked_before, limit=limit)

    def mark_live(self, run_id: str, *, mark: datetime) -> bool:
        """Mark a non-terminal run, entering it in the live index: one conditional UpdateItem."""
        return live_index.mark_live(self._table, run_id, mark=mark)

    def sweep_created(self, *, created_before: datetime, limit: int) -> Sweep:
        """Mark the runs still going past the sweep cursor (``live_index.sweep_created``)."""
        return live_index.sweep_created(self._table, created_before=created_before, limit=limit)

    def count_live(self, deployment_id: str) -> int:
        """Live runs pinned to ``deployment_id``: the keys of one index partition (``deployment_index``)."""
        return deployment_index.count_live(self._table, deployment_id)

    def hold(self, run_id: str, blocked: Blocked) -> bool:
        """Mark a running run held: one conditional UpdateItem."""
        return deployment_index.hold(self._table, run_id, blocked)

    def release(self, run_id: str, *, deployment_id: str) -> bool:
        """Pin a held run to ``deployment_id``: one conditional UpdateItem."""
        return deployment_index.release(self._table, run_id, deployment_id=deployment_id)

    def unblock(self, run_id: str) -> None:
        """Clear a released run's mark: one conditional UpdateItem."""
        deployment_index.unblock(self._table, run_id)

    def list_blocked(self, *, limit: int = 100) -> builtins.list[Run]:
        """The held runs: one index Query and one BatchGetItem."""
        return deployment_index.list_blocked(self._table, self._blobs, limit=limit)

    def list(
        self,
        *,
        status: RunStatus | None = None,
        workflow_name: str | None = None,
        limit: int = 100,
        cursor: str | None = None,
    ) -> RunPage:
        """Runs newest first (by creation time, then id), filtered; ``cursor`` continues a page.

        Raises:
            BadInput: ``limit`` below 1, or a cursor this store did not make.
        """
        if limit < 1:
            raise BadInput(f"limit must be at least 1, not {limit}")
        start = _decode_cursor(cursor) if cursor is not None else None
        values: dict[str, object] = {":runs": keys.RUNS_GSI_PK}
        if workflow_name is not None:
            values[":workflow"] = workflow_name
        found: builtins.list[Item] = []  # the index entries of the runs listed, newest first
        fetched: dict[tuple[str, str], Item] = {}
        # One more than asked for tells whether another page exists.
        while len(found) <= limit:
            page = self._table.query_page(
                f"{keys.GSI1_PK} = :runs",
                values,
                index=keys.RUNS_INDEX,
                forward=False,
                limit=max(limit + 1 - len(found), 25),
                start_key=start,
                filter_expression="workflow_name = :workflow" if workflow_name is not None else None,
            )
            entries = page.items
            if status is not None:
                # The index does not project the status (each change would write its one
                # partition): the runs of the page are read, and filtered on their items.
                fetched.update(self._runs_with_input(entries))
                entries = [e for e in entries if _status_of(fetched, e) == status.value]
            found.extend(entries)
            start = page.last_key
            if start is None:
                break
        # The index projects only workflow_name (the listing's filter): step events bump
        # the run item's seq, and a projected attribute that changes writes the index. So
        # the page's run items are fetched by key, each with its run_created event (the input).
        listed = found[:limit]
        fetched.update(self._runs_with_input([e for e in listed if _status_of(fetched, e) is None]))
        reader = PayloadReader(self._blobs)
        created_sk = keys.event_sk(keys.RUN_CREATED_POSITION)
        runs = [
            items.run_from_item(
                fetched[(pk, keys.RUN_SK)],
                reader,
                fetched.get((pk, created_sk)) or _unlanded_created(fetched[(pk, keys.RUN_SK)]),
            )
            for pk in (str(entry[keys.PK]) for entry in listed)
            if (pk, keys.RUN_SK) in fetched
        ]
        more = len(found) > limit
        return RunPage(runs=runs, cursor=_encode_cursor(found[limit - 1]) if more else None)

    def _runs_with_input(self, entries: builtins.list[Item]) -> dict[tuple[str, str], Item]:
        """The run items of index ``entries`` and their ``run_created`` events, by (pk, sk)."""
        created_sk = keys.event_sk(keys.RUN_CREATED_POSITION)
        wanted = [
            {keys.PK: str(e[keys.PK]), keys.SK: sk} for e in entries for sk in (keys.RUN_SK, created_sk)
        ]
        if not wanted:
            return {}
        return {(str(i[keys.PK]), str(i[keys.SK])): i for i in self._table.batch_get(wanted)}


def _status_of(fetched: dict[tuple[str, str], Item], entry: Item) -> str | None:
    """The status of the run item fetched for an index entry (None: not fetched, or gone)."""
    run_item = fetched.get((str(entry[keys.PK]), keys.RUN_SK))
    return None if run_item is None else str(run_item["status"])


def _unlanded_created(run_item: Item) -> Item | None:
    """The ``run_created`` event item still in the run item's ``tail`` (its put has not landed)."""
    return tail_batch(run_item, keys.RUN_CREATED_POSITION)


def _encode_cursor(item: Item) -> str:
    position = json.dumps({name: item[name] for name in _CURSOR_KEYS}, separators=(",", ":"))
    return base64.urlsafe_b64encode((_CURSOR_PREFIX + position).encode()).decode()


def _decode_cursor(cursor: str) -> Item:
    try:
        text = base64.urlsafe_b64decode(cursor.encode()).decode()
        if not text.startswith(_CURSOR_PREFIX):
            raise ValueError(cursor)
        decoded = json.loads(text.removeprefix(_CURSOR_PREFIX))
        if not isinstance(decoded, dict) or set(decoded) != set(_CURSOR_KEYS):
            raise ValueError(cursor)
        return {str(k): str(v) for k, v in decoded.items()}
    except (ValueError, binascii.Error, UnicodeDecodeError) as exc:
        raise BadInput(f"not a runs.list cursor: {cursor!r}") from exc


class DynamoStepStore(_Reader):
    """``steps.get`` / ``steps.list``.

    A step created owned without its item (``step_events``: the run item holds its
    entry) is read from its create event, as its create made it; one its owner settled
    (no item, no entry) from its events in the log (``step_events.logged_steps``).
    """

    def __init__(self, table: Table, blobs: BlobStore, sequencer: Sequencer) -> None:
        super().__init__(table, blobs)
        self._seq = sequencer

    def get(self, run_id: str, step_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> Step:
        """The step: its item, else (one more read) the run item's entry and its create, else its events.

        Raises NotFound.
        """
        item = self._table.get(keys.step_key(run_id, step_id))
        if item is not None:
            return items.step_from_item(run_id, item, PayloadReader(self._blobs, resolve_data))
        run_item = self._table.get(keys.run_key(run_id))
        found = unwritten_step(self._seq, self._blobs, run_id, step_id, run_item, resolve_data)
        if found is None:
            logged = logged_steps(self._seq, self._blobs, run_id, run_item, resolve_data, only=step_id)
            found = logged.get(step_id)
        if found is None:
            raise NotFound(f"step {step_id} not found in run {run_id}")
        return found[0]

    def list(self, run_id: str, *, resolve_data: ResolveData = ResolveData.ALL) -> builtins.list[Step]:
        """Every step of the run in creation order; an unknown run gives ``[]``."""
        reader = PayloadReader(self._blobs, resolve_data)
        stored = self._children(run_id, keys.STEP_PREFIX)
        listed = [(int(item.get("cpos", 0)), items.step_from_item(run_id, item, reader)) for item in stored]
        run_item = self._table.get(keys.run_key(run_id)) or {}
        have = {step.step_id for _, step in listed}
        for name in run_item:
            step_id = name.removeprefix(keys.OWN_PREFIX)
            if step_id == name or step_id in have:
                continue
            found = unwritten_step(self._seq, self._blobs, run_id, step_id, run_item, resolve_data)
            if found is not None:
                listed.append((found[1], found[0]))
                have.add(step_id)
        logged = logged_steps(self._seq, self._blobs, run_id, run_item, resolve_data)
        for step_id, (step, position) in logged.items():
            if step_id not in have:
                listed.append((position, step))
        return [step for _, step in sorted(listed, key=lambda pair: pair[0])]

    def any_pending(self, run_id: str, *, besides: str | None = None) -> bool:
        """Whether a step of the run other than ``besides`` has no outcome yet.

        One consistent Query of at most two ``pend#`` markers (keys.py): the markers
        change in the same transactions as the steps' outcomes, so this sees every
        outcome committed before it, and reads two small items whatever the fan-out.
        """
        page = self._table.query_page(
            "pk = :pk AND begins_with(sk, :prefix)",
            {":pk": keys.run_pk(run_id), ":prefix": keys.PENDING_PREFIX},
            limit=2,
        )
        mine = None if besides is None else keys.pending_key(run_id, besides)[keys.SK]
        return any(item[keys.SK] != mine for item in page.items)

    def renew_lease(self, run_id: str, owner: str, *, at: datetime) -> None:
        """One unconditional ``PutItem`` of the (run, owner) lease item, kept a day (TTL).

        Unconditional: one thread of the owner writes its renewals one after the other,
        and a stale one can only make the lease look older (a takeover sooner), never longer.
        """
        self._table.put(
            {
                **keys.lease_key(run_id, owner),
                LEASE_RENEWED: epoch_ms(at),
                keys.TTL_ATTRIBUTE: epoch_ms(at) // 1000 + LEASE_TTL_SECONDS,
            }
        )

    def lease(self, run_id: str, owner: str) -> datetime | None:
        """When ``owner`` last renewed: one consistent ``GetItem`` (None: no renewal)."""
        item = self._table.get(keys.lease_key(run_id, owner), attributes=[LEASE_RENEWED])
        return None if item is None else from_epoch_ms(int(item[LEASE_RENEWED]))


# The lease item's attribute (epoch ms) and how long it is kept: past a day no lease matters
# (a step body runs at most the consumer's timeout, 150 s).
LEASE_RENEWED = "renewed_at"
LEASE_TTL_SECONDS = 86_400


class DynamoHookStore(_Reader):
    """``hooks.get_by_token`` / ``hooks.list``: live hooks only."""

    def get_by_token(self, token: str) -> Hook:
        """The live hook holding ``token``. Raises NotFound."""
        item = self._table.get(keys.token_key(token))
        holder = items.token_holder(item)
        if item is not None and holder is not None and not items.token_released(item):
            run_id, hook_id = holder
            run, hook = self._run_and(run_id, keys.hook_key(run_id, hook_id))
            if (
                run is not None
                and not RunStatus(run["status"]).terminal
                and hook
                and items.hook_is_live(hook)
            ):
                return items.hook_from_item(run_id, hook, PayloadReader(self._blobs))
        raise NotFound(f"no live hook holds token {token!r}")

    def resumed(self, token: str, resume_id: str) -> Event | None:
        """The resume ``resume_id`` of the token's last holder, live or not (see ``HookStore``).

        Three consistent reads: the token item (kept a week once released), the run's
        ``resume#`` item, the event at its position.
        """
        holder = items.token_holder(self._table.get(keys.token_key(token)))
        if holder is None:
            return None
        run_id, hook_id = holder
        resume = self._table.get(keys.resume_key(run_id, resume_id))
        if resume is None:
            return None
        stored = self._table.get(keys.event_key(run_id, int(resume["pos"])))
        if stored is None:
            raise Transient(f"run {run_id}: the resume's event is not readable yet; retry")
        event = items.event_from_item(run_id, stored, PayloadReader(self._blobs, ResolveData.NONE))
        return event if resumed_by(event, token, hook_id) else None

    def list(self, run_id: str) -> builtins.list[Hook]:
        """The live hooks of a run, in creation order; an unknown run gives ``[]``."""
        live = [item for item in self._children(run_id, keys.HOOK_PREFIX) if items.hook_is_live(item)]
        if not live or self._run_terminal(run_id):
            return []
        reader = PayloadReader(self._blobs)
        return [items.hook_from_item(run_id, item, reader) for item in live]


class DynamoWaitStore(_Reader):
    """``waits.get`` / ``waits.list``."""

    def get(self, run_id: str, wait_id: str) -> Wait:
        """The wait. Raises NotFound."""
        item = self._table.get(keys.wait_key(run_id, wait_id))
        if item is None:
            raise NotFound(f"wait {wait_id} not found in run {run_id}")
        return items.wait_from_item(run_id, item)

    def list(self, run_id: str) -> builtins.list[Wait]:
        """Every wait of the run in creation order; an unknown run gives ``[]``."""
        return [items.wait_from_item(run_id, item) for item in self._children(run_id, keys.WAIT_PREFIX)]
