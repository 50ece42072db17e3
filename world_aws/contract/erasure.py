"""Erasure and retention: removing an ended run and all its data (contract §3.4).

A run's data is its log, its steps, hooks, waits and resume marks, its stream chunks,
its hook tokens, its index entries and the blobs only it refers to. ``Erasure.delete``
removes all of it for a run that has ended, and refuses a live one. Retention is the
same removal, due a set time after the run's end: a run created with the
``$retention`` attribute (seconds, set by the runtime from the workflow's setting) is
listed by ``Erasure.expired`` once that long has passed since its end.

Blobs are content-addressed and may be shared by runs: each World keeps, per blob,
the runs that refer to it, and deletes a blob only when the run being erased was its
last referrer, so a live run never loses a payload it needs.

An erased run leaves a tombstone (no data, no index entry) so a message of the run
still in a queue cannot create it again: every operation on it is ``NotFound``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from world_aws.contract.records import Run

# Run attribute: how long the run's data is kept after its end, in whole seconds.
RETENTION_ATTRIBUTE = "$retention"
# A tombstone outlives every message of its run: SQS keeps a message at most 14 days
# (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/quotas-messages.html).
TOMBSTONE_KEEPS_SECONDS = 15 * 86400


@dataclass(frozen=True, slots=True)
class ErasedRun:
    """What one ``Erasure.delete`` removed.

    Attributes:
        run_id: the run.
        records: the stored records removed (events, entities, chunks, markers, tokens).
        blobs_deleted: blobs deleted, the erased run having been their last referrer.
        blobs_kept: blobs the run referred to that another run still refers to.
    """

    run_id: str
    records: int
    blobs_deleted: int
    blobs_kept: int


class Erasure(Protocol):
    def delete(self, run_id: str) -> ErasedRun:
        """Remove the ended run ``run_id`` and all its data, leaving a tombstone.

        Idempotent in effect: a crash part way leaves the run item (removed last), so
        a retry finds the rest. Blobs another run refers to are kept.

        Raises:
            NotFound: no such run (or it was erased already).
            Conflict: the run has not ended (it is pending or running): cancel it first.
        """
        ...

    def expired(self, *, before: datetime, limit: int) -> list[str]:
        """Ids of ended runs with a retention whose end + retention is at or before ``before``.

        At most ``limit``, earliest expiry first.
        """
        ...


def retention_of(run: Run) -> timedelta | None:
    """The run's retention (its ``$retention`` attribute), None if it is kept forever."""
    raw = run.attributes.get(RETENTION_ATTRIBUTE)
    return None if raw is None or not raw.isdigit() else timedelta(seconds=int(raw))


def expires_at(run: Run) -> datetime | None:
    """When the run's data expires: its end plus its retention; None while live or without one."""
    kept = retention_of(run)
    if kept is None or not run.status.terminal or run.completed_at is None:
        return None
    return run.completed_at + kept
