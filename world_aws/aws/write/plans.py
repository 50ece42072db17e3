"""Each event type's DynamoDB plan: what it reads first, how it takes its position, its actions by name.

One definition per event type (``PLANS``), which the writers (``run_events``,
``step_events``, ``hook_events``, ``wait_events``, ``sequencer``) follow:

* ``reads``: the items read first, in one consistent ``BatchGetItem`` (none: the
  reservation and the commit's conditions are the whole rule);
* ``reservation``: how the position is taken (§8 "Why the fence is exact"), which
  says whether it is *fenced* (refused on a terminal run);
* ``actions``: the commit's actions by name, in order, each with its kind (a
  ``ConditionCheck`` bills reads, not writes) and, when it is written only for some
  requests, the option that adds it;
* ``refusal``: the action whose ``ALL_OLD`` image names the rejection when an entity
  condition cancels the commit (``Cancelled.item_of``); a refused ``EVENT`` action
  always means the position was sealed (``PositionTaken``);
* ``releases_hooks``: a run's end disposes of its live hooks after its commit; it
  queries them only when its run item says the run made one (``keys.HOOKED``).

Round trips and write units per event follow from the plan (``round_trips``,
``write_units``) and are checked against moto in ``tests/aws/test_event_plans.py``,
which also checks that ARCHITECTURE §8's table is ``round_trip_table()``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from world_aws.aws.codec.dynamo import Cancelled, Item
from world_aws.contract.records import EventType

# Action names (``dynamo.Action.name``): what each action of a commit is for.
EVENT = "event"  # the event item's put at its reserved position (refused: a reader sealed it)
RUN = "run"  # the run item: its creation, or an append's positions (``take_positions_action``)
ENTITY = "entity"  # the step, hook or wait item
# A dispatched step's ``pend#`` marker: put with its create, or with the owned retry that
# hands an inline step to a retry message; deleted by its outcome.
PENDING = "pending"
TOKEN = "token"  # a hook's ``token#`` item (claimed by its create, released by its disposal)
RESUME = "resume"  # a hook resume's ``resume#`` dedup item
STARTED = "started"  # ``run_started``'s event put beside a creating run's (the resilient start)
OWN = "own"  # the run item's ``own#`` entry of a step written without its item (``materialize``)


class Reservation(StrEnum):
    """How an event takes its position."""

    IN_COMMIT = "in commit"  # the run item's put is in the commit (run_created): nothing to reserve
    FENCED = "fenced"  # UpdateItem ``seq + 1`` on a run that is not terminal (contract §3.1)
    UNFENCED = "unfenced"  # UpdateItem ``seq + 1`` on any run (a step's outcome may follow its run's end)
    TRANSITION = "transition"  # UpdateItem ``seq + 1`` that changes the status, from the allowed ones


class Kind(StrEnum):
    PUT = "Put"
    UPDATE = "Update"
    DELETE = "Delete"
    CHECK = "ConditionCheck"


@dataclass(frozen=True, slots=True)
class PlannedAction:
    name: str
    kind: Kind
    when: str | None = None  # the option that adds it; None: always


@dataclass(frozen=True, slots=True)
class EventPlan:
    """The DynamoDB plan of one event type (module docstring)."""

    type: EventType
    reads: tuple[str, ...]
    reservation: Reservation
    actions: tuple[PlannedAction, ...]
    refusal: str | None
    releases_hooks: bool = False
    # Committed as the run item's ``tail`` when it fits one write unit (§8 "The tail"):
    # its actions are then plain writes in order, the first the commit point.
    tail: bool = False

    @property
    def fenced(self) -> bool:
        """Whether the reservation is refused on a terminal run (``Sequencer.reserve``'s ``fenced``)."""
        return self.reservation is Reservation.FENCED

    def refused_item(self, cancelled: Cancelled) -> Item | None:
        """The ``ALL_OLD`` image of the action that names this event's refusal (None: no item)."""
        assert self.refusal is not None, f"{self.type.value} has no entity refusal"
        return cancelled.item_of(self.refusal)

    def refused_by(self, cancelled: Cancelled) -> bool:
        """Whether the action that names this event's refusal failed its condition."""
        assert self.refusal is not None, f"{self.type.value} has no entity refusal"
        return cancelled.refused_by(self.refusal)

    def actions_for(self, options: Iterable[str] = ()) -> list[PlannedAction]:
        chosen = set(options)
        return [a for a in self.actions if a.when is None or a.when in chosen]

    def is_transaction(self, options: Iterable[str] = ()) -> bool:
        """A commit of one action (a run transition's event), or a tail, is plain writes."""
        return not self.tail and len(self.actions_for(options)) > 1

    def round_trips(
        self, options: Iterable[str] = (), *, live_hooks: int = 0, made_hooks: bool | None = None
    ) -> RoundTrips:
        """The success path's calls: the read, the reservation, the commit, then the hooks' release.

        ``made_hooks``: whether the run ever made a hook (its run item is marked ``hooked``),
        so its end queries them; None: it did if it has ``live_hooks``.
        """
        options = tuple(options)
        made = live_hooks > 0 if made_hooks is None else made_hooks
        reads = 1 if self.reads else 0
        writes = 0 if self.reservation is Reservation.IN_COMMIT else 1
        transactions = 0
        if self.is_transaction(options):
            transactions = 1
        else:
            writes += len(self.actions_for(options))
        if self.releases_hooks and made:
            # One Query of the run's hooks, then per live hook its disposal and its token's.
            reads += 1
            writes += 2 * live_hooks
        return RoundTrips(reads, writes, transactions)

    def write_units(self, options: Iterable[str] = (), *, live_hooks: int = 0) -> int:
        """WRU of the success path for items of at most 1 KB, without index upkeep.

        1 per item write, twice inside a transaction; a ``ConditionCheck`` bills read
        units; a released hook is two plain writes (its disposal, its token's).
        """
        options = tuple(options)
        reservation = 0 if self.reservation is Reservation.IN_COMMIT else 1
        actions = self.actions_for(options)
        factor = 2 if self.is_transaction(options) else 1
        released = 2 * live_hooks if self.releases_hooks else 0
        return reservation + factor * sum(a.kind is not Kind.CHECK for a in actions) + released


@dataclass(frozen=True, slots=True)
class RoundTrips:
    reads: int
    writes: int
    transactions: int

    @property
    def total(self) -> int:
        return self.reads + self.writes + self.transactions


_EVENT_PUT = PlannedAction(EVENT, Kind.PUT)
_RUN_AND_ENTITY = ("run", "entity")


def _fence(etype: EventType) -> Reservation:
    """A child event's reservation: fenced as its record says (``records``, ``FENCED``: contract §3.1)."""
    return Reservation.FENCED if etype.record.FENCED else Reservation.UNFENCED


def _plan(
    etype: EventType,
    *actions: PlannedAction,
    reads: tuple[str, ...] = (),
    refusal: str | None = ENTITY,
) -> EventPlan:
    """A child event's plan: its event put, then ``actions``."""
    return EventPlan(etype, reads, _fence(etype), (_EVENT_PUT, *actions), refusal)


def _transition(etype: EventType) -> EventPlan:
    """A run transition: the status changes in the reservation; an end releases the run's hooks."""
    return EventPlan(etype, (), Reservation.TRANSITION, (_EVENT_PUT,), None, etype.terminates_run)


def _outcome(etype: EventType) -> EventPlan:
    """A step's outcome: unfenced (a running step may report after its run ended); a dispatched one
    also deletes its marker."""
    return _plan(
        etype,
        PlannedAction(ENTITY, Kind.UPDATE),
        PlannedAction(PENDING, Kind.DELETE, when="dispatched"),
    )


PLANS: dict[EventType, EventPlan] = {
    EventType.RUN_CREATED: EventPlan(
        EventType.RUN_CREATED,
        (),
        Reservation.IN_COMMIT,
        (PlannedAction(RUN, Kind.PUT), _EVENT_PUT),
        refusal=RUN,  # the run exists: Conflict
        tail=True,  # the run item's put holds event 1; a large input inline: one transaction
    ),
    EventType.RUN_STARTED: _transition(EventType.RUN_STARTED),
    EventType.RUN_COMPLETED: _transition(EventType.RUN_COMPLETED),
    EventType.RUN_FAILED: _transition(EventType.RUN_FAILED),
    EventType.RUN_CANCELLED: _transition(EventType.RUN_CANCELLED),
    # A dispatched create puts its marker; an owned one (inline) none.
    EventType.STEP_CREATED: _plan(
        EventType.STEP_CREATED,
        PlannedAction(ENTITY, Kind.PUT),
        PlannedAction(PENDING, Kind.PUT, when="dispatched"),
    ),
    # Read first: TooEarly needs retry_after, and the consumer needs the input.
    EventType.STEP_STARTED: _plan(
        EventType.STEP_STARTED, PlannedAction(ENTITY, Kind.UPDATE), reads=_RUN_AND_ENTITY
    ),
    # An owned (inline) step's retry hands it to a retry message: from it, a marker
    # (``rules.counts_as_pending``) until the outcome the message's consumer writes.
    EventType.STEP_RETRYING: _plan(
        EventType.STEP_RETRYING,
        PlannedAction(ENTITY, Kind.UPDATE),
        PlannedAction(PENDING, Kind.PUT, when="owned"),
    ),
    EventType.STEP_COMPLETED: _outcome(EventType.STEP_COMPLETED),
    EventType.STEP_FAILED: _outcome(EventType.STEP_FAILED),
    # Read first: the token's holder and an existing hook decide between a create and a conflict.
    # The commit checks the run is still live: an end between the reservation and the commit
    # refuses the hook (RunExpired) rather than leave it and its token past the end's release.
    EventType.HOOK_CREATED: _plan(
        EventType.HOOK_CREATED,
        PlannedAction(ENTITY, Kind.PUT),
        PlannedAction(TOKEN, Kind.PUT),
        PlannedAction(RUN, Kind.CHECK),
        reads=_RUN_AND_ENTITY,
    ),
    EventType.HOOK_RECEIVED: _plan(
        EventType.HOOK_RECEIVED,
        PlannedAction(ENTITY, Kind.CHECK),
        PlannedAction(RESUME, Kind.PUT, when="resume_id"),
        reads=(*_RUN_AND_ENTITY, "resume"),
        refusal=RESUME,  # a resume with this id was written first: its event is the answer
    ),
    EventType.HOOK_DISPOSED: _plan(
        EventType.HOOK_DISPOSED,
        PlannedAction(ENTITY, Kind.UPDATE),
        PlannedAction(TOKEN, Kind.UPDATE),
        reads=_RUN_AND_ENTITY,
    ),
    EventType.WAIT_CREATED: _plan(EventType.WAIT_CREATED, PlannedAction(ENTITY, Kind.PUT)),
    EventType.WAIT_COMPLETED: _plan(
        EventType.WAIT_COMPLETED,
        PlannedAction(ENTITY, Kind.UPDATE),
        reads=_RUN_AND_ENTITY,
    ),
    # The log alone: the fenced reservation, then the event's plain put (no entity, no refusal).
    EventType.PATCH_APPLIED: _plan(EventType.PATCH_APPLIED, refusal=None),
}


def plan(etype: EventType) -> EventPlan:
    """The plan of a type a client writes (``hook_conflict`` and ``noop`` are the World's own)."""
    return PLANS[etype]


@dataclass(frozen=True, slots=True)
class AppendPlan:
    """``events.append_after``'s plan: nothing read first; a tail, or one ``TransactWriteItems``.

    Its actions: ``RUN`` (the run item: positions ``after + 1..after + n`` on ``seq =
    :after`` and the fence, the ``own#`` entries set and removed, a run start's or end's
    changes), the events in as few batch items as fit (``EVENT``, ``items.batch_items``),
    then each step write's entity actions: none for an owned create written without its
    item or an owned outcome of such a step (their entry is in ``RUN``); ``ENTITY`` for
    an owned write of a step with an item; ``ENTITY`` and ``PENDING`` for a dispatched
    create. Any cancellation writes nothing (the caller writes one by one).

    A *tail* append (no entity action, one batch item within ``step_events.TAIL_UNITS``) is not a
    transaction: ``RUN`` alone, an ``UpdateItem`` that also keeps the batch item as the run
    item's ``tail`` (its commit point), then the batch item's own ``PutItem`` (ARCHITECTURE
    §8 "The tail").
    """

    @staticmethod
    def is_tail(*, batch_items: int = 1, entity_actions: int = 0) -> bool:
        return batch_items == 1 and entity_actions == 0

    def round_trips(self, *, batch_items: int = 1, entity_actions: int = 0) -> RoundTrips:
        if self.is_tail(batch_items=batch_items, entity_actions=entity_actions):
            return RoundTrips(0, 2, 0)
        return RoundTrips(0, 0, 1)

    def write_units(self, *, batch_items: int = 1, entity_actions: int = 0) -> int:
        """WRU for items of at most 1 KB (the run item with its tail too): a transaction's actions twice."""
        if self.is_tail(batch_items=batch_items, entity_actions=entity_actions):
            return 2
        return 2 * (1 + batch_items + entity_actions)


APPEND = AppendPlan()

# ARCHITECTURE §8's rows of appends: (label, batch items, entity actions).
APPEND_ROWS: tuple[tuple[str, int, int], ...] = (
    ("append_after: an owned outcome + the next owned create (a sequential inline step)", 1, 0),
    ("append_after: run_started + the first owned create", 1, 0),
    ("append_after: an owned outcome + a dispatched create", 1, 2),
)


# ARCHITECTURE §8's rows, one per event on its success path: (label, type, options, live hooks).
TABLE_ROWS: tuple[tuple[str, EventType, tuple[str, ...], int], ...] = (
    ("run_created", EventType.RUN_CREATED, (), 0),
    ("run_started", EventType.RUN_STARTED, (), 0),
    ("run_completed, 1 live hook", EventType.RUN_COMPLETED, (), 1),
    ("run_failed", EventType.RUN_FAILED, (), 0),
    ("run_cancelled", EventType.RUN_CANCELLED, (), 0),
    ("step_created (dispatched)", EventType.STEP_CREATED, ("dispatched",), 0),
    ("step_started", EventType.STEP_STARTED, (), 0),
    ("step_retrying", EventType.STEP_RETRYING, (), 0),
    ("step_retrying (owned: to its retry message)", EventType.STEP_RETRYING, ("owned",), 0),
    ("step_completed (dispatched)", EventType.STEP_COMPLETED, ("dispatched",), 0),
    ("step_failed (dispatched)", EventType.STEP_FAILED, ("dispatched",), 0),
    ("hook_created", EventType.HOOK_CREATED, (), 0),
    ("hook_received, with a resume_id", EventType.HOOK_RECEIVED, ("resume_id",), 0),
    ("hook_disposed", EventType.HOOK_DISPOSED, (), 0),
    ("wait_created", EventType.WAIT_CREATED, (), 0),
    ("wait_completed", EventType.WAIT_COMPLETED, (), 0),
    ("patch_applied", EventType.PATCH_APPLIED, (), 0),
)


def round_trip_table() -> str:
    """ARCHITECTURE §8's table of single events, from the plans (``TABLE_ROWS``)."""
    lines = [
        "| event (plan) | reads | writes | transactions | total | WRU (items ≤ 1 KB) |",
        "|---|--:|--:|--:|--:|--:|",
    ]
    for label, etype, options, hooks in TABLE_ROWS:
        event_plan = PLANS[etype]
        trips = event_plan.round_trips(options, live_hooks=hooks)
        lines.append(
            f"| {label} | {trips.reads} | {trips.writes} | {trips.transactions} | {trips.total} | "
            f"{event_plan.write_units(options, live_hooks=hooks)} |"
        )
    for label, batch_items, entity_actions in APPEND_ROWS:
        trips = APPEND.round_trips(batch_items=batch_items, entity_actions=entity_actions)
        lines.append(
            f"| {label} | {trips.reads} | {trips.writes} | {trips.transactions} | {trips.total} | "
            f"{APPEND.write_units(batch_items=batch_items, entity_actions=entity_actions)} |"
        )
    return "\n".join(lines)
