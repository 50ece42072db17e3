"""Durable time: a sleep, the workflow's clock, and a reminder sent when a step is slow.

    world-aws run examples.sleep:app onboard --arg '"ada"'

``sleep()`` records a wait and schedules a delayed wake-up message: nothing runs
(and nothing is billed) while the run sleeps, and a sleep of "3d" works the same
way. ``now()`` is the workflow's deterministic clock, the same on every replay.
"""

from __future__ import annotations

import asyncio

from world_aws import RetryableError, Workflows, get_step_metadata, now, sleep

app = Workflows()


@app.step
def send(user: str, message: str) -> str:
    return f"to {user}: {message}"


@app.step(max_retries=3)
def payment_status(user: str) -> str:
    if get_step_metadata().attempt == 1:
        raise RetryableError("the payment has not settled yet", retry_after=2)
    return "paid"


@app.workflow
async def onboard(user: str, delay: str = "2s") -> dict[str, object]:
    welcome = await send(user, "welcome aboard")
    before = now()
    await sleep(delay)  # durable: survives restarts and redeploys
    slept = (now() - before).total_seconds()

    # The reminder pattern: wait up to 1 s for the payment; if it has not settled by
    # then, nudge the user and keep waiting. asyncio.wait's timeout is a durable timer
    # too, and unlike asyncio.wait_for it does not cancel the step when time is up.
    payment = asyncio.ensure_future(payment_status(user))
    done, _pending = await asyncio.wait([payment], timeout=1)
    reminders = [] if done else [await send(user, "reminder: your payment is still pending")]
    return {
        "welcome": welcome,
        "slept_seconds": round(slept, 1),  # at least the delay: the wake-up is never early
        "reminders": reminders,
        "payment": await payment,
    }
