"""Workflow apps shared by several scenario files (each call builds a fresh ``Workflows``)."""

from __future__ import annotations

import asyncio

from world_aws import Workflows

RACE_QUOTES = ("race.quote_a", "race.quote_b")


def race_app(*, quote_b_first: bool = False) -> Workflows:
    """``race(order_id)``: fetch, then race two quotes (FIRST_COMPLETED), then book the winner.

    ``quote_b_first`` builds the same workflow with the two quote calls swapped: a
    code change in step order, which a stored log must reject.
    """
    app = Workflows()

    @app.step(name="race.fetch")
    def fetch(order_id: str) -> str:
        return f"{order_id}-data"

    @app.step(name="race.quote_a")
    def quote_a(data: str) -> str:
        return "A"

    @app.step(name="race.quote_b")
    def quote_b(data: str) -> str:
        return "B"

    @app.step(name="race.book")
    def book(winner: str) -> str:
        return f"booked with {winner}"

    @app.workflow(name="race")
    async def race(order_id: str) -> dict[str, str]:
        data = await fetch(order_id)
        # ensure_future: a step call is an awaitable future; wait() wants futures
        if quote_b_first:
            b, a = asyncio.ensure_future(quote_b(data)), asyncio.ensure_future(quote_a(data))
        else:
            a, b = asyncio.ensure_future(quote_a(data)), asyncio.ensure_future(quote_b(data))
        done, _pending = await asyncio.wait([a, b], return_when=asyncio.FIRST_COMPLETED)
        assert len(done) == 1, "replay delivers one outcome at a time"
        winner = str(done.pop().result())
        return {"winner": winner, "booking": await book(winner)}

    return app
