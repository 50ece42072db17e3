"""Issue 41 item 6: ``inspect``, ``GET /runs/{run_id}/steps`` and ``/timeline`` say what a step waits for.

On both Worlds, served over real HTTP: a step whose key's only slot another holder
has is in line ("waiting for a concurrency slot of `charge` key `cust-7`"), a step
whose rate window is spent waits for a token ("rate limited until 00:00:01").
"""

from __future__ import annotations

import asyncio
import io
import json
import urllib.request

from harness.harness import Harness
from world_aws import Concurrency, RateLimit, Workflows
from world_aws.api.server import serve_api
from world_aws.cli.main import main
from world_aws.contract.admission import Verdict


def waiting_app() -> Workflows:
    app = Workflows()

    @app.step(name="charge", concurrency=Concurrency(limit=1, key=lambda customer: customer))
    def charge(customer: str) -> str:
        return customer

    @app.step(name="ask", rate_limit=RateLimit("2/s"))
    def ask(i: int) -> int:
        return i

    @app.workflow
    async def both(customer: str) -> list[object]:
        return list(await asyncio.gather(charge(customer), ask(1)))

    return app


def test_a_waiting_step_says_what_it_waits_for_in_the_api_and_inspect(harness: Harness) -> None:
    world, clock = harness.world, harness.clock
    # GIVEN cust-7's only slot held by another run's step, and this second's two tokens spent
    held = world.admission.acquire(
        "step:charge:cust-7", holder="other/step", ticket="m", limit=1, lease_seconds=600
    )
    assert held.verdict is Verdict.GRANTED
    for holder in ("o1", "o2"):
        assert world.admission.take("step:ask:*", holder=holder, limit=2, period_seconds=1) is None
        world.admission.settle("step:ask:*", holder=holder, started_at=clock.now(), period_seconds=1)
    runtime = harness.runtime_for(waiting_app())
    # WHEN a run calls both steps and its messages are delivered (no time passes)
    run_id = runtime.start("both", "cust-7").run_id
    harness.drain()
    with serve_api(runtime, port=0) as server:
        with urllib.request.urlopen(f"{server.url}/runs/{run_id}/steps") as answer:
            steps = {s["step_name"]: s for s in json.load(answer)["steps"]}
        with urllib.request.urlopen(f"{server.url}/runs/{run_id}/timeline") as answer:
            spans = {s["name"]: s for s in json.load(answer)["spans"] if s["kind"] == "step"}
        out, err = io.StringIO(), io.StringIO()
        assert main(["inspect", run_id, "--api", server.url], out=out, err=err) == 0, err.getvalue()
    # THEN both steps are pending, and the API says what each waits for
    assert steps["charge"]["status"] == steps["ask"]["status"] == "pending"
    assert steps["charge"]["waiting"] == (
        "waiting for a concurrency slot of `charge` key `cust-7` (0 ahead, 1 of 1 held)"
    )
    due = clock.now().replace(microsecond=0)
    assert steps["ask"]["waiting"] == f"rate limited until {due.hour:02}:{due.minute:02}:{due.second + 1:02}"
    # AND the timeline the UI draws carries the same words on each step's span
    assert {name: span["waiting"] for name, span in spans.items()} == {
        name: step["waiting"] for name, step in steps.items()
    }
    # AND inspect prints the same under each step
    text = out.getvalue()
    assert f"waiting: {steps['charge']['waiting']}" in text
    assert f"waiting: {steps['ask']['waiting']}" in text
    # AND once the slot is given back and a second passes, the run completes
    for body in world.admission.release("step:charge:cust-7", holder="other/step", ticket="m"):
        assert body  # the waiter's message, which its releaser would publish
    harness.advance(31)
    assert harness.settle(run_id) is not None
    assert runtime.get_run(run_id).result(timeout=0) == ["cust-7", 1]
