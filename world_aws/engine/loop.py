"""A deterministic asyncio event loop for replaying workflow code.

The workflow function is ordinary ``async def`` code that may use
``asyncio.gather``, ``asyncio.wait`` and ``asyncio.wait_for``. Replay runs it on
this loop, which never touches the OS: ``run_until_quiescent`` runs ready
callbacks until none is left (the workflow can make no further progress without
an outcome from the log; non-deterministic calls are refused while it runs,
see ``guard.py``), and timers are not real: ``call_at`` hands each timer
to a ``TimerSink`` that turns it into a durable wait, and the replay engine fires
it when the log says the wait completed. ``time()`` is the workflow's
deterministic clock (epoch seconds of the replay's current position).
"""

from __future__ import annotations

import asyncio
import contextvars
import heapq
from asyncio import events as _events
from collections import deque
from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, Protocol, TypeVar

from world_aws.engine import guard

_T = TypeVar("_T")


class TimerSink(Protocol):
    def timer_created(self, handle: asyncio.TimerHandle, delay: float) -> None:
        """Called for every timer the workflow arms (``asyncio.sleep``, ``wait_for``...)."""
        ...


class ReplayLoop(asyncio.AbstractEventLoop):  # the I/O methods stay unimplemented: no I/O here
    """Runs workflow coroutines deterministically, with no I/O and no real time."""

    def __init__(self, now: Callable[[], float], timers: TimerSink | None = None) -> None:
        self._ready: deque[asyncio.Handle] = deque()
        self._now = now
        self._timers = timers
        self._closed = False
        self._running = False
        self._errors: list[dict[str, Any]] = []

    # --- scheduling -----------------------------------------------------------------

    def call_soon(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        handle = asyncio.Handle(callback, args, self, context)
        self._ready.append(handle)
        return handle

    def call_soon_threadsafe(  # type: ignore[override]
        self, callback: Callable[..., object], *args: Any, context: contextvars.Context | None = None
    ) -> asyncio.Handle:
        raise RuntimeError("workflow code may not schedule work from other threads")

    def call_later(  # type: ignore[override]
        self,
        delay: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        return self.call_at(self.time() + delay, callback, *args, context=context)

    def call_at(  # type: ignore[override]
        self,
        when: float,
        callback: Callable[..., object],
        *args: Any,
        context: contextvars.Context | None = None,
    ) -> asyncio.TimerHandle:
        handle = asyncio.TimerHandle(when, callback, args, self, context)
        if self._timers is None:
            raise RuntimeError("timers are not available here")
        self._timers.timer_created(handle, max(0.0, when - self.time()))
        return handle

    def run_in_executor(self, executor: Any, func: Callable[..., Any], *args: Any) -> NoReturn:  # type: ignore[override]
        guard.refuse("loop.run_in_executor() (asyncio.to_thread)", "do this in a step")

    def fire(self, handle: asyncio.TimerHandle) -> None:
        """Run a durable timer's callback (the replay engine calls this when its wait completed)."""
        if not handle.cancelled():
            self._ready.append(handle)

    def _timer_handle_cancelled(self, handle: asyncio.TimerHandle) -> None:
        pass

    def time(self) -> float:
        return self._now()

    # --- futures and tasks ----------------------------------------------------------

    def create_future(self) -> asyncio.Future[Any]:
        return asyncio.Future(loop=self)

    def create_task(  # type: ignore[override]
        self,
        coro: Coroutine[Any, Any, _T],
        *,
        name: str | None = None,
        context: contextvars.Context | None = None,
    ) -> asyncio.Task[_T]:
        return asyncio.Task(coro, loop=self, name=name, context=context)

    # --- running --------------------------------------------------------------------

    def run_until_quiescent(self) -> None:
        """Run ready callbacks until none is left."""
        previous = _events._get_running_loop()
        _events._set_running_loop(self)
        self._running = True
        armed = guard.arm()  # workflow code may not read the clock, randomness, threads...
        try:
            while self._ready:
                handle = self._ready.popleft()
                if not handle.cancelled():
                    if armed:
                        guard.rearm()
                    try:
                        handle._run()
                    except SystemExit:
                        # Workflow code called sys.exit: asyncio set it as its task's exception
                        # before re-raising it, so the replay fails the run as for any error of
                        # the workflow. Let through, it would fail the whole SQS batch.
                        pass
        finally:
            guard.disarm(armed)
            self._running = False
            _events._set_running_loop(previous)

    def is_running(self) -> bool:
        return self._running

    def is_closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        self._closed = True
        self._ready.clear()

    def get_debug(self) -> bool:
        return False

    def set_debug(self, enabled: bool) -> None:
        pass

    # --- errors ---------------------------------------------------------------------

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        self._errors.append(context)

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        self._errors.append(context)

    def get_exception_handler(self) -> None:
        return None

    async def shutdown_asyncgens(self) -> None:
        return None

    async def shutdown_default_executor(self, timeout: float | None = None) -> None:
        return None


def sort_timers(handles: list[asyncio.TimerHandle]) -> list[asyncio.TimerHandle]:
    """Timers in firing order (by due time, then creation order)."""
    keyed = [(h.when(), i, h) for i, h in enumerate(handles)]
    heapq.heapify(keyed)
    return [heapq.heappop(keyed)[2] for _ in range(len(keyed))]
