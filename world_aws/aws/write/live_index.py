"""The sparse ``live`` index of runs to look at (``runs.list_live`` / ``mark_live`` / ``sweep_created``).

A run item enters the index when it is first marked: it then carries ``live_pk =
"live"`` and ``live_sk = <mark>#<run_id>`` until the transition that makes it
terminal, which removes both in its reserving ``UpdateItem``. DynamoDB keeps a GSI
entry only for items that have its key attributes, so the index holds only runs
still going, and it is written when a run enters it, when a mark moves and when the
run ends: events bump ``seq`` and ``prog_us`` on the run item, which the index does
not project (``KEYS_ONLY``).

A run is not marked at its creation. The reconciler's sweep (``sweep_created``)
reads the runs index (``runs_by_created``) from a cursor kept in one item
(``keys.SWEEP_KEY``), at a lag behind the clock, and marks the runs still going;
so a run that ends before the sweep reaches it (the usual run) never writes the
live index at all (ARCHITECTURE §6 "The reconciler").

``list_live`` is one Query of the index (at most ``limit`` keys, marks before the
bound) and one consistent ``BatchGetItem`` of those run items, which give the
status, the last progress and the current mark (the index is eventually
consistent: a run that has just ended or been re-marked is left out here).
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.aws.write.sequencer import NOT_TERMINAL, TERMINAL_STATUSES
from world_aws.contract.records import RunStatus
from world_aws.contract.world import LiveRun, Sweep
from world_aws.errors import BadInput


def list_live(table: Table, *, marked_before: datetime, limit: int) -> list[LiveRun]:
    """Non-terminal runs whose mark is before ``marked_before``, earliest first (see ``RunStore``).

    Raises:
        BadInput: ``limit`` below 1.
    """
    if limit < 1:
        raise BadInput(f"limit must be at least 1, not {limit}")
    # "<mark>#<run_id>" < "<bound>" exactly when mark < bound: the ISO texts have one length.
    page = table.query_page(
        f"{keys.LIVE_PK} = :live AND {keys.LIVE_SK} < :before",
        {":live": keys.LIVE_GSI_PK, ":before": items.iso(marked_before)},
        index=keys.LIVE,
        limit=limit,
    )
    if not page.items:
        return []
    found = table.batch_get([{keys.PK: str(i[keys.PK]), keys.SK: str(i[keys.SK])} for i in page.items])
    live = [items.live_run_from_item(item) for item in found if keys.LIVE_SK in item]
    return sorted(
        (run for run in live if not run.status.terminal and run.mark < marked_before),
        key=lambda run: (run.mark, run.run_id),
    )


def mark_live(table: Table, run_id: str, *, mark: datetime) -> bool:
    """Mark a non-terminal run, entering it in the index: one conditional ``UpdateItem``.

    False if the run ended or is missing.
    """
    try:
        # Timeline: the run's terminal transition sets its status and removes live_pk in
        # one write; a mark written after it fails this condition, so an ended run never
        # re-enters the index.
        table.update(
            keys.run_key(run_id),
            # Entering the index, it enters the deployment index too (deployment_index).
            f"SET {keys.LIVE_PK} = :live, {keys.LIVE_SK} = :sk, "
            f"{keys.DEP_PK} = if_not_exists({keys.DEP_PK}, deployment_id)",
            condition=f"attribute_exists(pk) AND {NOT_TERMINAL}",
            names={"#status": "status"},
            values={
                ":live": keys.LIVE_GSI_PK,
                ":sk": keys.live_sk(items.iso(mark), run_id),
                **TERMINAL_STATUSES,
            },
            return_values="NONE",
        )
    except ConditionFailed:
        return False
    return True


CURSOR = "last_read"  # the sweep cursor item's attribute: the last runs-index key read


def sweep_created(table: Table, *, created_before: datetime, limit: int) -> Sweep:
    """Mark the runs still going created before ``created_before`` past the cursor (see ``RunStore``).

    One read of the cursor item, Query pages of ``runs_by_created`` (keys and the
    workflow name: ~100 B an entry), eventually consistent ``BatchGetItem``s of the
    run items (0.5 RRU each), one ``mark_live`` per run still going and not in the
    index, and one conditional write of the cursor, which only moves forward.

    Raises:
        BadInput: ``limit`` below 1.
    """
    if limit < 1:
        raise BadInput(f"limit must be at least 1, not {limit}")
    cursor_item = table.get(keys.SWEEP_KEY)
    cursor = str(cursor_item[CURSOR]) if cursor_item and CURSOR in cursor_item else None
    # "<created>#<run_id>" < "<bound>" exactly when created < bound: the ISO texts have one length.
    bound = items.iso(created_before)
    examined: list[str] = []
    enrolled: list[LiveRun] = []
    start: Item | None = None
    caught_up = False
    while not caught_up and len(examined) < limit:
        if cursor is None:
            condition, values = f"{keys.GSI1_PK} = :runs AND {keys.GSI1_SK} < :before", {":before": bound}
        else:
            condition, values = f"{keys.GSI1_PK} = :runs AND {keys.GSI1_SK} > :after", {":after": cursor}
        page = table.query_page(
            condition,
            {":runs": keys.RUNS_GSI_PK, **values},
            index=keys.RUNS_INDEX,
            limit=limit - len(examined),
            start_key=start,
        )
        entries = [i for i in page.items if str(i[keys.GSI1_SK]) < bound]
        caught_up = page.last_key is None or len(entries) < len(page.items)
        start = page.last_key
        run_keys = [{keys.PK: str(i[keys.PK]), keys.SK: str(i[keys.SK])} for i in entries]
        found = {str(i[keys.PK]): i for i in table.batch_get(run_keys, consistent=False)} if run_keys else {}
        for entry in entries:
            examined.append(str(entry[keys.GSI1_SK]))
            item = found.get(str(entry[keys.PK]))
            if item is None or RunStatus(item["status"]).terminal or keys.LIVE_SK in item:
                continue  # it ended, or the index has it already
            progress = items.run_progress_at(item)
            if mark_live(table, keys.run_id_of(item), mark=progress):
                enrolled.append(
                    LiveRun(
                        keys.run_id_of(item),
                        RunStatus(item["status"]),
                        progress,
                        progress,
                        items.run_due_at(item),
                    )
                )
    if examined:
        _move_cursor(table, examined[-1])
    return Sweep(examined=len(examined), enrolled=enrolled, caught_up=caught_up)


def _move_cursor(table: Table, position: str) -> None:
    """Set the sweep cursor to ``position`` unless a concurrent sweep moved it further."""
    try:
        table.update(
            keys.SWEEP_KEY,
            f"SET {CURSOR} = :pos",
            condition=f"attribute_not_exists({CURSOR}) OR {CURSOR} < :pos",
            values={":pos": position},
            return_values="NONE",
        )
    except ConditionFailed:
        pass  # a concurrent sweep got further: its cursor stands
