"""``DynamoScheduleStore``: one item per schedule in the world's table, replaced by compare-and-set.

Item ``pk = schedule#<name>``, ``sk = schedule`` holding the last tick handled
(ISO-8601 UTC text, microseconds), the run of the last tick started and three
counters. ``get`` is one consistent ``GetItem``; ``advance`` one conditional
``PutItem`` (the scheduler writes it once per schedule per pass that found a
due tick, and not at all otherwise).
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.contract.clock import Clock
from world_aws.contract.schedules import ScheduleState


class DynamoScheduleStore:
    """Schedule states in the world's table."""

    def __init__(self, table: Table, clock: Clock) -> None:
        self._table = table
        self._clock = clock

    def get(self, name: str) -> ScheduleState | None:
        """The state of ``name``: one consistent GetItem."""
        item = self._table.get(keys.schedule_key(name))
        return None if item is None else _state_from_item(name, item)

    def advance(self, state: ScheduleState, *, expected_tick: datetime | None) -> bool:
        """Replace the state if its stored ``last_tick`` is ``expected_tick``: one conditional PutItem."""
        item: dict[str, object] = {
            **keys.schedule_key(state.name),
            "last_tick": items.iso(state.last_tick),
            "started": state.started,
            "skipped": state.skipped,
            "missed": state.missed,
            "updated_at": items.iso(self._clock.now()),
        }
        if state.last_run_id is not None:
            item["last_run_id"] = state.last_run_id
        # Timeline: two passes read the same last_tick and both start the same (idempotent)
        # runs; the first put wins, the second finds last_tick moved and writes nothing.
        if expected_tick is None:
            condition, values = f"attribute_not_exists({keys.PK})", None
        else:
            condition, values = "last_tick = :expected", {":expected": items.iso(expected_tick)}
        try:
            self._table.put(item, condition=condition, values=values)
        except ConditionFailed:
            return False
        return True


def _state_from_item(name: str, item: Item) -> ScheduleState:
    last_tick = items.parse_iso(item["last_tick"])
    assert last_tick is not None  # written by advance, always present
    run_id = item.get("last_run_id")
    return ScheduleState(
        name=name,
        last_tick=last_tick,
        last_run_id=None if run_id is None else str(run_id),
        started=int(item.get("started", 0)),
        skipped=int(item.get("skipped", 0)),
        missed=int(item.get("missed", 0)),
        updated_at=items.parse_iso(item.get("updated_at")),
    )
