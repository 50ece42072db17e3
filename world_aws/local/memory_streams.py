"""The in-memory stream store: each stream a list of chunks under one lock (see ``contract/streams``)."""

from __future__ import annotations

import builtins
import threading

from world_aws.contract.streams import MAX_READ_CHUNKS, StreamChunk, check_chunk, check_stream_name
from world_aws.errors import BadInput, Conflict


class MemoryStreamStore:
    """``streams.append`` / ``read`` / ``tail``, the reference model of the conditional append."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._streams: dict[tuple[str, str], builtins.list[StreamChunk]] = {}

    def append(self, run_id: str, name: str, chunk: StreamChunk) -> None:
        """Store ``chunk`` at its position. Raises Conflict (taken), BadInput (negative, past the tail)."""
        check_stream_name(name)
        check_chunk(chunk)
        if chunk.position < 0:
            raise BadInput(f"stream position {chunk.position} is out of range")
        with self._lock:
            chunks = self._streams.setdefault((run_id, name), [])
            if chunk.position < len(chunks):
                raise Conflict(f"stream {name!r} of run {run_id}: position {chunk.position} is taken")
            if chunk.position != len(chunks):
                tail = len(chunks)
                raise BadInput(
                    f"stream {name!r} of run {run_id}: position {chunk.position} is past the tail {tail}"
                )
            chunks.append(chunk)

    def read(
        self, run_id: str, name: str, *, after: int = -1, limit: int = MAX_READ_CHUNKS
    ) -> builtins.list[StreamChunk]:
        """Chunks after position ``after``, in order, at most ``limit``."""
        check_stream_name(name)
        with self._lock:
            chunks = self._streams.get((run_id, name), [])
            first = max(0, after + 1)  # a slice from a negative index would count from the end
            return chunks[first : first + max(0, limit)]

    def tail(self, run_id: str, name: str) -> int:
        """The next free position."""
        check_stream_name(name)
        with self._lock:
            return len(self._streams.get((run_id, name), []))

    def drop_run(self, run_id: str) -> int:
        """Remove every stream of ``run_id`` (its erasure); returns the chunks removed."""
        with self._lock:
            names = [key for key in self._streams if key[0] == run_id]
            return sum(len(self._streams.pop(key)) for key in names)
