"""``DynamoStreamStore``: stream chunks as items of the run's partition, one conditional put each.

Item ``run#<run_id>`` / ``strm#<name>#<position, 12 digits>``: writer, attempt,
seq, count, closed, created_at, and ``data`` (inline up to 128 KiB, else an S3
reference through the shared payload code). An append is one ``PutItem`` with
``attribute_not_exists(sk)``: a taken position is a Conflict and the writer asks
for the tail again, so the chunks stay a gap-free prefix (a writer only ever puts
at the tail it read or one past its own last chunk). No item of the run's log or
entities is touched: a stream write never contends with the run's sequencer.
"""

from __future__ import annotations

import builtins

from world_aws.aws.codec import keys
from world_aws.aws.codec.dynamo import ConditionFailed, Item, Table
from world_aws.aws.codec.items import iso, parse_iso
from world_aws.aws.codec.payloads import EVENT_INLINE_LIMIT, PayloadReader, PayloadWriter
from world_aws.contract.streams import MAX_READ_CHUNKS, StreamChunk, check_chunk, check_stream_name
from world_aws.contract.world import BlobStore
from world_aws.errors import BadInput, Conflict


class DynamoStreamStore:
    """``streams.append`` / ``read`` / ``tail`` on the World's table."""

    def __init__(self, table: Table, blobs: BlobStore) -> None:
        self._table = table
        self._blobs = blobs

    def append(self, run_id: str, name: str, chunk: StreamChunk) -> None:
        """One conditional PutItem. Raises Conflict when the position is taken."""
        check_stream_name(name)
        check_chunk(chunk)
        if not 0 <= chunk.position <= keys.MAX_POSITION:
            raise BadInput(f"stream position {chunk.position} is out of range")
        item: Item = {
            **keys.stream_key(run_id, name, chunk.position),
            "writer": chunk.writer,
            "attempt": chunk.attempt,
            "seq": chunk.seq,
            "count": chunk.count,
            "data": PayloadWriter(self._blobs, run_id).encode(chunk.data, EVENT_INLINE_LIMIT),
            "closed": chunk.closed,
            "created_at": iso(chunk.created_at),
        }
        try:
            self._table.put(item, condition="attribute_not_exists(sk)")
        except ConditionFailed:
            raise Conflict(f"stream {name!r} of run {run_id}: position {chunk.position} is taken") from None

    def read(
        self, run_id: str, name: str, *, after: int = -1, limit: int = MAX_READ_CHUNKS
    ) -> builtins.list[StreamChunk]:
        """Consistent Queries from ``after + 1``: one per 1 MB page, until ``limit`` chunks or the end."""
        check_stream_name(name)
        prefix = keys.stream_prefix(name)
        start = f"{prefix}{after + 1:0{keys.POSITION_DIGITS}d}"
        reader = PayloadReader(self._blobs)
        found: builtins.list[StreamChunk] = []
        start_key: Item | None = None
        while len(found) < limit:  # a page stops at 1 MB: read on, so a short answer means the end
            page = self._table.query_page(
                "pk = :pk AND sk BETWEEN :start AND :end",
                {":pk": keys.run_pk(run_id), ":start": start, ":end": f"{prefix}~"},
                limit=limit - len(found),
                start_key=start_key,
            )
            found += [_chunk(item, reader) for item in page.items]
            if page.last_key is None:
                break
            start_key = page.last_key
        return found

    def tail(self, run_id: str, name: str) -> int:
        """One consistent Query of the stream's last item."""
        check_stream_name(name)
        prefix = keys.stream_prefix(name)
        page = self._table.query_page(
            "pk = :pk AND begins_with(sk, :prefix)",
            {":pk": keys.run_pk(run_id), ":prefix": prefix},
            forward=False,
            limit=1,
        )
        if not page.items:
            return 0
        return int(str(page.items[0][keys.SK])[len(prefix) :]) + 1


def _chunk(item: Item, reader: PayloadReader) -> StreamChunk:
    sk = str(item[keys.SK])
    created_at = parse_iso(item.get("created_at"))
    if created_at is None:
        raise BadInput(f"stream item {sk} has no created_at")
    return StreamChunk(
        position=int(sk.rsplit("#", 1)[1]),
        writer=str(item["writer"]),
        attempt=int(item["attempt"]),
        seq=int(item["seq"]),
        count=int(item["count"]),
        data=reader.decode(item.get("data")) or b"",
        closed=bool(item.get("closed", False)),
        created_at=created_at,
    )
