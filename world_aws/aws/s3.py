"""``S3BlobStore``: content-addressed payload storage in S3 (contract §7.3).

A blob lives under ``blobs/sha256/<hex digest>``, so its key names its content:
a put is idempotent (``IfNoneMatch='*'``: written only if absent, an existing
object is already the right bytes), and a reference can be checked on read.
``get`` verifies size and sha256, so a corrupted or mismatched object is a clear
``BadInput`` rather than silently wrong bytes.

A put for a run first notes the run's reference in the table (two keys-only items,
``keys.blob_referrer_key`` and ``keys.run_blob_key``, one ``BatchWriteItem``): an
erasure deletes a blob only when no other run refers to it (``erasure``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from botocore.exceptions import BotoCoreError, ClientError

from world_aws.aws.codec import keys
from world_aws.aws.codec.dynamo import Table
from world_aws.aws.errors import NOT_FOUND_CODES, error_code, translate
from world_aws.contract.world import BlobRef
from world_aws.errors import BadInput, NotFound

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

KEY_PREFIX = "blobs/sha256/"
# 412: the object exists (our If-None-Match held); 409: a concurrent put of the same key is in
# flight. Both mean the content-addressed object is, or is about to be, there.
_ALREADY_THERE = frozenset({"PreconditionFailed", "ConditionalRequestConflict"})


def blob_key(sha256_hex: str) -> str:
    return f"{KEY_PREFIX}{sha256_hex}"


class S3BlobStore:
    """Bytes by their sha256 digest in one bucket, through an injected boto3 S3 client."""

    def __init__(self, client: S3Client, bucket: str, table: Table | None = None) -> None:
        self._client = client
        self._bucket = bucket
        self._resource = f"bucket {bucket}"
        self._table = table  # where runs' references are noted (None: not noted)

    @property
    def client(self) -> S3Client:
        return self._client

    @property
    def bucket(self) -> str:
        return self._bucket

    def put(self, data: bytes, *, run_id: str | None = None) -> BlobRef:
        """Store ``data`` under its content address; idempotent.

        ``run_id``: the run referring to it, noted first (see the module's docstring).

        Returns:
            The reference (key, size, sha256) to keep in place of the bytes.

        Raises:
            Throttled, Transient: S3 failed; nothing referenced the blob yet, so retrying is safe.
            Misconfigured: the bucket does not exist, or access to it is denied.
        """
        data = bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        ref = BlobRef(key=blob_key(digest), size=len(data), sha256=digest)
        if run_id is not None and self._table is not None:
            # Before the object: an erasure that finds this reference keeps (or puts back) it.
            self._table.batch_write(
                puts=[keys.blob_referrer_key(digest, run_id), keys.run_blob_key(run_id, digest)]
            )
        try:
            self._client.put_object(Bucket=self._bucket, Key=ref.key, Body=data, IfNoneMatch="*")
        except ClientError as exc:
            if error_code(exc) not in _ALREADY_THERE:
                raise translate(exc, operation="S3 PutObject", resource=self._resource) from exc
        except BotoCoreError as exc:
            raise translate(exc, operation="S3 PutObject", resource=self._resource) from exc
        return ref

    def get(self, ref: BlobRef) -> bytes:
        """The bytes behind ``ref``, checked against its size and sha256.

        Raises:
            NotFound: no object under ``ref.key``.
            Misconfigured: the bucket does not exist, or access to it is denied.
            BadInput: the object does not match the reference.
            Throttled, Transient: S3 failed.
        """
        try:
            response: Any = self._client.get_object(Bucket=self._bucket, Key=ref.key)
            data = bytes(response["Body"].read())
        except ClientError as exc:
            # A missing object is NotFound; a missing bucket (NoSuchBucket) is Misconfigured.
            if error_code(exc) in NOT_FOUND_CODES:
                raise NotFound(f"blob {ref.key} not found in bucket {self._bucket}") from exc
            raise translate(exc, operation="S3 GetObject", resource=self._resource) from exc
        except BotoCoreError as exc:
            raise translate(exc, operation="S3 GetObject", resource=self._resource) from exc
        if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise BadInput(f"blob {ref.key} does not match its reference (size {ref.size}, {ref.sha256})")
        return data
