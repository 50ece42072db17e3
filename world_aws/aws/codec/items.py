"""Translation between the contract's records and the DynamoDB items of the table (keys in ``keys.py``).

Only this module knows attribute names. Conventions:

* timestamps are ISO-8601 UTC strings with microseconds (they sort as text,
  which ``gsi1sk`` and ``live_sk`` rely on), except a step's ``retry_after`` and
  the run's ``prog_us``, kept as numbers of epoch microseconds (a condition
  expression can compare ``retry_after`` with "now"; ``prog_us`` is rewritten by
  every reservation and a number is its smallest form);
* payload fields are inline bytes or S3 references (``payloads.py``);
* entity items carry ``cpos`` (the position of the event that created them, for
  listing in creation order) and ``ver`` (the position of the last event that
  changed them: the version an optimistic write is conditioned on);
* a disposed hook stays as a tombstone (``disposed_at``), so its id cannot be
  created again (a duplicate create is a Conflict, as in every World).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from world_aws.aws.codec import keys
from world_aws.aws.codec.dynamo import Item
from world_aws.aws.codec.payloads import (
    ENTITY_INLINE_LIMIT,
    EVENT_INLINE_LIMIT,
    RUN_INPUT_INLINE_LIMIT,
    PayloadReader,
    PayloadWriter,
)
from world_aws.contract.erasure import retention_of
from world_aws.contract.records import (
    DATA_RECORDS,
    Blocked,
    Event,
    EventData,
    EventType,
    FieldKind,
    Hook,
    Run,
    RunCreation,
    RunStatus,
    Step,
    StepStatus,
    Wait,
    WaitStatus,
    field_kinds,
)
from world_aws.contract.world import LiveRun
from world_aws.errors import RunErased

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# The run item's last sign of life: the time of its last reservation, epoch microseconds
# (set by every position-taking write, so the live index needs no write per event).
PROGRESS_US = "prog_us"
DUE_US = "due_us"  # when the wait the run created last is due (LiveRun.due_at), set by its reservation
DUE_PREV_US = "due_prev_us"  # due_us before that reservation: restored if the create is refused
_MICROSECOND = timedelta(microseconds=1)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def parse_iso(text: object) -> datetime | None:
    return None if text is None else datetime.fromisoformat(str(text))


def epoch_us(moment: datetime) -> int:
    """``moment`` as whole microseconds since the epoch, exactly."""
    return (moment - _EPOCH) // _MICROSECOND


def from_epoch_us(value: object) -> datetime | None:
    return None if value is None else _EPOCH + int(str(value)) * _MICROSECOND


def _required_time(item: Item, name: str) -> datetime:
    moment = parse_iso(item.get(name))
    assert moment is not None, f"item {item.get(keys.SK)} has no {name}"
    return moment


# ----------------------------------------------------------------------------- runs


def run_item(run: Run, *, seq: int) -> Item:
    """The whole run item of a new run (run_created, or a creating run_started).

    Without the run's input: that is kept in the ``run_created`` event put in the
    same transaction (``keys.run_input_key``), so the item every reservation
    rewrites is the same size whatever the input (``run_from_item``). Every write of
    the item pays for each of its bytes, so it keeps nothing it can derive: its
    creation time is its runs-index sort key's, its last transition's time is its
    end's, start's or creation's (``run_from_item``), and no attributes when none.
    """
    created = iso(run.created_at)
    item: Item = {
        **keys.run_key(run.run_id),  # the run id is its pk's (``keys.run_id_of``): no copy
        "workflow_name": run.workflow_name,
        "status": run.status.value,
        "deployment_id": run.deployment_id,
        "spec_version": run.spec_version,
        "started_at": iso(run.started_at) if run.started_at else None,
        "seq": seq,
        PROGRESS_US: epoch_us(run.updated_at),
        keys.GSI1_PK: keys.RUNS_GSI_PK,
        keys.GSI1_SK: keys.runs_gsi_sk(created, run.run_id),
    }
    if run.attributes:
        item["attributes"] = dict(run.attributes)
    kept = retention_of(run)
    if kept is not None:  # its end puts it in the expiring index (keys.EXPIRING_INDEX)
        item[keys.XP_PK] = keys.EXPIRING_GSI_PK
        item[keys.RET_US] = int(kept.total_seconds()) * 1_000_000
    return item  # not in the live index: the reconciler's sweep marks it if it lasts (live_index)


def _run_created_at(item: Item) -> datetime:
    """A run item's creation time: its runs-index sort key's (``<created>#<run id>``)."""
    stored = parse_iso(item.get("created_at"))  # an item written before it was left out
    if stored is not None:
        return stored
    sort_key = item.get(keys.GSI1_SK)
    assert isinstance(sort_key, str), f"run item {item.get(keys.PK)} has no {keys.GSI1_SK}"
    moment = parse_iso(sort_key.split("#", 1)[0])
    assert moment is not None
    return moment


def _run_updated_at(item: Item, created_at: datetime) -> datetime:
    """A run's last transition: the latest of its end, start and creation (each sets one).

    An item written before ``updated_at`` was left out may hold one, older than a later
    transition's time: the latest is still the last transition's.
    """
    moments = [parse_iso(item.get(name)) for name in ("updated_at", "completed_at", "started_at")]
    return max([created_at, *(m for m in moments if m is not None)])


def live_run_from_item(item: Item) -> LiveRun:
    """The live-index view of a run item (``status``, ``prog_us``, ``live_sk``, ``due_us``): no payload."""
    mark = str(item[keys.LIVE_SK]).split("#", 1)[0]
    return LiveRun(
        run_id=keys.run_id_of(item),
        status=RunStatus(item["status"]),
        progress_at=run_progress_at(item),
        mark=datetime.fromisoformat(mark),
        due_at=run_due_at(item),
    )


def run_due_at(item: Item) -> datetime | None:
    """When the run's last created wait is due (``due_us``), None if it made none."""
    return from_epoch_us(item.get(DUE_US))


def run_progress_at(item: Item) -> datetime:
    """When a run item last took a log position (``prog_us``)."""
    progress = from_epoch_us(item.get(PROGRESS_US))
    # A run item written before prog_us existed: its last transition is the best known.
    return progress if progress is not None else _run_updated_at(item, _run_created_at(item))


def run_from_item(item: Item, reader: PayloadReader, created: Item | None = None) -> Run:
    """The run of a run item, with its input taken from ``created``, its ``run_created`` event item.

    Without ``created`` the run's ``input`` is ``None``: read without its input
    (``output`` and ``error`` are the run item's own, resolved as ``reader`` says).
    """
    if keys.ERASED_AT in item:  # a tombstone (erasure): the run is gone
        raise RunErased(f"run {keys.run_id_of(item)} was erased")
    created_at = _run_created_at(item)
    return Run(
        run_id=keys.run_id_of(item),
        workflow_name=str(item["workflow_name"]),
        status=RunStatus(item["status"]),
        deployment_id=str(item["deployment_id"]),
        spec_version=int(item["spec_version"]),
        input=None if created is None else reader.decode(_creation_input(created)),
        output=reader.decode(item.get("output")),
        error=reader.decode(item.get("error")),
        error_code=item.get("error_code"),
        attributes={str(k): str(v) for k, v in (item.get("attributes") or {}).items()},
        created_at=created_at,
        updated_at=_run_updated_at(item, created_at),
        started_at=parse_iso(item.get("started_at")),
        completed_at=parse_iso(item.get("completed_at")),
        blocked=blocked_from(item.get("blocked")),
    )


def _creation_input(created: Item) -> object:
    """The stored input (inline bytes or blob reference) of a ``run_created`` event item."""
    creation: dict[str, Any] = (created.get("data") or {}).get("creation") or {}
    return creation.get("input")


# ----------------------------------------------------------------------------- steps, hooks, waits


def step_item(step: Step, writer: PayloadWriter, *, position: int) -> Item:
    item: Item = {
        **keys.step_key(step.run_id, step.step_id),
        "step_id": step.step_id,
        "step_name": step.step_name,
        "status": step.status.value,
        "attempt": step.attempt,
        "input": writer.encode(step.input, ENTITY_INLINE_LIMIT),
        "created_at": iso(step.created_at),
        "cpos": position,
        "ver": position,
    }
    if step.started_at is not None:  # an owned (inline) step starts in its create
        item["started_at"] = iso(step.started_at)
    return item


def step_from_item(run_id: str, item: Item, reader: PayloadReader) -> Step:
    return Step(
        run_id=run_id,
        step_id=str(item["step_id"]),
        step_name=str(item["step_name"]),
        status=StepStatus(item["status"]),
        attempt=int(item["attempt"]),
        input=reader.decode(item.get("input")),
        output=reader.decode(item.get("output")),
        error=reader.decode(item.get("error")),
        retry_after=from_epoch_us(item.get("retry_after_us")),
        created_at=_required_time(item, "created_at"),
        started_at=parse_iso(item.get("started_at")),
        completed_at=parse_iso(item.get("completed_at")),
    )


def hook_item(hook: Hook, writer: PayloadWriter, *, position: int) -> Item:
    return {
        **keys.hook_key(hook.run_id, hook.hook_id),
        "hook_id": hook.hook_id,
        "token": hook.token,
        "metadata": writer.encode(hook.metadata, ENTITY_INLINE_LIMIT),
        "created_at": iso(hook.created_at),
        "cpos": position,
        "ver": position,
    }


def hook_is_live(item: Item | None) -> bool:
    return item is not None and item.get("disposed_at") is None


def hook_from_item(run_id: str, item: Item, reader: PayloadReader) -> Hook:
    return Hook(
        run_id=run_id,
        hook_id=str(item["hook_id"]),
        token=str(item["token"]),
        metadata=reader.decode(item.get("metadata")),
        created_at=_required_time(item, "created_at"),
    )


def token_item(token: str, run_id: str, hook_id: str) -> Item:
    return {**keys.token_key(token), "run_id": run_id, "hook_id": hook_id}


# A released token's item is kept, naming its last holder, this long (``hooks.resumed``:
# a caller's retry of a resume whose answer it lost), then deleted by the table's TTL.
TOKEN_KEEPS_SECONDS = 7 * 86400
TOKEN_RELEASED = "released_at"
# The release of a token (the hook's disposal, its run's end): the item stays, free to claim.
TOKEN_RELEASE = f"SET {TOKEN_RELEASED} = :released, {keys.TTL_ATTRIBUTE} = :expires"
# A token item that a hook_created may claim: none, or one released.
TOKEN_FREE = f"attribute_not_exists(pk) OR attribute_exists({TOKEN_RELEASED})"


def token_release_values(now: datetime) -> dict[str, object]:
    return {":released": iso(now), ":expires": int(now.timestamp()) + TOKEN_KEEPS_SECONDS}


def token_released(item: Item) -> bool:
    return TOKEN_RELEASED in item


def token_holder(item: Item | None) -> tuple[str, str] | None:
    """The (run id, hook id) a token item names, live or released; None: no item, or one a
    release wrote where none was (it names nobody)."""
    if item is None or "run_id" not in item:
        return None
    return str(item["run_id"]), str(item["hook_id"])


def wait_item(wait: Wait, *, position: int) -> Item:
    return {
        **keys.wait_key(wait.run_id, wait.wait_id),
        "wait_id": wait.wait_id,
        "status": wait.status.value,
        "resume_at": iso(wait.resume_at),
        "created_at": iso(wait.created_at),
        "cpos": position,
        "ver": position,
    }


def wait_from_item(run_id: str, item: Item) -> Wait:
    return Wait(
        run_id=run_id,
        wait_id=str(item["wait_id"]),
        status=WaitStatus(item["status"]),
        resume_at=_required_time(item, "resume_at"),
        created_at=_required_time(item, "created_at"),
        completed_at=parse_iso(item.get("completed_at")),
    )


# ----------------------------------------------------------------------------- events


def encode_data(
    data: EventData,
    writer: PayloadWriter,
    *,
    limit: int = EVENT_INLINE_LIMIT,
    leave_out: tuple[str, ...] = (),
) -> dict[str, Any]:
    """The set fields of ``data`` (but ``leave_out``) as a map attribute, large payloads offloaded.

    Each field is stored by its kind (``records.field_kinds``, from its declared type).
    """
    out: dict[str, Any] = {}
    for name, kind in field_kinds(type(data)).items():
        value = getattr(data, name)
        if value is None or value is False or name in leave_out:
            continue
        if kind is FieldKind.PAYLOAD:
            encoded = writer.encode(value, limit)
            if encoded is not None:
                out[name] = encoded
        elif kind is FieldKind.TIME:
            out[name] = iso(value)
        elif kind is FieldKind.CREATION:
            out[name] = {
                "workflow_name": value.workflow_name,
                "deployment_id": value.deployment_id,
                "spec_version": value.spec_version,
                "input": writer.encode(value.input, min(limit, RUN_INPUT_INLINE_LIMIT)),
            }
            if value.attributes:  # none: left out, as the run item does (every byte is billed)
                out[name]["attributes"] = dict(value.attributes)
        else:  # TEXT, a NUMBER, or a FLAG that is true
            out[name] = value
    return out


def decode_data(etype: EventType, stored: dict[str, Any] | None, reader: PayloadReader) -> EventData:
    """``etype``'s record of a map attribute; payloads ``None`` (creation input ``b""``) when not wanted.

    Only the record's fields are read: anything else the map holds is not this type's.
    """
    record = DATA_RECORDS[etype]
    stored = stored or {}
    values: dict[str, Any] = {}
    for name, kind in field_kinds(record).items():
        raw = stored.get(name)
        if kind is FieldKind.PAYLOAD:
            values[name] = reader.decode(raw)
        elif kind is FieldKind.TIME:
            values[name] = parse_iso(raw)
        elif kind is FieldKind.CREATION:
            values[name] = None if raw is None else _creation(raw, reader)
        elif kind is FieldKind.FLAG:
            values[name] = bool(raw)
        elif kind is FieldKind.NUMBER:
            values[name] = None if raw is None else int(raw)
        else:
            values[name] = None if raw is None else str(raw)
    return record(**values)


def _creation(stored: dict[str, Any], reader: PayloadReader) -> RunCreation:
    return RunCreation(
        workflow_name=str(stored["workflow_name"]),
        deployment_id=str(stored["deployment_id"]),
        spec_version=int(stored["spec_version"]),
        input=reader.decode(stored.get("input")) or b"",
        attributes={str(k): str(v) for k, v in (stored.get("attributes") or {}).items()},
    )


def event_item(event: Event, writer: PayloadWriter) -> Item:
    item: Item = {
        **keys.event_key(event.run_id, event.position),
        "pos": event.position,
        "type": event.type.value,
        "created_at": iso(event.created_at),
        "data": encode_data(event.data, writer),
    }
    if event.correlation_id is not None:
        item["cid"] = event.correlation_id
    return item


def noop_item(run_id: str, position: int, now: datetime) -> Item:
    """The seal of a reserved position that will hold no event (contract §3.2)."""
    return {
        **keys.event_key(run_id, position),
        "pos": position,
        "type": EventType.NOOP.value,
        "created_at": iso(now),
    }


def event_from_item(run_id: str, item: Item, reader: PayloadReader) -> Event:
    """The event of a single event item (not a batch: ``events_from_item``)."""
    return _event_of(run_id, int(item["pos"]), item, reader)


def _event_of(
    run_id: str, position: int, stored: Item, reader: PayloadReader, at: object = None, owner: object = None
) -> Event:
    """``at``, ``owner``: what a batch's events share (``BATCH_AT``, ``BATCH_OWNER``), kept once for all."""
    shared = from_epoch_us(at) if at is not None and "created_at" not in stored else None
    etype = EventType(stored["type"])
    return Event(
        run_id=run_id,
        position=position,
        type=etype,
        correlation_id=stored.get("cid"),
        created_at=shared if shared is not None else _required_time(stored, "created_at"),
        data=decode_data(etype, _with_owner(stored.get("data"), owner), reader),
    )


# -- batch event items (``events.append_after``) ---------------------------------------
#
# An append's consecutive events share one item when they fit: it is keyed by its
# *last* position (so a Query from any position it covers finds it) and holds
# ``pos`` (its first position), ``last`` and ``evts``, the events in position order,
# each the map a single event item holds without its key and position. A write is
# billed per item, so two small events in one item cost half of two items; and per
# byte, so events stamped alike (an append's are) keep their time once, as ``at``
# (epoch µs), instead of an ISO string each (an event stamped otherwise, such as a
# carried one, keeps its own), and the steps' owner that several events name is kept
# once, as ``own``, each of those events naming it ``""``.

# What a batch item may hold of payloads: DynamoDB's item limit is 400 KB, an inline
# payload up to 128 KiB (``EVENT_INLINE_LIMIT``); the rest is margin for names.
BATCH_ITEM_BYTES = 300 * 1024
_EVENT_KEYS = (keys.PK, keys.SK, "pos")
BATCH_AT = "at"
BATCH_OWNER = "own"


def batch_items(event_items: list[Item]) -> list[Item]:
    """Consecutive event items grouped into as few items as fit ``BATCH_ITEM_BYTES`` each.

    A group of one stays a plain event item, so a reader of one position finds it as before.
    """
    groups: list[list[Item]] = []
    size = 0
    for item in event_items:
        weight = stored_bytes(item)
        if groups and size + weight <= BATCH_ITEM_BYTES:
            groups[-1].append(item)
            size += weight
        else:
            groups.append([item])
            size = weight
    return [group[0] if len(group) == 1 else _batch_item(group) for group in groups]


def _batch_item(group: list[Item]) -> Item:
    first, last = group[0], group[-1]
    shared = _most_common([item.get("created_at") for item in group])
    owners = [(item.get("data") or {}).get("owner") for item in group]
    # Kept once, its events name it "": an event whose own owner is "" would read back as it.
    owner = None if "" in owners else _most_common(owners)
    events: list[Item] = []
    for item in group:
        event = {k: v for k, v in item.items() if k not in _EVENT_KEYS}
        if shared is not None and event.get("created_at") == shared:
            del event["created_at"]
        data = event.get("data")
        if owner is not None and data and data.get("owner") == owner:
            event["data"] = {**data, "owner": ""}
        events.append(event)
    batch: Item = {
        keys.PK: first[keys.PK],
        keys.SK: last[keys.SK],
        "pos": first["pos"],
        "last": last["pos"],
        "evts": events,
    }
    moment = parse_iso(shared) if shared is not None else None
    if moment is not None:
        batch[BATCH_AT] = epoch_us(moment)
    if owner is not None:
        batch[BATCH_OWNER] = owner
    return batch


def _most_common(values: list[Any]) -> Any:
    """The value most of ``values`` hold (the latest of a tie), if at least two hold it; else None."""
    counts: dict[Any, int] = {}
    for value in values:
        if isinstance(value, str) and value:
            counts[value] = counts.get(value, 0) + 1
    best = max(counts.items(), key=lambda kv: kv[1], default=None)
    if best is None or best[1] < 2:
        return None
    return [value for value, count in counts.items() if count == best[1]][-1]


def unbatch(item: Item) -> list[Item]:
    """The single event items a batch item (``batch_items``) was made of; ``[item]`` for a single one."""
    stored: list[Item] | None = item.get("evts")
    if stored is None:
        return [item]
    first, _ = item_span(item)
    moment = from_epoch_us(item.get(BATCH_AT))
    shared = iso(moment) if moment is not None else None
    out: list[Item] = []
    for offset, event in enumerate(stored):
        single: Item = {keys.PK: item[keys.PK], keys.SK: keys.event_sk(first + offset), "pos": first + offset}
        single.update(event)
        if shared is not None and "created_at" not in event:
            single["created_at"] = shared
        data = _with_owner(event.get("data"), item.get(BATCH_OWNER))
        if data is not None:
            single["data"] = data
        out.append(single)
    return out


def _with_owner(data: Item | None, owner: object) -> Item | None:
    """An event's stored data with the batch's owner (``BATCH_OWNER``) in place of ``""``."""
    if data is not None and data.get("owner") == "" and isinstance(owner, str):
        return {**data, "owner": owner}
    return data


def item_span(item: Item) -> tuple[int, int]:
    """The first and last position an event item (single, batch or noop) covers."""
    first = int(item["pos"])
    return first, int(item.get("last", first))


def events_from_item(run_id: str, item: Item, reader: PayloadReader, *, since: int = 0) -> list[Event]:
    """The events an event item holds at positions from ``since`` on; none for a ``noop``."""
    first, _ = item_span(item)
    stored: list[Item] = item.get("evts", [item])
    at, owner = item.get(BATCH_AT), item.get(BATCH_OWNER)
    return [
        _event_of(run_id, first + offset, event, reader, at, owner)
        for offset, event in enumerate(stored)
        if first + offset >= since and event.get("type") != EventType.NOOP.value
    ]


def stored_bytes(value: object) -> int:
    """About what ``value`` takes in an item (its bytes and strings; 8 for anything else)."""
    if isinstance(value, bytes | str):
        return len(value)
    if isinstance(value, dict):
        return sum(len(str(k)) + stored_bytes(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return sum(stored_bytes(v) for v in value)
    return 8


def blocked_item(blocked: Blocked) -> Item:
    """A held run's mark as the run item keeps it (``blocked``, a map; absent values left out)."""
    item: Item = {
        "deployment_id": blocked.deployment_id,
        "position": blocked.position,
        "message": blocked.message,
        "since": iso(blocked.since),
    }
    for name in ("at", "expected", "actual", "released_to"):
        value = getattr(blocked, name)
        if value is not None:
            item[name] = value
    return item


def blocked_from(raw: object) -> Blocked | None:
    """The mark of a run item's ``blocked`` map (None when the item has none)."""
    if not isinstance(raw, dict):
        return None
    since = parse_iso(raw.get("since"))
    assert since is not None, "a blocked mark has its time"

    def text(name: str) -> str | None:
        value = raw.get(name)
        return None if value is None else str(value)

    return Blocked(
        deployment_id=str(raw["deployment_id"]),
        position=int(raw["position"]),
        message=str(raw["message"]),
        since=since,
        at=text("at"),
        expected=text("expected"),
        actual=text("actual"),
        released_to=text("released_to"),
    )
