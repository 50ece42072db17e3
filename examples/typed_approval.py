"""Typed hooks: a refund waits for an ``Approval``, whose fields are checked when it is resumed.

``Approval`` is a ``world_aws.Hook`` subclass (a dataclass; subclass
``pydantic.BaseModel`` too for a model). The workflow awaits one on the token
``refund:<order_id>``; a resume whose payload does not fit the class is refused
(400 over the API naming the field, exit 2 from the CLI) and never reaches the
run. ``world-aws run`` resumes nobody, so there the request expires after
``timeout`` seconds (3 by default):

    world-aws run examples.typed_approval:app refund --arg '"order-1"'

With ``world-aws dev`` (a 10-minute timeout):

    world-aws dev examples.typed_approval:app                  # in one terminal
    curl -s -X POST "$WORLD_AWS_API/runs" -H 'content-type: application/json' \\
        -d '{"workflow": "refund", "args": ["order-2", 2500, 600]}'
    world-aws resume refund:order-2 --payload '{"approved": "maybe"}'    # exit 2: not a boolean
    world-aws resume refund:order-2 --payload '{"approved": true, "by": "ada"}'
"""

from __future__ import annotations

import asyncio

from world_aws import Hook, Workflows

app = Workflows()


class Approval(Hook):
    approved: bool
    by: str = "someone"


@app.step
def pay_back(order_id: str, cents: int, approver: str) -> str:
    return f"refunded {cents} cents on {order_id} (approved by {approver})"


@app.workflow
async def refund(order_id: str, cents: int = 2500, timeout: float = 3.0) -> dict[str, object]:
    try:
        decision = await asyncio.wait_for(Approval.wait(token=f"refund:{order_id}"), timeout=timeout)
    except TimeoutError:
        return {"order": order_id, "status": "expired"}
    if not decision.approved:
        return {"order": order_id, "status": "refused", "by": decision.by}
    return {"order": order_id, "status": "refunded", "notice": await pay_back(order_id, cents, decision.by)}
