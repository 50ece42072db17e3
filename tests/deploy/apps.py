"""Two incompatible versions of one app, and versions of an app whose runs diverge (deploy tests).

``version_app(1)`` and ``version_app(2)`` register the same workflow names, but
version 2 calls another first step: a run of version 1 replayed on version 2's
code diverges from its log at its first step. Each version's result names it.
"""

from __future__ import annotations

from world_aws import Workflows, create_hook, sleep


def version_app(version: int) -> Workflows:
    """The order workflow as deployment ``version`` has it: a step, a sleep, a hook."""
    app = Workflows()

    @app.step(name=f"order.reserve_v{version}")
    def reserve(order: str) -> str:
        return f"reserved {order} by v{version}"

    @app.workflow(name="order")
    async def order(order: str) -> dict[str, object]:
        reserved = await reserve(order)
        await sleep("1s")
        approval = await create_hook(token=f"approve:{order}")
        return {"version": version, "reserved": reserved, "approval": approval}

    return app


def repaired_app() -> Workflows:
    """A version 3 that replays version 1's runs: it keeps v1's first step and adds a second."""
    app = Workflows()

    @app.step(name="order.reserve_v1")
    def reserve(order: str) -> str:
        return f"reserved {order} by v1"

    @app.step(name="order.ship")
    def ship(order: str) -> str:
        return f"shipped {order} by v3"

    @app.workflow(name="order")
    async def order(order: str) -> dict[str, object]:
        reserved = await reserve(order)
        await sleep("1s")
        approval = await create_hook(token=f"approve:{order}")
        return {"version": 3, "reserved": reserved, "approval": approval, "shipped": await ship(order)}

    return app
