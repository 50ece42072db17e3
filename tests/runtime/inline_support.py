"""Apps and fault helpers shared by the inline-execution tests."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Collection
from typing import Any

from harness.harness import Harness
from world_aws import Workflows
from world_aws.contract.records import EventRequest, EventResult, EventType
from world_aws.contract.world import ForwardingWorld, World

from .spy import Call, Fault


def chain_app(ran: list[str]) -> Workflows:
    app = Workflows()

    @app.step(name="add")
    def add(x: int, y: int) -> int:
        ran.append(f"add {x}+{y}")
        return x + y

    @app.workflow
    async def chain(n: int) -> int:
        total = 0
        for i in range(n):
            total = await add(total, i)
        return total

    return app


def fan_app(ran: list[str], gate: Callable[[int], None] | None = None) -> Workflows:
    """A gather of ``square`` steps; ``gate(x)`` runs first in each body (to hold some back)."""
    app = Workflows()

    @app.step(name="square")
    def square(x: int) -> int:
        if gate is not None:
            gate(x)
        ran.append(f"square {x}")
        return x * x

    @app.workflow
    async def fan(n: int) -> list[int]:
        return list(await asyncio.gather(*(square(i) for i in range(n))))

    return app


def requests_of(call: Call) -> list[Any]:
    """The event requests a write carries: ``events.create`` one, ``events.append_after`` its batch."""
    if call.op == "events.create":
        return [call.detail]
    return list(call.detail) if call.op == "events.append_after" else []


def outcome_in(call: Call) -> EventType | None:
    """The step outcome a write carries: an ``events.create`` of one, or a batch that starts with one."""
    requests = requests_of(call)  # a batch: the outcome first, then the next creates or the run's end
    etype = getattr(requests[0], "type", None) if requests else None
    return etype if etype in (EventType.STEP_COMPLETED, EventType.STEP_FAILED) else None


def inject_at_outcome(
    harness: Harness, nth: int | Collection[int], error: Exception, *, after: bool = False
) -> list[Fault]:
    """Make the ``nth`` write of a step outcome (alone or pipelined with the next creates) raise ``error``.

    ``nth`` may name several writes (counted from 1 over the whole harness).
    """
    nths = {nth} if isinstance(nth, int) else set(nth)
    seen = {"outcomes": 0}

    def nth_outcome(call: Call) -> bool:
        if outcome_in(call) is None:
            return False
        seen["outcomes"] += 1
        return seen["outcomes"] in nths

    return [
        harness.spy.inject(op, error, match=nth_outcome, times=len(nths), after=after)
        for op in ("events.create", "events.append_after")
    ]


# Runs one ``events.create``: what an ``Around`` is handed, to call when it lets the write go.
Write = Callable[[], EventResult]
Around = Callable[[Write], EventResult]


class AroundWorld(ForwardingWorld):
    """``inner`` whose ``events.create`` of the requests ``which`` picks go through ``around``.

    A runtime bound to it can be held at such a write, or have it followed by something
    (another runtime's handling, say): two runtimes over one World, interleaved there.
    """

    def __init__(self, inner: World, which: Callable[[EventRequest], bool], around: Around) -> None:
        super().__init__(inner)
        self.events = _AroundEvents(inner.events, which, around)  # type: ignore[assignment]

    def close(self) -> None:
        """The inner World is the harness's."""


class _AroundEvents:
    def __init__(self, inner: Any, which: Callable[[EventRequest], bool], around: Around) -> None:
        self._inner = inner
        self._which = which
        self._around = around

    def create(self, run_id: str, request: EventRequest) -> EventResult:
        if self._which(request):
            return self._around(lambda: self._inner.create(run_id, request))
        return self._inner.create(run_id, request)  # type: ignore[no-any-return]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
