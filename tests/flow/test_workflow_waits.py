"""Issue 41 item 6 for workflows: ``GET /runs/{run_id}`` and ``inspect`` say what a pending run waits for.

On both Worlds, served over real HTTP: a run in line for its workflow's only slot
("waiting for a concurrency slot of workflow `order` key `c1` (position 1, 1 of 1 held)"),
its priority, and a run whose start waits for a token ("rate limited until ...").
"""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

from harness.harness import Harness
from world_aws import Concurrency, RateLimit, Workflows, create_hook
from world_aws.api.server import serve_api
from world_aws.cli.main import main
from world_aws.runtime.runtime import Runtime


def waiting_app() -> Workflows:
    app = Workflows()

    @app.workflow(concurrency=Concurrency(1, key=lambda customer: customer))
    async def order(customer: str) -> str:
        return str(await create_hook(token=f"hold:{customer}"))

    @app.workflow(rate_limit=RateLimit("1/min"), priority=3)
    async def report(n: int) -> int:
        return n

    return app


def _view(runtime: Runtime, run_id: str) -> tuple[dict[str, Any], str]:
    with serve_api(runtime, port=0) as server:
        with urllib.request.urlopen(f"{server.url}/runs/{run_id}") as answer:
            run = json.load(answer)
        out, err = io.StringIO(), io.StringIO()
        assert main(["inspect", run_id, "--api", server.url], out=out, err=err) == 0, err.getvalue()
    return run, out.getvalue()


def test_a_run_waiting_for_a_slot_or_a_token_says_so_in_the_api_and_inspect(harness: Harness) -> None:
    runtime = harness.runtime_for(waiting_app())
    # GIVEN c1's only slot held by a live run, and a second run of c1 started with priority 5
    holder = runtime.start("order", "c1").run_id
    harness.drain()
    waiting = runtime.start("order", "c1", priority=5).run_id
    # AND a report run that took this minute's token, and a second one
    runtime.start("report", 1)
    harness.drain()
    rated = runtime.start("report", 2).run_id
    harness.drain()
    # WHEN the API and inspect show the pending runs
    run, text = _view(runtime, waiting)
    # THEN the run in line is pending, with its place and its priority
    assert run["status"] == "pending"
    assert (
        run["waiting"]
        == "waiting for a concurrency slot of workflow `order` key `c1` (position 1, 1 of 1 held)"
    )
    assert run["priority"] == 5
    assert f"waiting   {run['waiting']}" in text
    assert "priority  5" in text
    # AND the rate-limited run says until when (its reserved token: a minute after the first start)
    run, text = _view(runtime, rated)
    due = harness.clock.now() + timedelta(minutes=1)
    assert run["status"] == "pending" and run["priority"] == 3
    assert run["waiting"] == f"rate limited until {due:%H:%M:%S}"
    assert f"waiting   {run['waiting']}" in text
    # AND the holder, running, waits for nothing
    run, _ = _view(runtime, holder)
    assert run["status"] == "running" and run["waiting"] is None


def test_post_runs_takes_a_priority_and_refuses_one_that_is_not_an_int(harness: Harness) -> None:
    runtime = harness.runtime_for(waiting_app())
    with serve_api(runtime, port=0) as server:

        def post(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
            request = urllib.request.Request(
                f"{server.url}/runs",
                data=json.dumps(body).encode(),
                headers={"content-type": "application/json"},
                method="POST",
            )
            try:
                with urllib.request.urlopen(request) as answer:
                    return answer.status, json.load(answer)
            except urllib.error.HTTPError as refused:
                return refused.code, json.load(refused)

        # WHEN a run is started over HTTP with a priority
        status, started = post({"workflow": "order", "args": ["c9"], "priority": 7})
        # THEN it is recorded on the run
        assert status == 201
        assert runtime.get_run(started["run_id"]).run().attributes["$priority"] == "7"
        # AND a priority that is not an int is refused, naming it
        status, refused = post({"workflow": "order", "args": ["c9"], "priority": "high"})
        assert status == 400 and "priority" in json.dumps(refused)
