"""Child workflows and continue-as-new.

    world-aws run examples.children:app ship_orders --arg '["o-1", "o-2", "o-3"]'
    world-aws run examples.children:app count_up --arg 10

``ship_orders`` awaits one ``ship_one`` workflow per order: each is a child run of
its own (its own log, retries and timeline, linked to the parent in ``world-aws
inspect``), started together with ``asyncio.gather``. A child that fails raises
``WorkflowFailedError`` in the parent, which can catch it like any exception.

``count_up`` adds 1..limit, three numbers per run: each run then calls
``continue_as_new`` with its running total, so however long the count, no run's
log holds more than a dozen events (``world-aws run`` prints the last run's result).
"""

from __future__ import annotations

import asyncio

from world_aws import FatalError, WorkflowFailedError, Workflows, continue_as_new

app = Workflows()


@app.step
def pack(order_id: str) -> str:
    if order_id.startswith("bad"):
        raise FatalError(f"order {order_id} has no items")
    return f"parcel-{order_id}"


@app.step
def label(order_id: str, parcel: str) -> str:
    return f"{parcel} to the address of {order_id}"


@app.workflow
async def ship_one(order_id: str) -> str:
    parcel = await pack(order_id)
    return await label(order_id, parcel)


@app.workflow
async def ship_orders(order_ids: list[str]) -> dict[str, object]:
    async def attempt(order_id: str) -> str:
        try:
            return await ship_one(order_id)
        except WorkflowFailedError as err:
            return f"not shipped: {err.error_message}"

    shipped = await asyncio.gather(*(attempt(o) for o in order_ids))
    return {"count": len(shipped), "shipped": list(shipped)}


@app.step
def add(total: int, n: int) -> int:
    return total + n


@app.workflow
async def count_up(limit: int, total: int = 0, n: int = 1) -> dict[str, int]:
    for _ in range(3):
        if n > limit:
            return {"limit": limit, "total": total}
        total = await add(total, n)
        n += 1
    continue_as_new(limit, total, n)
