"""Scheduled workflows: started once per tick of a rate or cron expression (EventBridge syntax, UTC).

    world-aws run examples.scheduled:app digest        # one run now, as a tick would start it
    world-aws schedules examples.scheduled:app          # the schedules and their next tick
    world-aws dev examples.scheduled:app                # the scheduler starts them on time

``digest`` runs every day at 06:00 UTC; ``heartbeat`` every 5 minutes, and a tick that
comes while the previous heartbeat is still running is skipped (``overlap="skip"``, the
default). On AWS the template's SchedulerFunction passes every minute; after downtime
each schedule starts only its most recent due tick (``catch_up=1``) and counts the
others as missed. A tick's run id comes from the schedule and the tick, so two passes
never start it twice.
"""

from __future__ import annotations

import asyncio

from world_aws import Workflows, get_workflow_metadata, now

app = Workflows()


@app.step
def count_signups(region: str) -> int:
    return len(region) * 7  # stands in for a query


@app.step
def send_digest(lines: list[str]) -> str:
    return f"sent {len(lines)} lines"


@app.workflow(schedule="cron(0 6 * * ? *)")
async def digest() -> dict[str, object]:
    regions = ["eu", "us", "apac"]
    counts = await asyncio.gather(*(count_signups(r) for r in regions))
    lines = [f"{region}: {n} sign-ups" for region, n in zip(regions, counts, strict=True)]
    return {"run": get_workflow_metadata().run_id, "at": now().isoformat(), "sent": await send_digest(lines)}


@app.step
def ping(target: str) -> str:
    return f"{target} ok"


@app.workflow
async def heartbeat(target: str) -> str:
    return await ping(target)


# The registry call: a name of its own, fixed arguments, the policies spelled out.
app.schedule(heartbeat, "rate(5 minutes)", name="heartbeat-api", args=("api",), overlap="skip", catch_up=1)
