"""Streams: named, append-only sequences of values a run's steps write and its callers read.

The World stores *chunks*: each a batch of values (one opaque payload) written by
one step attempt, at a dense per-stream *position* 0, 1, 2, ... A chunk names its
writer (the step id), the attempt, and ``seq``, the writer's index of its first
value among everything that step has written to the stream. Positions are taken
optimistically: a writer appends at the tail it knows; a taken position is a
``Conflict`` and the writer asks for the tail again. So the chunks of a stream
are always a gap-free prefix, and a later read extends an earlier one.

Which values a reader sees is decided above the World (``client/stream_reader.py``):
a value is identified by (writer, seq), and the first chunk holding it wins, so a
retried attempt's (or a duplicate delivery's) rewrite of values an earlier attempt
already appended is not read twice. The World does not interpret chunks.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from world_aws.errors import BadInput

DEFAULT_STREAM = "default"
# Stream names are part of a DynamoDB sort key (``strm#<name>#<position>``): no ``#``.
# Matched whole (``fullmatch``): ``$`` would let a trailing newline through.
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
# Chunks one ``read`` returns at most (a DynamoDB Query page is cut at 1 MB anyway).
MAX_READ_CHUNKS = 100


def check_stream_name(name: str) -> str:
    """``name``, if it can name a stream.

    Raises:
        BadInput: not 1-128 characters of letters, digits, ``_ . : -``.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise BadInput(f"stream name must be 1-128 characters of A-Z a-z 0-9 _ . : -, got {name!r}")
    return name


@dataclass(frozen=True, slots=True)
class StreamChunk:
    """One batch of values appended to a stream.

    Attributes:
        position: the chunk's place in the stream (0-based, dense).
        writer: the step id whose body wrote the values.
        attempt: the step attempt that wrote them.
        seq: the writer's index of the first value (0 for its first value in this stream).
        count: how many values ``data`` holds.
        data: the serialized list of values (opaque to the World).
        closed: the writer closed the stream after these values.
        created_at: when the chunk was appended.
    """

    position: int
    writer: str
    attempt: int
    seq: int
    count: int
    data: bytes
    closed: bool
    created_at: datetime


def check_chunk(chunk: StreamChunk) -> StreamChunk:
    """``chunk``, if each field has its type: a World stores a chunk as it is given.

    Raises:
        BadInput: naming the field: ``writer`` not a non-empty str; ``position``, ``attempt``,
            ``seq`` or ``count`` not an int (``position`` is the store's to judge, the others
            must not be negative); ``data`` not bytes; ``closed`` not a bool; ``created_at``
            not a datetime with a timezone.
    """
    errors = []
    if not isinstance(chunk.writer, str) or not chunk.writer:
        errors.append(f"writer must be a non-empty str, not {chunk.writer!r}")
    for name in ("position", "attempt", "seq", "count"):
        value = getattr(chunk, name)
        if not isinstance(value, int) or isinstance(value, bool) or (name != "position" and value < 0):
            errors.append(f"{name} must be an int of at least 0, not {value!r}")
    if not isinstance(chunk.data, bytes):
        errors.append(f"data must be bytes, not {type(chunk.data).__name__}")
    if not isinstance(chunk.closed, bool):
        errors.append(f"closed must be a bool, not {chunk.closed!r}")
    if not isinstance(chunk.created_at, datetime) or chunk.created_at.utcoffset() is None:
        errors.append(f"created_at must be a datetime with a timezone, not {chunk.created_at!r}")
    if errors:
        raise BadInput("stream chunk: " + "; ".join(errors))
    return chunk


class StreamStore(Protocol):
    def append(self, run_id: str, name: str, chunk: StreamChunk) -> None:
        """Store ``chunk`` at ``chunk.position`` of stream ``name`` of the run.

        The position must be the stream's tail (``tail()``, or one past the writer's
        own last chunk): one conditional write.

        Raises:
            Conflict: the position is taken (another writer got there first, or this
                same chunk landed and its answer was lost). Ask for the tail again.
            BadInput: a bad name or position, or a field of the wrong type (``check_chunk``).
        """
        ...

    def read(
        self, run_id: str, name: str, *, after: int = -1, limit: int = MAX_READ_CHUNKS
    ) -> list[StreamChunk]:
        """Chunks from position ``after + 1`` on, in position order, at most ``limit``.

        Includes every chunk appended before the call began; fewer than ``limit``
        means there were no more. An unknown run or stream gives an empty list.
        """
        ...

    def tail(self, run_id: str, name: str) -> int:
        """The next free position of the stream (0 if it has no chunk)."""
        ...
