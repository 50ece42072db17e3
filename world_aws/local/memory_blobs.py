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
        # digest -> the runs that refer to it (put with their run id): kept while any is.
        self._referrers: dict[str, set[str]] = {}
        self._stats = stats if stats is not None else WorldStats()

    def put(self, data: bytes, *, run_id: str | None = None) -> BlobRef:
        """Store ``data`` under its content address; idempotent. ``run_id`` refers to it."""
        self._stats.incr(Stat.BLOB_PUTS)
        data = bytes(data)
        digest = hashlib.sha256(data).hexdigest()
        with self._lock:
            if run_id is not None:
                self._referrers.setdefault(digest, set()).add(run_id)
            self._objects.setdefault(digest, data)
        return BlobRef(key=digest, size=len(data), sha256=digest)

    def referred_by(self, run_id: str) -> list[str]:
        """The digests of the blobs ``run_id`` refers to."""
        with self._lock:
            return sorted(d for d, runs in self._referrers.items() if run_id in runs)

    def release(self, run_id: str, digest: str) -> bool:
        """Drop ``run_id``'s reference to a blob, and the blob if it was the last; True: deleted."""
        with self._lock:
            runs = self._referrers.get(digest, set())
            runs.discard(run_id)
            if runs:
                return False
            self._referrers.pop(digest, None)
            return self._objects.pop(digest, None) is not None

    def holds(self, digest: str) -> bool:
        """Whether a blob is stored under ``digest``."""
        with self._lock:
            return digest in self._objects

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
