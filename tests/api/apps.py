"""A small app for the API tests: a workflow with a non-JSON result, a failing one, one with a hook."""

from __future__ import annotations

import datetime
import decimal

from world_aws import FatalError, RetryableError, Workflows, create_hook, get_step_metadata, sleep

app = Workflows()


@app.step
def shout(name: str) -> str:
    return name.upper()


@app.step
def refuse(reason: str) -> str:
    raise FatalError(reason)


@app.workflow
async def greet(name: str, punctuation: str = "!") -> dict[str, object]:
    loud = await shout(name)
    return {
        "greeting": f"HELLO {loud}{punctuation}",
        "letters": {c for c in name},  # a set: JSON has none
        "raw": name.encode(),  # bytes
        "when": datetime.date(2026, 1, 2),
        "price": decimal.Decimal("1.10"),
        "pair": (1, 2),
    }


@app.workflow
async def explode(reason: str) -> str:
    return await refuse(reason)


@app.workflow
async def wait_for_approval(order_id: str) -> dict[str, object]:
    decision = await create_hook(token=f"approve:{order_id}")
    return {"order": order_id, "decision": decision}


@app.workflow
async def power_of_two(bits: int, sign: int = 1) -> dict[str, object]:
    return {"n": sign * (1 << bits), "small": 1 << 64}


@app.step(max_retries=2)
def flaky(name: str) -> str:
    if get_step_metadata().attempt == 1:
        raise RetryableError(f"{name}: busy", retry_after=2)
    return name


@app.workflow
async def retry_then_nap(name: str, blob: str = "") -> str:
    first = await flaky(name)
    await sleep("5s")
    await create_hook(token=f"nap:{name}")
    return first + blob
