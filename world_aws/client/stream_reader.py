"""The reading side of streams: each value once, in order, by a dense index from 0.

A stream's chunks (``contract/streams``) are read in position order. A value is
identified by its writer (the step id) and its ``seq``; a chunk's values whose
seq the reader has already passed for that writer are a retry's (or a duplicate
delivery's) rewrite and are skipped. Every reader applies the same rule to the
same gap-free prefix of chunks, so every reader numbers the values alike: value
``i`` is the ``i``-th value kept, and a reader that resumes at ``start_index``
gets the same values as one that read from 0 and skipped ``start_index`` of them.

A stream ends at the first chunk that closes it (chunks after it are not read),
or when the run has ended and a read after that found nothing new. Resuming
re-reads the chunks from the first (the numbering needs them), so a resumed read
costs one Query per 1 MB of the stream before ``start_index``; the values there are
counted, not decoded. ``poll(limit)`` reads and decodes no further than ``limit``
values past ``start_index``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from world_aws.contract.records import ResolveData
from world_aws.contract.sealing import ENCRYPTED_MARKER, is_sealed
from world_aws.contract.streams import MAX_READ_CHUNKS, StreamChunk, check_stream_name
from world_aws.contract.world import World
from world_aws.errors import BadInput, NotFound
from world_aws.serde.codec import Serializer

# Pause between polls of a stream that has nothing new (a caller may pass its own).
POLL_SECONDS = 0.25


class StreamCursor:
    """A position in one stream: ``poll()`` returns the values appended since the last poll."""

    def __init__(
        self, world: World, serializer: Serializer, run_id: str, name: str, start_index: int = 0
    ) -> None:
        if start_index < 0:
            raise BadInput(f"start_index must be >= 0, got {start_index}")
        self._world = world
        self.clock = world.clock
        self._serializer = serializer
        self.run_id = run_id
        self.name = check_stream_name(name)
        self.start_index = start_index
        self.next_index = 0  # the index the next kept value gets
        self.closed = False
        self.run_ended = False
        self.more = False  # the last poll(limit) stopped at its limit, short of the stream's end
        self._after = -1
        self._high: dict[str, int] = {}

    def poll(self, limit: int | None = None) -> list[tuple[int, Any]]:
        """(index, value) of the values kept since the last poll, from ``start_index`` on.

        With ``limit``, at most that many: chunks are read (and values decoded) only as far
        as they are needed, so the cost is O(limit) past ``start_index``; :attr:`more` then
        says whether the read stopped short of the stream's end (the next poll goes on
        from there, mid-chunk if need be).
        """
        out: list[tuple[int, Any]] = []
        self.more = False
        while not self.closed:
            wanted = MAX_READ_CHUNKS if limit is None else self._chunks_wanted(limit - len(out))
            chunks = self._world.streams.read(self.run_id, self.name, after=self._after, limit=wanted)
            for chunk in chunks:
                self._take(chunk, out, limit)
                if self.closed:
                    break
                if limit is not None and len(out) >= limit:
                    self.more = True
                    return out
            if len(chunks) < wanted:
                break
        return out

    def _chunks_wanted(self, values: int) -> int:
        """How many chunks to ask for: a full page before ``start_index`` (the values there are
        counted, never decoded), then no more than the values still wanted (a chunk holds at
        least one new value, or it is a duplicate's and skipped at no decoding cost)."""
        if self.next_index < self.start_index:
            return MAX_READ_CHUNKS
        return max(1, min(MAX_READ_CHUNKS, values))

    def _take(self, chunk: StreamChunk, out: list[tuple[int, Any]], limit: int | None = None) -> None:
        """Keep ``chunk``'s new values (those at or past ``start_index`` decoded), up to ``limit`` in ``out``.

        A chunk cut short by ``limit`` is left unread (``_after`` stays before it) with its
        writer's high mark at the last value kept, so the next read takes it up from there.
        """
        high = self._high.get(chunk.writer, 0)
        first = max(high, chunk.seq) - chunk.seq  # the offset of the chunk's first new value
        end = chunk.count
        if first < end:
            skipped = min(end - first, max(0, self.start_index - self.next_index))
            self.next_index += skipped  # before start_index: counted, not decoded
            first += skipped
            if limit is not None:
                end = min(end, first + max(0, limit - len(out)))
            if first < end:
                if is_sealed(chunk.data):  # this process cannot decrypt it (contract.sealing)
                    values: list[bytes] | None = None
                else:
                    values = self._serializer.loads(chunk.data, context=f"stream {self.name!r}")
                for offset in range(first, end):
                    value = ENCRYPTED_MARKER if values is None else self._serializer.loads(values[offset])
                    out.append((self.next_index, value))
                    self.next_index += 1
            self._high[chunk.writer] = max(high, chunk.seq + end)
        if end < chunk.count:
            return  # cut short: read this chunk again next time
        self._after = chunk.position
        if chunk.closed:
            self.closed = True

    def ended(self) -> bool:
        """Whether no value can come any more: the stream was closed, or the run ended.

        Reads the run (no payloads) when the stream is open: call it after a poll that
        found nothing, then poll once more if it says True (values a step wrote just
        before the run ended).
        """
        if self.closed or self.run_ended:
            return True
        try:
            run = self._world.runs.get(self.run_id, resolve_data=ResolveData.NONE)
        except NotFound:
            self.run_ended = True
            return True
        self.run_ended = run.status.terminal
        return self.run_ended


def follow(cursor: StreamCursor, pause: Callable[[float], None] | None = None) -> Iterator[Any]:
    """The stream's values as they come, until it closes or its run ends (blocking)."""
    wait = pause or cursor.clock.sleep
    while True:
        batch = cursor.poll()
        yield from (value for _, value in batch)
        if cursor.closed:
            return
        if not batch and cursor.ended():
            yield from (value for _, value in cursor.poll())
            return
        if not batch:
            wait(POLL_SECONDS)


async def follow_async(
    cursor: StreamCursor, pause: Callable[[float], None] | None = None
) -> AsyncIterator[Any]:
    """``follow`` as an async iterator: the World's calls and the pauses run in a worker thread."""
    wait = pause or cursor.clock.sleep
    while True:
        batch = await asyncio.to_thread(cursor.poll)
        for _, value in batch:
            yield value
        if cursor.closed:
            return
        if not batch and await asyncio.to_thread(cursor.ended):
            for _, value in await asyncio.to_thread(cursor.poll):
                yield value
            return
        if not batch:
            await asyncio.to_thread(wait, POLL_SECONDS)
