"""The step side of streams: ``get_writable()`` and the buffered writer behind it.

Inside a step, ``world_aws.get_writable(name="default")`` returns the step
attempt's writer for that stream (the same one on every call). ``write(value)``
buffers; the buffer becomes one chunk (one conditional write, ``contract/streams``)
when it holds ``FLUSH_VALUES`` values or ``FLUSH_BYTES`` bytes, when its first value
waited ``FLUSH_SECONDS``, on ``flush()``, on ``close()``, and when the step body
ends (returns or raises). ``write`` and ``close`` may also be awaited.

Each value is numbered by the step (``seq``: 0, 1, 2, ... over all the step's
writes to that stream, on every attempt). A retried attempt, or a duplicate
delivery running the step twice, writes the same numbers again, and readers keep
the first chunk holding a number (``client/stream_reader.py``): a step that writes
the same values on every attempt is read exactly once; one whose values differ
between attempts shows, at each number, the value of the attempt that appended it
first.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from types import TracebackType
from typing import Any

from world_aws.contract.streams import DEFAULT_STREAM, StreamChunk, check_stream_name
from world_aws.contract.world import World
from world_aws.errors import BadInput, Conflict, Transient
from world_aws.serde.codec import Serializer
from world_aws.serde.limits import Payload
from world_aws.workflow.context import StepMetadata
from world_aws.workflow.retry import retry_in_process

# A chunk is written when the buffer holds this many values or bytes (a DynamoDB item
# stays under 400 KB: values above 128 KiB in all go to S3), or its oldest value waited
# this long (readers of a slow writer see values within about that time).
FLUSH_VALUES = 100
FLUSH_BYTES = 64 * 1024
FLUSH_SECONDS = 0.5
# Tries of one append while other writers keep taking the tail, and of each World call.
APPEND_ROUNDS = 16
CALL_ATTEMPTS = 4

_SCOPE: ContextVar[StepStreams | None] = ContextVar("world_aws_step_streams", default=None)


class _Done:
    """What ``write``/``close`` return: nothing, but ``await`` on it is allowed too."""

    def __await__(self) -> Generator[Any, None, None]:
        return
        yield  # pragma: no cover - makes this a generator


_DONE = _Done()


class StreamWriter:
    """The writer of one stream for one step attempt. Not thread-safe (one step body)."""

    def __init__(self, world: World, serializer: Serializer, meta: StepMetadata, name: str) -> None:
        self._world = world
        self._serializer = serializer
        self._meta = meta
        self.name = name
        self._buffer: list[bytes] = []
        self._buffered_bytes = 0
        self._first_at: datetime | None = None
        self._seq = 0  # the number of the next value to append
        self._position: int | None = None  # where the next chunk goes, if known
        self.closed = False

    def write(self, value: Any) -> _Done:
        """Buffer ``value`` (any value the app's serializer handles).

        Raises:
            BadInput: the stream is closed.
            SerializationError: ``value`` cannot be serialized (named at this call).
        """
        if self.closed:
            raise BadInput(f"stream {self.name!r} is closed")
        data = self._serializer.dumps(
            value, context=f"a value written to stream {self.name!r}", payload=Payload.STEP_RESULT
        )
        if self._first_at is None:
            self._first_at = self._world.clock.now()
        self._buffer.append(data)
        self._buffered_bytes += len(data)
        waited = (self._world.clock.now() - self._first_at).total_seconds()
        if (
            len(self._buffer) >= FLUSH_VALUES
            or self._buffered_bytes >= FLUSH_BYTES
            or waited >= FLUSH_SECONDS
        ):
            self.flush()
        return _DONE

    def flush(self) -> _Done:
        """Append the buffered values as one chunk now (nothing if none are buffered)."""
        if self._buffer:
            self._append(closed=False)
        return _DONE

    def close(self) -> _Done:
        """Append what is buffered and close the stream: readers end after these values."""
        if not self.closed:
            self._append(closed=True)
            self.closed = True
        return _DONE

    def __enter__(self) -> StreamWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()

    async def __aenter__(self) -> StreamWriter:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.__exit__(kind, exc, tb)

    def _append(self, *, closed: bool) -> None:
        values, self._buffer = self._buffer, []
        self._buffered_bytes, self._first_at = 0, None
        data = self._serializer.dumps(values, context=f"a chunk of stream {self.name!r}")
        meta, streams, clock = self._meta, self._world.streams, self._world.clock
        for _ in range(APPEND_ROUNDS):
            if self._position is None:
                self._position = retry_in_process(
                    lambda: streams.tail(meta.run_id, self.name),
                    attempts=CALL_ATTEMPTS,
                    clock=clock,
                    max_pause=1.0,
                )
            chunk = StreamChunk(
                position=self._position,
                writer=meta.step_id,
                attempt=meta.attempt,
                seq=self._seq,
                count=len(values),
                data=data,
                closed=closed,
                created_at=clock.now(),
            )
            try:
                retry_in_process(
                    functools.partial(streams.append, meta.run_id, self.name, chunk),
                    attempts=CALL_ATTEMPTS,
                    clock=clock,
                    max_pause=1.0,
                )
            except Conflict:
                # Another writer took the tail, or this chunk landed and its answer was
                # lost (then it is appended twice; readers keep the first copy).
                self._position = None
                continue
            self._position += 1
            self._seq += len(values)
            return
        raise Transient(f"stream {self.name!r}: the tail kept moving for {APPEND_ROUNDS} tries")


class StepStreams:
    """The writers of one step attempt, by stream name."""

    def __init__(self, world: World, serializer: Serializer, meta: StepMetadata) -> None:
        self._world = world
        self._serializer = serializer
        self._meta = meta
        self._writers: dict[str, StreamWriter] = {}

    def writer(self, name: str) -> StreamWriter:
        check_stream_name(name)
        found = self._writers.get(name)
        if found is None:
            found = self._writers[name] = StreamWriter(self._world, self._serializer, self._meta, name)
        return found

    def flush_all(self) -> None:
        for writer in self._writers.values():
            if not writer.closed:
                writer.flush()


@contextmanager
def step_streams(world: World, serializer: Serializer, meta: StepMetadata) -> Iterator[StepStreams]:
    """Run a step body with ``get_writable()`` available; flush its writers when it ends.

    A body that returns has its buffers flushed here (a failure then fails the
    attempt, as the body's own would). A body that raises has them flushed as far as
    possible (its retry writes the same numbers again), then its error goes on.
    """
    scope = StepStreams(world, serializer, meta)
    token = _SCOPE.set(scope)
    try:
        try:
            yield scope
        except Exception:
            try:
                scope.flush_all()
            except Exception:  # the attempt already failed; its retry rewrites these values
                pass
            raise
        scope.flush_all()
    finally:
        _SCOPE.reset(token)


def get_writable(name: str = DEFAULT_STREAM) -> StreamWriter:
    """The writer of stream ``name`` of the current run, for this step attempt.

    Raises:
        RuntimeError: called outside a step.
        BadInput: a bad stream name.
    """
    scope = _SCOPE.get()
    if scope is None:
        raise RuntimeError("get_writable() can only be used inside a step")
    return scope.writer(name)
