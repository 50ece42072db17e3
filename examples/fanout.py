"""Fan-out and a race: many steps at once with ``asyncio.gather``, the first of two with ``asyncio.wait``.

    world-aws run examples.fanout:app fan_out --arg 20
    world-aws run examples.fanout:app race --arg '"lamp"'

``fan_out`` starts N steps together (each one is its own SQS message, so they run
in parallel on the step consumers) and aggregates their results. ``race`` asks
two carriers for a quote and takes whichever answers first.
"""

from __future__ import annotations

import asyncio
import time

from world_aws import Workflows

app = Workflows()


@app.step
def square(n: int) -> int:
    return n * n


@app.workflow
async def fan_out(n: int = 20) -> dict[str, int]:
    # gather() returns the results in call order, however the steps finish.
    squares = await asyncio.gather(*(square(i) for i in range(n)))
    return {"count": len(squares), "sum": sum(squares), "max": max(squares, default=0)}


@app.step
def quick_quote(item: str) -> dict[str, object]:
    return {"carrier": "quick", "item": item, "cents": 700}


@app.step
def slow_quote(item: str) -> dict[str, object]:
    time.sleep(1.0)  # a carrier whose API is slow: its answer is recorded second
    return {"carrier": "slow", "item": item, "cents": 500}


@app.workflow
async def race(item: str) -> dict[str, object]:
    # ensure_future: a step call is an awaitable; asyncio.wait() wants futures.
    quick = asyncio.ensure_future(quick_quote(item))
    slow = asyncio.ensure_future(slow_quote(item))
    done, _pending = await asyncio.wait([quick, slow], return_when=asyncio.FIRST_COMPLETED)
    # The winner is the step whose completion the run's log recorded first, so every
    # replay of this run picks the same one. (The workflow continues once no step of
    # the run is pending, so this run ends after the slow quote has answered too.)
    winner = done.pop().result()
    return {"item": item, "winner": winner}
