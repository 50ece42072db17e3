"""The demo: an order pipeline with sequential steps, a fan-out and a retried step.

Run it with ``world-aws demo`` (or ``world-aws run world_aws.demo:app checkout --arg '"order-42"'``).
"""

from __future__ import annotations

import asyncio

from world_aws import RetryableError, Workflows, get_step_metadata

app = Workflows()

PRICES = {"book": 1299, "lamp": 4500, "mug": 850}


@app.step
def validate(order_id: str, items: list[str]) -> list[str]:
    unknown = [item for item in items if item not in PRICES]
    if unknown:
        raise ValueError(f"order {order_id} has unknown items: {unknown}")
    return sorted(items)


@app.step
async def reserve(order_id: str, item: str) -> dict[str, object]:
    await asyncio.sleep(0)  # a real step would call an inventory service here
    return {"item": item, "cents": PRICES[item], "bin": f"bin-{sum(map(ord, item)) % 7}"}


@app.step(max_retries=3)
def charge(order_id: str, cents: int) -> str:
    meta = get_step_metadata()
    if meta.attempt == 1:
        # The payment provider times out on the first try; the step is retried.
        raise RetryableError("payment provider timed out", retry_after=0)
    return f"ch_{order_id}_{cents}_{meta.step_id[-4:]}"


@app.step
def ship(order_id: str, bins: list[str]) -> str:
    return f"parcel for {order_id} from {', '.join(sorted(set(bins)))}"


@app.workflow
async def checkout(order_id: str, items: list[str] | None = None) -> dict[str, object]:
    chosen = await validate(order_id, items or ["book", "lamp", "mug"])
    reserved = await asyncio.gather(*(reserve(order_id, item) for item in chosen))
    total = sum(int(str(r["cents"])) for r in reserved)
    receipt = await charge(order_id, total)
    parcel = await ship(order_id, [str(r["bin"]) for r in reserved])
    return {"order": order_id, "total_cents": total, "receipt": receipt, "parcel": parcel}
