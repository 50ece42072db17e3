"""``GET /runs/{run_id}/streams/{name}``: a run's stream as newline-delimited JSON, long-polled.

Each value is a line ``{"index": i, "value": ...}`` (the value rendered as JSON like
run results); the last line is ``{"next_index": n, "done": bool}``: ask again with
``start_index=n`` until ``done`` (the stream was closed, or the run ended and
every value was read). With ``wait`` > 0 a request that finds nothing new polls the
stream for up to that many seconds before answering. A read costs O(``limit``) past
``start_index``: the cursor reads and decodes no further than the values it answers.
"""

from __future__ import annotations

import json

from world_aws.api.http import NdjsonBody, Request, Response, parse_query
from world_aws.api.jsonable import to_jsonable
from world_aws.api.models import ReadStreamQuery
from world_aws.client.stream_reader import POLL_SECONDS, StreamCursor
from world_aws.contract.records import ResolveData
from world_aws.runtime.runtime import Runtime

# Values stop short of this many bytes of NDJSON (the API answers at most 5 MiB); the
# cursor line says where to go on. A single larger value is still sent (and refused as 413).
MAX_BODY_BYTES = 4 * 1024 * 1024


def read_stream(request: Request, params: dict[str, str], runtime: Runtime) -> Response:
    """``GET /runs/{run_id}/streams/{name}?start_index=&limit=&wait=`` → 200 NDJSON."""
    query = parse_query(ReadStreamQuery, request.query)
    run_id = params["run_id"]
    runtime.world.runs.get(run_id, resolve_data=ResolveData.NONE)  # 404 for an unknown run
    cursor = StreamCursor(runtime.world, runtime.app.serializer, run_id, params["name"], query.start_index)
    clock = runtime.world.clock
    deadline = clock.now().timestamp() + query.wait
    values = cursor.poll(query.limit)
    while not values and not cursor.ended() and clock.now().timestamp() < deadline:
        clock.sleep(POLL_SECONDS)
        values = cursor.poll(query.limit)
    if len(values) < query.limit and not cursor.closed and cursor.ended():
        values += cursor.poll(query.limit - len(values))  # what a step wrote just before its run ended
    lines: list[object] = []
    size = 0
    for index, value in values:
        line = {"index": index, "value": to_jsonable(value)}
        size += len(json.dumps(line, ensure_ascii=False).encode("utf-8", "replace")) + 1
        if lines and size > MAX_BODY_BYTES:
            break
        lines.append(line)
    next_index = len(lines) + (values[0][0] if values else max(query.start_index, cursor.next_index))
    done = len(lines) == len(values) and not cursor.more and (cursor.closed or cursor.run_ended)
    lines.append({"next_index": next_index, "done": done})
    return Response(200, NdjsonBody(lines))
