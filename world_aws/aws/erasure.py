"""``DynamoErasure``: erasure and retention on DynamoDB and S3 (contract §3.4).

An erasure of an ended run, in an order a crash can resume from:

1. The run item becomes a *tombstone*: one ``PutItem``, conditional on the terminal status
   read, keeps only its status, ``erased_at`` and an expiring-index entry due now. From
   here no write takes a position in the run (a reservation needs ``seq``, ``sequencer``),
   a run event cannot create it again (``attribute_not_exists(pk)``) and every reader
   finds ``NotFound`` (``items.run_from_item``).
2. The run's partition is read: its hooks name their tokens, its ``blob#`` markers the
   blobs it refers to. Each token item still naming the run is deleted; each blob reference
   is dropped, and the blob deleted if no other run refers to it (below).
3. The partition's items are deleted (``BatchWriteItem``), the tombstone last: it leaves the
   expiring index and takes ``expires_at`` (TTL) past the time any message of the run can
   still be delivered (``TOMBSTONE_KEEPS_SECONDS``).

A crash before step 3's end leaves the tombstone in the expiring index, due: the next
retention sweep (or the caller's retry) finishes it.

**Shared blobs.** A writer notes its run's reference (``blob#<digest>`` / ``run#<id>``)
before it puts the object. The erasure drops its own reference, and only if no other is
left reads the object, deletes it, then looks again: a reference that appeared meanwhile
(a run writing the same bytes, whose put found the object still there) gets the bytes put
back. A writer noting its reference after that second look puts the object after it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.aws.errors import NOT_FOUND_CODES, error_code, translate
from world_aws.aws.s3 import S3BlobStore, blob_key
from world_aws.contract.clock import Clock
from world_aws.contract.erasure import TOMBSTONE_KEEPS_SECONDS, ErasedRun
from world_aws.contract.records import RunStatus
from world_aws.errors import Conflict, NotFound

_TERMINAL = frozenset(status.value for status in RunStatus if status.terminal)


class DynamoErasure:
    """``erasure.delete`` / ``erasure.expired`` of the AWS World."""

    def __init__(self, table: Table, blobs: S3BlobStore, clock: Clock) -> None:
        self._table = table
        self._blobs = blobs
        self._clock = clock

    def delete(self, run_id: str) -> ErasedRun:
        """Remove the ended run and all its data. Raises NotFound, Conflict (see ``Erasure``)."""
        run_key = keys.run_key(run_id)
        item = self._table.get(run_key)
        if item is None or keys.TTL_ATTRIBUTE in item:  # no run, or an erasure that finished
            raise NotFound(f"run {run_id} not found")
        status = str(item.get("status"))
        if status not in _TERMINAL:
            raise Conflict(f"run {run_id} is {status}: only an ended run can be deleted (cancel it first)")
        if keys.ERASED_AT not in item:
            self._tombstone(run_id, status)
        records, deleted, kept = self._clear(run_id)
        self._table.update(
            run_key,
            f"SET {keys.TTL_ATTRIBUTE} = :expires REMOVE {keys.XP_PK}, {keys.XP_US}",
            values={":expires": int(self._clock.now().timestamp()) + TOMBSTONE_KEEPS_SECONDS},
            return_values="NONE",
        )
        return ErasedRun(run_id=run_id, records=records + 1, blobs_deleted=deleted, blobs_kept=kept)

    def expired(self, *, before: datetime, limit: int) -> list[str]:
        """Ended runs whose retention ran out by ``before`` (and unfinished erasures), earliest first."""
        if limit <= 0:
            return []
        page = self._table.query_page(
            f"{keys.XP_PK} = :pk AND {keys.XP_US} <= :before",
            {":pk": keys.EXPIRING_GSI_PK, ":before": items.epoch_us(before)},
            index=keys.EXPIRING_INDEX,
            limit=limit,
        )
        return [keys.run_id_of(found) for found in page.items]

    # --- the steps --------------------------------------------------------------------

    def _tombstone(self, run_id: str, status: str) -> None:
        now = self._clock.now()
        tombstone: Item = {
            **keys.run_key(run_id),
            "status": status,
            keys.ERASED_AT: items.iso(now),
            keys.XP_PK: keys.EXPIRING_GSI_PK,  # due now: a sweep finishes a crashed erasure
            keys.XP_US: items.epoch_us(now),
        }
        try:
            self._table.put(tombstone, condition="#status = :status", names={"#status": "status"},
                            values={":status": status})  # fmt: skip
        except ConditionFailed:  # a terminal status never changes: the run went meanwhile
            raise NotFound(f"run {run_id} not found") from None

    def _clear(self, run_id: str) -> tuple[int, int, int]:
        """Steps 2 and 3 but the tombstone's last write: (records removed, blobs deleted, kept)."""
        found = list(self._table.query_all("pk = :pk", {":pk": keys.run_pk(run_id)}))
        doomed = [item for item in found if item[keys.SK] != keys.RUN_SK]
        tokens = {str(item["token"]) for item in doomed if str(item[keys.SK]).startswith(keys.HOOK_PREFIX)}
        records = 0
        for token in sorted(tokens):
            try:
                self._table.delete(keys.token_key(token), condition="run_id = :run", values={":run": run_id})
                records += 1
            except ConditionFailed:  # gone, or claimed since by another run's hook
                pass
        deleted = kept = 0
        for item in doomed:
            sort_key = str(item[keys.SK])
            if sort_key.startswith(keys.BLOB_PREFIX):
                if self._release(run_id, sort_key.removeprefix(keys.BLOB_PREFIX)):
                    deleted += 1
                else:
                    kept += 1
        self._table.batch_write(deletes=[{keys.PK: item[keys.PK], keys.SK: item[keys.SK]} for item in doomed])
        return records + len(doomed), deleted, kept

    def _release(self, run_id: str, digest: str) -> bool:
        """Drop the run's reference to a blob, and the blob if none is left. True: deleted."""
        self._table.delete(keys.blob_referrer_key(digest, run_id))
        if self._referred(digest):
            return False
        data = self._read(digest)
        if data is None:
            return False
        self._s3("DeleteObject", Key=blob_key(digest))
        if self._referred(digest):  # a run wrote the same bytes meanwhile: it keeps them
            self._s3("PutObject", Key=blob_key(digest), Body=data)
            return False
        return True

    def _referred(self, digest: str) -> bool:
        page = self._table.query_page("pk = :pk", {":pk": f"{keys.BLOB_PREFIX}{digest}"}, limit=1)
        return bool(page.items)

    def _read(self, digest: str) -> bytes | None:
        try:
            response: Any = self._blobs.client.get_object(Bucket=self._blobs.bucket, Key=blob_key(digest))
            return bytes(response["Body"].read())
        except ClientError as exc:
            if error_code(exc) in NOT_FOUND_CODES:
                return None
            raise translate(exc, operation="S3 GetObject", resource=f"bucket {self._blobs.bucket}") from exc
        except BotoCoreError as exc:
            raise translate(exc, operation="S3 GetObject", resource=f"bucket {self._blobs.bucket}") from exc

    def _s3(self, operation: str, **kwargs: Any) -> None:
        client: Any = self._blobs.client
        call = {"DeleteObject": client.delete_object, "PutObject": client.put_object}
        try:
            call[operation](Bucket=self._blobs.bucket, **kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate(
                exc, operation=f"S3 {operation}", resource=f"bucket {self._blobs.bucket}"
            ) from exc
