"""An order that waits for a person: a step, then a hook resumed from outside, then a step.

The workflow prepares a quote, then waits on the hook ``approve:<order_id>``
until someone resumes it with a decision, e.g. with the operator CLI::

    world-aws dev examples.approval:app          # in one terminal
    curl -s -X POST "$WORLD_AWS_API/runs" -H 'content-type: application/json' \\
        -d '{"workflow": "approve_order", "args": ["order-7"]}'
    world-aws resume approve:order-7 --payload '{"approved": true, "by": "ada"}'
"""

from __future__ import annotations

from world_aws import Workflows, create_hook

app = Workflows()


@app.step
def quote(order_id: str, cents: int) -> dict[str, object]:
    return {"order": order_id, "cents": cents, "needs_approval": cents >= 10_000}


@app.step
def fulfil(order_id: str, approver: str) -> str:
    return f"order {order_id} approved by {approver}, shipping"


@app.workflow
async def approve_order(order_id: str, cents: int = 25_000) -> dict[str, object]:
    offer = await quote(order_id, cents)
    if not offer["needs_approval"]:
        return {"order": order_id, "status": "auto-approved"}
    decision = await create_hook(token=f"approve:{order_id}", metadata={"cents": cents})
    if not isinstance(decision, dict) or not decision.get("approved"):
        return {"order": order_id, "status": "rejected", "decision": decision}
    shipped = await fulfil(order_id, str(decision.get("by", "someone")))
    return {"order": order_id, "status": "approved", "shipping": shipped}
