"""The sparse ``live`` index: the non-terminal runs, by reconcile mark (``runs.list_live`` / ``mark_live``).

A run item carries ``live_pk = "live"`` and ``live_sk = <mark>#<run_id>`` from its
creation (the mark is then its creation time) until the transition that makes
it terminal, which removes both in its reserving ``UpdateItem``. DynamoDB keeps
a GSI entry only for items that have its key attributes, so the index holds
exactly the runs still going, and it is written at a run's start and end only:
events bump ``seq`` and ``prog_us`` on the run item, which the index does not
project (``KEYS_ONLY``). The reconciler moves a mark (one ``UpdateItem``, one GSI
entry rewritten) only for a run it has looked at, which a run finishing within
the reconciler's threshold never is.

``list_live`` is one Query of the index (at most ``limit`` keys, marks before the
bound) and one consistent ``BatchGetItem`` of those run items, which give the
status, the last progress and the current mark (the index is eventually
consistent: a run that has just ended or been re-marked is left out here).
"""

from __future__ import annotations

from datetime import datetime

from world_aws.aws import items, keys
from world_aws.aws.dynamo import ConditionFailed, Table
from world_aws.contract.world import LiveRun
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
    """Move a non-terminal run's mark: one conditional ``UpdateItem``; False if it ended or is missing."""
    try:
        # Timeline: the run's terminal transition removes live_pk in its reservation; a
        # mark written after it fails this condition, so an ended run never re-enters the index.
        table.update(
            keys.run_key(run_id),
            f"SET {keys.LIVE_SK} = :sk",
            condition=f"attribute_exists({keys.LIVE_PK})",
            values={":sk": keys.live_sk(items.iso(mark), run_id)},
            return_values="NONE",
        )
    except ConditionFailed:
        return False
    return True
