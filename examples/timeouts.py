"""Step timeouts: an attempt that hangs is given up on, and the next attempt is tried.

    world-aws run examples.timeouts:app quote --arg '"EURUSD"'

``@app.step(timeout="1s")`` bounds each attempt: here the first call to the price
service hangs, is cancelled after a second and recorded as a failed attempt
(``StepTimeoutError``, shown in the timeline); the retry answers at once. A sync
step past its timeout cannot be stopped (Python has no way to kill a thread): it
is abandoned and whatever it returns later is discarded. On Lambda the step
function's own timeout bounds an attempt too: one that cannot finish in the time
left is handed on to a fresh invocation instead of being killed.
"""

from __future__ import annotations

import asyncio

from world_aws import Workflows, get_step_metadata

app = Workflows()


@app.step(timeout="1s", max_retries=2)
async def fetch_price(pair: str) -> float:
    if get_step_metadata().attempt == 1:
        await asyncio.sleep(30)  # a call that hangs: cancelled when the attempt times out
    return 1.0842 if pair == "EURUSD" else 1.0


@app.workflow
async def quote(pair: str) -> dict[str, object]:
    price = await fetch_price(pair)
    return {"pair": pair, "price": price}
