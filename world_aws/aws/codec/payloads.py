"""Payload fields in DynamoDB items: inline bytes when small, an S3 reference when large (contract §7.3).

A payload field of an item holds either the bytes (attribute type B) or a
reference map ``{ref, size, sha256}`` to a content-addressed blob in S3.

Two thresholds keep every item far below DynamoDB's 400 KB item limit
(https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html):

* an **event** item carries at most one payload, inline up to
  ``MAX_INLINE_PAYLOAD_BYTES`` (128 KiB, contract §7.3): at most ~130 KB;
* an **entity** item (run, step, hook) may carry three (a step's input, output
  and last retry error; a run's output or error and the repair copy of its last
  run event), so each is inline only up to 64 KiB: at most ~200 KB. A run's
  input is not in its run item but in its ``run_created`` event (``keys.py``).

Blobs are content-addressed, so the event and the entity of one write share
one S3 object, written once (:class:`PayloadWriter` remembers what it put).

**Compression.** DynamoDB bills a write by the started KB of the item, twice in a
transaction, so an inline payload's size is paid on every write of its item. A
payload that stays inline and is at least ``COMPRESS_MIN_BYTES`` is stored zlib-
compressed when that saves at least a tenth: a map ``{zlib, size}`` (the
compressed bytes, the original length). Whether a payload goes to S3 is decided
on its own size (over 128 KiB, contract §7.3) and, for an entity, also on the
compressed size against the entity limit: a 100 KB step input that compresses to
3 KB stays inline in the step item instead of costing an S3 PUT and GETs. Blobs in
S3 are stored as given (their key is the digest of the payload). Raw bytes and
references written before compression read back as before.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterable, Mapping

from world_aws.contract.limits import MAX_INLINE_PAYLOAD_BYTES
from world_aws.contract.records import EventData, ResolveData, creation_of, payload_fields
from world_aws.contract.world import BlobRef, BlobStore
from world_aws.errors import BadInput

EVENT_INLINE_LIMIT = MAX_INLINE_PAYLOAD_BYTES
ENTITY_INLINE_LIMIT = MAX_INLINE_PAYLOAD_BYTES // 2

# A run's input is written once, in the run_created transaction (2 WRU per KB), and read
# once per cold replay: an S3 PUT ($5 per million) costs what 4 KB inside a transaction
# does, so an input that stays larger than this once compressed is cheaper in S3.
RUN_INPUT_INLINE_LIMIT = 8 * 1024
# Below a KB an item write costs 1 WRU whatever its size: compressing cannot pay.
COMPRESS_MIN_BYTES = 1024
# Level 6 (zlib's default): ~1 ms per 100 KB of JSON-like data on one Lambda vCPU.
_ZLIB_LEVEL = 6

StoredPayload = bytes | dict[str, object]


class PayloadWriter:
    """Encodes the payloads of one write, putting each distinct large one in S3 once."""

    def __init__(self, blobs: BlobStore, run_id: str | None = None) -> None:
        self._blobs = blobs
        self._run_id = run_id  # the run whose items refer to the blobs put (``BlobStore.put``)
        self._refs: dict[str, BlobRef] = {}
        self._zipped: dict[bytes, bytes | None] = {}
        self.blob_puts = 0

    def encode(self, data: bytes | None, limit: int) -> StoredPayload | None:
        """``data`` as an item attribute: inline (compressed if that pays) up to ``limit``, else a reference.

        Inline when the payload is at most ``limit``, or when it is at most the event
        limit (contract §7.3) and its compressed form fits ``limit`` (an entity's); but a
        payload this write already put in S3 is always that reference.
        """
        if data is None:
            return None
        data = bytes(data)
        digest: str | None = None
        if self._refs and len(data) > COMPRESS_MIN_BYTES:
            # Already in S3 for this write (its entity's limit sent it there): the event
            # refers to that blob too, instead of paying its size again inline, twice in a
            # transaction (a 100 KB incompressible step input: 200 WRU).
            digest = hashlib.sha256(data).hexdigest()
            known = self._refs.get(digest)
            if known is not None:
                return _reference(known)
        zipped = self._compressed(data)
        if len(data) <= limit:
            return data if zipped is None else {"zlib": zipped, "size": len(data)}
        if zipped is not None and len(data) <= EVENT_INLINE_LIMIT and len(zipped) <= limit:
            return {"zlib": zipped, "size": len(data)}
        digest = digest or hashlib.sha256(data).hexdigest()
        ref = self._refs.get(digest)
        if ref is None:
            ref = self._blobs.put(data, run_id=self._run_id)
            self.blob_puts += 1
            self._refs[digest] = ref
        return _reference(ref)

    def _compressed(self, data: bytes) -> bytes | None:
        """``data`` zlib-compressed if that saves at least a tenth, else None; computed once per write."""
        if len(data) < COMPRESS_MIN_BYTES or len(data) > EVENT_INLINE_LIMIT:
            return None
        if data not in self._zipped:
            zipped = zlib.compress(data, _ZLIB_LEVEL)
            self._zipped[data] = zipped if len(zipped) * 10 <= len(data) * 9 else None
        return self._zipped[data]

    def prepare(self, data: EventData, *, entity_fields: Iterable[str] = ()) -> None:
        """Put the large payloads of ``data`` in S3 now, before a position is reserved.

        A writer must not do slow or failing work between reserving a position and
        committing at it (readers would wait for it). The later ``encode`` calls of
        this write find these blobs already put.

        Args:
            data: the event's data.
            entity_fields: payload fields that the entity item stores too (with the
                lower entity limit).
        """
        entity = set(entity_fields)
        for name in payload_fields(type(data)):
            limit = ENTITY_INLINE_LIMIT if name in entity else EVENT_INLINE_LIMIT
            self.encode(getattr(data, name), limit)
        creation = creation_of(data)
        if creation is not None:
            self.encode(creation.input, RUN_INPUT_INLINE_LIMIT)


def _reference(ref: BlobRef) -> dict[str, object]:
    """The stored form of a payload kept in S3."""
    return {"ref": ref.key, "size": ref.size, "sha256": ref.sha256}


class PayloadReader:
    """Decodes payload attributes, fetching referenced blobs only when payloads are wanted."""

    def __init__(self, blobs: BlobStore, resolve_data: ResolveData = ResolveData.ALL) -> None:
        self._blobs = blobs
        self.wanted = resolve_data is not ResolveData.NONE

    def decode(self, value: object) -> bytes | None:
        """The payload bytes, or ``None`` when absent or not wanted (never touches S3 then).

        Raises:
            NotFound: a referenced blob is missing.
            BadInput: the stored value or the blob is malformed.
        """
        if value is None or not self.wanted:
            return None
        if isinstance(value, bytes):
            return value
        if isinstance(value, Mapping) and "zlib" in value:
            return _decompressed(value)
        if isinstance(value, Mapping):
            ref = BlobRef(key=str(value["ref"]), size=int(value["size"]), sha256=str(value["sha256"]))
            return self._blobs.get(ref)
        raise BadInput(f"a stored payload is neither bytes nor a blob reference: {type(value).__name__}")


def _decompressed(value: Mapping[str, object]) -> bytes:
    """The payload of a compressed attribute ``{zlib, size}``, checked against its recorded size.

    Raises:
        BadInput: the compressed bytes are corrupt or do not give ``size`` bytes.
    """
    zipped, size = value.get("zlib"), value.get("size")
    if not isinstance(zipped, bytes) or not isinstance(size, int):
        raise BadInput("a stored compressed payload is corrupt: it needs zlib (bytes) and size (a number)")
    try:
        inflater = zlib.decompressobj()
        data = inflater.decompress(zipped, size + 1)
    except zlib.error as bad:
        raise BadInput(f"a stored compressed payload is corrupt: {bad}") from None
    if len(data) != size or not inflater.eof:
        raise BadInput(f"a stored compressed payload gives {len(data)}+ bytes, not the {size} recorded")
    return data
