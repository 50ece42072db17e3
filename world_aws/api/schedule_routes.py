"""``GET /schedules``: the app's schedules, each with its next tick and the scheduler's record of it."""

from __future__ import annotations

from dataclasses import asdict

from world_aws.api.http import Request, Response, json_response
from world_aws.client.schedule_view import describe_schedules
from world_aws.runtime.runtime import Runtime


def list_schedules(_request: Request, _params: dict[str, str], runtime: Runtime) -> Response:
    """``GET /schedules`` → 200 ``{schedules: [{name, workflow, expression, overlap, catch_up,
    next_tick, last_tick, last_run_id, started, skipped, missed}]}`` (times ISO-8601 UTC)."""
    listed = describe_schedules(runtime.app, runtime.world.clock.now(), runtime.world.schedules)
    return json_response(200, {"schedules": [asdict(info) for info in listed]})
