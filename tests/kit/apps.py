"""Workflows the test-kit tests run."""

from __future__ import annotations

import asyncio

from world_aws import RetryableError, Workflows, create_hook, sleep

app = Workflows()


@app.step(max_retries=2)
def charge(order_id: str, cents: int) -> str:
    return f"receipt-{order_id}-{cents}"


@app.step(max_retries=1)
def ship(order_id: str, *, express: bool = False) -> str:
    return f"shipped-{order_id}{'-express' if express else ''}"


@app.workflow
async def order(order_id: str) -> list[str]:
    receipt = await charge(order_id, 700)
    await sleep("3h")
    return [receipt, await ship(order_id, express=True)]


@app.step(max_retries=3)
def throttled(key: str) -> str:
    raise RetryableError("slow down", retry_after=30)


@app.workflow
async def patient(key: str) -> str:
    return await throttled(key)


@app.workflow
async def approval(order_id: str, timeout: float | None = None) -> str:
    hook = create_hook(token=f"approve:{order_id}")
    try:
        decision = await asyncio.wait_for(hook, timeout=timeout)
    except TimeoutError:
        return "expired"
    return f"approved by {decision['by']}"


# Module state a workflow must not branch on (the test clears it).
fickle_calls: list[int] = []


@app.step
def left() -> str:
    return "left"


@app.step
def right() -> str:
    return "right"


@app.workflow
async def fickle() -> str:
    fickle_calls.append(1)
    first = await (left() if len(fickle_calls) % 2 else right())
    await sleep("1s")
    return first


flaky_attempts: list[str] = []


@app.step(max_retries=2)
def flaky_check(order_id: str) -> str:
    flaky_attempts.append(order_id)
    if flaky_attempts.count(order_id) == 1:
        raise ConnectionError("fraud service unavailable")
    return f"checked-{order_id}"


@app.workflow
async def review(order_id: str) -> list[str]:
    """A retried step, a sleep, then a hook with a timeout; a second sleep, a second hook."""
    checked = await flaky_check(order_id)
    await sleep("10m")
    first = create_hook(token=f"first:{order_id}")
    try:
        answer = await asyncio.wait_for(first, timeout=3600)
    except TimeoutError:
        return [checked, "expired"]
    await sleep("1d")
    second = await create_hook(token=f"second:{order_id}")
    return [checked, answer["by"], second["by"]]


@app.workflow
async def reviews_by_child(order_id: str) -> list[str]:
    return await review(order_id)
