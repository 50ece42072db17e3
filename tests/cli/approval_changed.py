"""``examples.approval`` after an incompatible change: its first step is now ``price``, not ``quote``.

The step names are spelt as the original module's, so only the change differs.
"""

from __future__ import annotations

from world_aws import Workflows, create_hook

app = Workflows()


@app.step(name="examples.approval.price")
def price(order_id: str, cents: int) -> dict[str, object]:
    return {"order": order_id, "cents": cents, "needs_approval": cents >= 10_000}


@app.step(name="examples.approval.fulfil")
def fulfil(order_id: str, approver: str) -> str:
    return f"order {order_id} approved by {approver}, shipping"


@app.workflow
async def approve_order(order_id: str, cents: int = 25_000) -> dict[str, object]:
    offer = await price(order_id, cents)
    if not offer["needs_approval"]:
        return {"order": order_id, "status": "auto-approved"}
    decision = await create_hook(token=f"approve:{order_id}", metadata={"cents": cents})
    shipped = await fulfil(order_id, str(decision.get("by", "someone")))
    return {"order": order_id, "status": "approved", "shipping": shipped}
