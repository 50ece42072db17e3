"""Issue 41 items 4-6: ``GET /workflows/{workflow}/gates/{key}`` and ``world-aws gate`` say what a
debounce window, a batch and a singleton key hold, on both Worlds, served over real HTTP."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.request
from datetime import datetime, timedelta
from typing import Any

from harness.harness import Harness
from tests.flow.test_gated_starts import gated_app
from world_aws.api.server import serve_api
from world_aws.cli.main import main
from world_aws.contract.records import RunStatus
from world_aws.worker.gates import BATCH_ITEMS_ATTRIBUTE


def _get(url: str) -> Any:
    with urllib.request.urlopen(url) as answer:
        return json.load(answer)


def test_the_api_and_the_cli_show_a_window_a_batch_and_a_singleton_key(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    started = harness.clock.now()
    # GIVEN a debounced start, two batched items (of 3) and a live singleton run
    window = runtime.start("reindex", "ann", "v1")
    batch = runtime.start("ingest", {"shard": 4, "n": 1})
    runtime.start("ingest", {"shard": 4, "n": 2})
    live = runtime.start("settle_account", "a1", True)
    harness.drain()
    with serve_api(runtime, port=0) as server:
        debounced = _get(f"{server.url}/workflows/reindex/gates/ann")
        batching = _get(f"{server.url}/workflows/ingest/gates/4")
        held = _get(f"{server.url}/workflows/settle_account/gates/a1")
        free = _get(f"{server.url}/workflows/settle_account/gates/a2")
        out, err = io.StringIO(), io.StringIO()
        assert main(["gate", "ingest", "4", "--api", server.url], out=out, err=err) == 0, err.getvalue()
        try:
            _get(f"{server.url}/workflows/nope/gates/x")
        except urllib.error.HTTPError as exc:
            unknown = exc.code
    # THEN each says in words what it holds and when it starts
    assert debounced["run_id"] == window.run_id and debounced["kind"] == "debounce"

    def at(seconds: float) -> datetime:
        return started + timedelta(seconds=seconds)

    assert debounced["waiting"] == (
        f"debounced: run `{window.run_id}` starts at {at(30):%H:%M:%S} unless key `ann` is started again"
    )
    assert batching["run_id"] == batch.run_id and batching["items"] == 2
    assert batching["waiting"] == (
        f"batching: run `{batch.run_id}` holds 2 of 3 items; starts at {at(5):%H:%M:%S} or when full"
    )
    assert held["live_run_id"] == live.run_id and held["waiting"] == f"held by run `{live.run_id}` (running)"
    assert free["waiting"] == "free"
    assert out.getvalue() == f"batch ingest key 4: {batching['waiting']}\n"
    assert unknown == 404
    # AND the batch's run, once started, carries its item count (inspect shows the attributes)
    harness.advance(5)
    harness.drain()
    assert harness.settle(batch.run_id) is RunStatus.COMPLETED
    assert harness.world.runs.get(batch.run_id).attributes[BATCH_ITEMS_ATTRIBUTE] == "2"


def test_a_batched_start_through_the_api_converts_its_item_and_joins_the_batch(harness: Harness) -> None:
    runtime = harness.runtime_for(gated_app())
    with serve_api(runtime, port=0) as server:
        answers = []
        for n in (1, 2, 3):
            request = urllib.request.Request(
                f"{server.url}/runs",
                data=json.dumps({"workflow": "ingest", "args": [{"shard": 9, "n": n}]}).encode(),
                headers={"content-type": "application/json"},
                method="POST",
            )
            with urllib.request.urlopen(request) as answer:
                answers.append(json.load(answer))
    # THEN the three items joined one batch, which started when full, with the list of them
    assert len({a["run_id"] for a in answers}) == 1
    run_id = answers[0]["run_id"]
    harness.drain()
    assert harness.settle(run_id) is RunStatus.COMPLETED
    assert runtime.get_run(run_id).result() == [1, 2, 3]
