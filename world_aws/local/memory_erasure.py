"""``MemoryErasure``: erasure and retention in the in-memory World (contract §3.4).

The run's record (log, entities, resume marks), its streams, the tokens that name it
and its references to blobs go in one step under the state's lock; a blob goes with
the last run that referred to it. The run id stays in ``MemoryState.erased`` (its
tombstone), so no event creates it again.
"""

from __future__ import annotations

from datetime import datetime

from world_aws.contract.erasure import ErasedRun, expires_at
from world_aws.errors import Conflict, NotFound
from world_aws.local.memory_blobs import MemoryBlobStore
from world_aws.local.memory_state import MemoryState
from world_aws.local.memory_streams import MemoryStreamStore


class MemoryErasure:
    """``erasure.delete`` / ``erasure.expired`` over the shared state."""

    def __init__(self, state: MemoryState, streams: MemoryStreamStore, blobs: MemoryBlobStore) -> None:
        self._state = state
        self._streams = streams
        self._blobs = blobs

    def delete(self, run_id: str) -> ErasedRun:
        """Remove the ended run and all its data. Raises NotFound, Conflict (see ``Erasure``)."""
        with self._state.lock:
            record = self._state.runs.get(run_id)
            if record is None:
                raise NotFound(f"run {run_id} not found")
            if not record.run.status.terminal:
                status = record.run.status.value
                raise Conflict(
                    f"run {run_id} is {status}: only an ended run can be deleted (cancel it first)"
                )
            self._state.erased.add(run_id)
            del self._state.runs[run_id]
            records = 1 + len(record.events) + len(record.steps) + len(record.hook_ids) + len(record.waits)
            records += len(record.resumes)
            for table in (self._state.tokens, self._state.last_holders):
                for token in [t for t, (holder, _hook) in table.items() if holder == run_id]:
                    del table[token]
                    records += 1
        records += self._streams.drop_run(run_id)
        deleted = kept = 0
        for digest in self._blobs.referred_by(run_id):
            if self._blobs.release(run_id, digest):
                deleted += 1
            else:
                kept += 1
        return ErasedRun(run_id=run_id, records=records, blobs_deleted=deleted, blobs_kept=kept)

    def expired(self, *, before: datetime, limit: int) -> list[str]:
        """Ended runs whose retention ran out by ``before``, earliest expiry first."""
        with self._state.lock:
            due = [
                (at, run_id)
                for run_id, record in self._state.runs.items()
                if (at := expires_at(record.run)) is not None and at <= before
            ]
        return [run_id for _at, run_id in sorted(due)[: max(0, limit)]]
