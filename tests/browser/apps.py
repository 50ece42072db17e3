"""The app the browser tests serve: steps the test releases one by one, a failing step, hooks, a retry.

``gated`` blocks its consumer thread until the test sets the gate named by its
argument (:func:`release`), so a test can watch a step run and then finish
without waiting on a clock.
"""

from __future__ import annotations

import asyncio
import threading
from collections import defaultdict

from world_aws import (
    Concurrency,
    FatalError,
    RetryableError,
    Workflows,
    create_hook,
    get_step_metadata,
    patched,
    sleep,
)

app = Workflows()

# Set by the test; read by the step bodies in the dev stack's consumer threads.
GATES: defaultdict[str, threading.Event] = defaultdict(threading.Event)
GATE_TIMEOUT_SECONDS = 60.0  # a test that forgets a gate does not hang the stack's shutdown forever


def release(name: str) -> None:
    GATES[name].set()


def release_all() -> None:
    for gate in list(GATES.values()):
        gate.set()


@app.step
def gated(gate: str) -> str:
    GATES[gate].wait(GATE_TIMEOUT_SECONDS)
    return f"passed {gate}"


@app.step
def charge_card(card: str) -> str:
    raise FatalError(f"card {card} was declined")


@app.step(max_retries=2)
def flaky_quote(item: str) -> int:
    if get_step_metadata().attempt == 1:
        raise RetryableError("quote service busy", retry_after=0)
    return 4200


@app.step(concurrency=Concurrency(limit=1, key=lambda gate, *_: gate.split(":")[0]))
def one_at_a_time(gate: str) -> str:
    GATES[gate].wait(GATE_TIMEOUT_SECONDS)
    return f"passed {gate}"


@app.workflow
async def in_line(key: str) -> list[str]:
    """Two calls of a step limited to one at a time per key: the second waits for the first's slot."""
    return list(await asyncio.gather(one_at_a_time(f"{key}:a"), one_at_a_time(f"{key}:b")))


@app.workflow(concurrency=Concurrency(limit=1, key=lambda key, *_: key))
async def one_run_at_a_time(key: str) -> str:
    """At most one run per key at once: a second run of the key stays pending until the first ends."""
    return await gated(f"{key}:run")


@app.workflow
async def three_gates(key: str) -> list[str]:
    return [await gated(f"{key}:{i}") for i in range(3)]


@app.workflow
async def declined(card: str) -> str:
    return await charge_card(card)


@app.workflow
async def approval(order: str) -> dict[str, object]:
    cents = await flaky_quote(order)
    await sleep(0.2)
    decision = await create_hook(token=f"approve:{order}")
    return {"order": order, "cents": cents, "decision": decision}


@app.workflow
async def patched_gate(key: str) -> str:
    first = await gated(f"{key}:0")
    if patched("gift-wrap"):
        return f"{first}, wrapped"
    return first


# Forking (issue 40): ``label`` fails for a key until the test fixes it; bodies are counted per key.
FIXED: set[str] = set()
BODIES: defaultdict[str, int] = defaultdict(int)


@app.step
def pick(key: str) -> str:
    BODIES[f"pick:{key}"] += 1
    return f"picked {key}"


@app.step
def pack(key: str) -> str:
    BODIES[f"pack:{key}"] += 1
    return f"packed {key}"


@app.step(max_retries=0)
def label(key: str) -> str:
    BODIES[f"label:{key}"] += 1
    if key not in FIXED:
        raise FatalError(f"no label printer for {key}")
    return f"labelled {key}"


@app.workflow
async def packing(key: str) -> list[str]:
    return [await pick(key), await pack(key), await label(key)]


@app.step
def slip_text(order: str) -> str:
    return f"packing slip for {order}"


@app.workflow
async def a_packing_slip(order: str) -> str:
    """A child workflow (its name sorts first: the start form must not default to it)."""
    return await slip_text(order)


@app.workflow
async def ship_with_slip(order: str) -> dict[str, str]:
    return {"order": order, "slip": await a_packing_slip(order)}
