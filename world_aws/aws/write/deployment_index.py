"""The sparse ``runs_by_deployment`` index: live runs by the deployment they are pinned to, and held runs.

A run item gets ``dep_pk = <deployment id>`` when it enters the live index
(``live_index.mark_live``: the reconciler's sweep marks the runs still going some
``sweep_lag_seconds`` after their creation), and loses it in the write that ends
it (``run_events``). So the usual run, which ends before the sweep reaches it,
never writes this index, as it never writes the live one: no step or run of the
write path pays for it. DynamoDB keeps a GSI entry only for items that have its
key, and the index projects keys only: the step events rewrite ``seq`` and
``prog_us``, which it does not project.

``count_live`` pages the keys under one deployment (a 1 MB page holds some ten
thousand keys) and adds the runs the sweep has not reached (read from the runs
index past its cursor): what ``world-aws deployments`` shows and ``retire`` asks. A held
run (``worker/holding.py``) moves under ``#held`` (``hold``) and back under the
deployment it is released onto (``release``); ``list_blocked`` reads the keys
under ``#held`` and the run items.
"""

from __future__ import annotations

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.aws.codec.payloads import PayloadReader
from world_aws.aws.write import live_index
from world_aws.contract.records import Blocked, ResolveData, Run, RunStatus
from world_aws.contract.world import BlobStore
from world_aws.errors import BadInput

_RUNNING = {"#status": "status"}


def count_live(table: Table, deployment_id: str) -> int:
    """How many runs not yet ended (and not held) are pinned to ``deployment_id``.

    The keys under the deployment in the index (the runs the reconciler's sweep has
    passed), and the runs created since the sweep's cursor, read from the runs index
    and their items (at most ``sweep_lag_seconds`` of runs, if the reconciler keeps up).
    """
    count, start = 0, None
    while True:
        page = table.query_page(
            f"{keys.DEP_PK} = :d", {":d": deployment_id}, index=keys.DEPLOYMENT_INDEX, start_key=start
        )
        count += len(page.items)
        start = page.last_key
        if start is None:
            break
    return count + _unswept(table, deployment_id)


def _unswept(table: Table, deployment_id: str) -> int:
    """The runs past the sweep cursor still going on ``deployment_id`` and not in the index yet."""
    cursor_item = table.get(keys.SWEEP_KEY)
    cursor = str(cursor_item[live_index.CURSOR]) if cursor_item and live_index.CURSOR in cursor_item else None
    condition, values = f"{keys.GSI1_PK} = :runs", {":runs": keys.RUNS_GSI_PK}
    if cursor is not None:
        condition, values = f"{condition} AND {keys.GSI1_SK} > :after", {**values, ":after": cursor}
    count, start = 0, None
    while True:
        page = table.query_page(condition, values, index=keys.RUNS_INDEX, start_key=start)
        wanted = [{keys.PK: str(i[keys.PK]), keys.SK: str(i[keys.SK])} for i in page.items]
        for item in table.batch_get(wanted, consistent=False) if wanted else []:
            if (
                keys.DEP_PK not in item
                and item.get("deployment_id") == deployment_id
                and not RunStatus(str(item["status"])).terminal
            ):
                count += 1
        start = page.last_key
        if start is None:
            return count


def hold(table: Table, run_id: str, blocked: Blocked) -> bool:
    """Mark a running run held and move it under ``#held``: one conditional UpdateItem."""
    try:
        table.update(
            keys.run_key(run_id),
            f"SET blocked = :b, {keys.DEP_PK} = :held",
            condition="attribute_exists(pk) AND #status = :running",
            names=_RUNNING,
            values={
                ":b": items.blocked_item(blocked),
                ":held": keys.HELD_DEPLOYMENT,
                ":running": RunStatus.RUNNING.value,
            },
            return_values="NONE",
        )
    except ConditionFailed:
        return False
    return True


def release(table: Table, run_id: str, *, deployment_id: str) -> bool:
    """Pin a held run to ``deployment_id``, marked released: one conditional UpdateItem."""
    try:
        table.update(
            keys.run_key(run_id),
            f"SET deployment_id = :d, {keys.DEP_PK} = :d, blocked.released_to = :d",
            condition=(
                f"#status = :running AND {keys.DEP_PK} = :held AND attribute_not_exists(blocked.released_to)"
            ),
            names=_RUNNING,
            values={":d": deployment_id, ":held": keys.HELD_DEPLOYMENT, ":running": RunStatus.RUNNING.value},
            return_values="NONE",
        )
    except ConditionFailed:
        return False
    return True


def unblock(table: Table, run_id: str) -> None:
    """Clear a released run's mark (nothing if it has none or is held again)."""
    try:
        table.update(
            keys.run_key(run_id),
            "REMOVE blocked",
            condition="attribute_exists(blocked.released_to)",
            return_values="NONE",
        )
    except ConditionFailed:
        pass


def list_blocked(table: Table, blobs: BlobStore, *, limit: int) -> list[Run]:
    """The held runs, oldest hold first, without their input: an index Query and a BatchGetItem."""
    if limit < 1:
        raise BadInput(f"limit must be at least 1, not {limit}")
    found: list[Item] = []
    start = None
    while True:
        page = table.query_page(
            f"{keys.DEP_PK} = :held",
            {":held": keys.HELD_DEPLOYMENT},
            index=keys.DEPLOYMENT_INDEX,
            start_key=start,
        )
        found.extend(page.items)
        start = page.last_key
        if start is None or len(found) >= limit:
            break
    if not found:
        return []
    fetched = table.batch_get([{keys.PK: str(i[keys.PK]), keys.SK: str(i[keys.SK])} for i in found[:limit]])
    reader = PayloadReader(blobs, ResolveData.NONE)
    runs = [items.run_from_item(item, reader) for item in fetched]
    held = [run for run in runs if run.held]  # the index is eventually consistent
    return sorted(held, key=lambda run: (run.blocked.since if run.blocked else run.created_at, run.run_id))
