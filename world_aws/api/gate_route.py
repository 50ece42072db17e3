"""``GET /workflows/{workflow}/gates/{key}``: a debounce window, a batch or a singleton key, as it is now."""

from __future__ import annotations

from dataclasses import asdict

from world_aws.api.http import Request, Response, json_response
from world_aws.client.gate_view import describe_gate
from world_aws.errors import NotFound, UnknownWorkflow
from world_aws.runtime.runtime import Runtime


def get_gate(_request: Request, params: dict[str, str], runtime: Runtime) -> Response:
    """→ 200 ``{workflow, kind, key, waiting, run_id, due, items, starting, live_run_id, live_status}``.

    ``waiting`` says it in words; ``due`` is ISO-8601 UTC. 404 for an unknown workflow,
    400 for one without debounce, batch or singleton.
    """
    try:
        info = describe_gate(runtime.world, runtime.app, params["workflow"], params["key"])
    except UnknownWorkflow as exc:
        raise NotFound(str(exc)) from None
    body = asdict(info)
    body["due"] = info.due.isoformat() if info.due is not None else None
    return json_response(200, body)
