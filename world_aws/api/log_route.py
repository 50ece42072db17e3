"""``GET /runs/{run_id}/log?after=``: a run's log as exported, for the replay gate.

The page has the export format's shape (``contract.log_export``): the run's header
and its events after position ``after``, every payload exact (base64), and
``next_after`` when more follow. ``world-aws export`` and ``world-aws replay --api``
read a run's whole log through it. A page stops past ``PAGE_BYTES`` of encoded
events (at least one event per page), so it fits a Lambda response (6 MB).
"""

from __future__ import annotations

import json
from typing import Any

from world_aws.api.http import Request, Response, json_response, parse_query
from world_aws.api.models import ReadLogQuery
from world_aws.contract import log_export
from world_aws.contract.records import ResolveData
from world_aws.runtime.runtime import Runtime

# Encoded event bytes per page: well under Lambda's 6 MB response, with room for the header.
PAGE_BYTES = 4 * 1024 * 1024


def read_log(request: Request, params: dict[str, str], runtime: Runtime) -> Response:
    """``GET /runs/{run_id}/log?after=`` → 200 ``{format, version, run, events, next_after}``."""
    query = parse_query(ReadLogQuery, request.query)
    run = runtime.world.runs.get(params["run_id"], resolve_data=ResolveData.NONE)  # 404 if unknown
    events = runtime.world.events.list(run.run_id, after=query.after, resolve_data=ResolveData.ALL)
    page: list[dict[str, Any]] = []
    size = 0
    for event in events:
        row = log_export.event_json(event)
        size += len(json.dumps(row))
        if page and size > PAGE_BYTES:
            break
        page.append(row)
    more = len(page) < len(events)
    body = {
        "format": log_export.FORMAT,
        "version": log_export.VERSION,
        "run": log_export.header_json(run),
        "events": page,
        "next_after": page[-1]["position"] if more else None,
    }
    return json_response(200, body)
