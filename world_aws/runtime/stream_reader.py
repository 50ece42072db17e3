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
costs one Query per 1 MB of the stream before ``start_index``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from world_aws.contract.records import ResolveData
from world_aws.contract.streams import MAX_READ_CHUNKS, StreamChunk, check_stream_name
from world_aws.contract.world import World
from world_aws.errors import BadInput, NotFound
from world_aws.runtime.serde import Serializer

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
        self._after = -1
        self._high: dict[str, int] = {}

    def poll(self) -> list[tuple[int, Any]]:
        """(index, value) of every value kept since the last poll, from ``start_index`` on."""
        out: list[tuple[int, Any]] = []
        while not self.closed:
            chunks = self._world.streams.read(
                self.run_id, self.name, after=self._after, limit=MAX_READ_CHUNKS
            )
            for chunk in chunks:
                self._take(chunk, out)
                if self.closed:
                    break
            if len(chunks) < MAX_READ_CHUNKS:
                break
        return out

    def _take(self, chunk: StreamChunk, out: list[tuple[int, Any]]) -> None:
        self._after = chunk.position
        high = self._high.get(chunk.writer, 0)
        fresh = chunk.seq + chunk.count - max(high, chunk.seq)
        if fresh > 0:
            values: list[bytes] = self._serializer.loads(chunk.data, context=f"stream {self.name!r}")
            for offset in range(chunk.count - fresh, chunk.count):
                if self.next_index >= self.start_index:
                    out.append((self.next_index, self._serializer.loads(values[offset])))
                self.next_index += 1
            self._high[chunk.writer] = chunk.seq + chunk.count
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
