"""``MemoryBlobStore``: content-addressed payload storage in memory (the S3 stand-in).

The key is the sha256 hex digest of the bytes, so a put is idempotent and a
reference names its content. ``get`` checks what it returns against the
reference, as the S3 store does, so a corrupted or mismatched reference is a
clear ``BadInput`` rather than silently wrong bytes.
"""

from __future__ import annotations

import hashlib
import threading

from world_aws.contract.world import BlobRef
from world_aws.errors import BadInput, NotFound
from world_aws.local.memory_stats import Stat, WorldStats


class MemoryBlobStore:
    """Bytes by their sha256 digest."""

    def __init__(self, stats: WorldStats | None = None) -> None:
        self._lock = threading.Lock()
        self._objects: dict[str, bytes] = {}
        self._stats = stats if stats is not None else WorldStats()

    def put(self, data: bytes) -> BlobRef:
        """Store ``data`` under its content address; idempotent."""
        self._stats.incr(Stat.BLOB_PUTS)
        data = bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            self._objects.setdefault(digest, data)
        return BlobRef(key=digest, size=len(data), sha256=digest)

    def get(self, ref: BlobRef) -> bytes:
        """The bytes behind ``ref``, checked against its size and sha256.

        Raises:
            NotFound: nothing is stored under ``ref.key``.
            BadInput: the stored bytes do not match the reference.
        """
        self._stats.incr(Stat.BLOB_GETS)
        with self._lock:
            data = self._objects.get(ref.key)
        if data is None:
            raise NotFound(f"blob {ref.key} not found")
        if len(data) != ref.size or hashlib.sha256(data).hexdigest() != ref.sha256:
            raise BadInput(f"blob {ref.key} does not match its reference (size {ref.size}, {ref.sha256})")
        return data
