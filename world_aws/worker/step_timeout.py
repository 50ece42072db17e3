"""Step timeouts: one attempt of a step body, bounded by its timeout and by the invocation's deadline.

``@app.step(timeout="30s")`` bounds each attempt: one still running 30 s after it
began is a failed attempt (:class:`StepTimeoutError`, retried by the step's
policy like any failure, then ``StepFailedError`` in the workflow). The handling
invocation's own end (a Lambda's timeout, ``Delivery.deadline``) bounds it too:
an attempt that has not finished ``HANDOFF_MARGIN_SECONDS`` before the
invocation is stopped is recorded as failed in the same way (the error says the
invocation's time ran out), so its retry goes out as a message and a fresh
invocation takes it, instead of the step being killed mid-attempt and left
running until its message reappears.

Python cannot stop a thread. With a timeout or a deadline, the body runs on a
thread of its own, with the caller's context (step metadata, trace): the caller
stops waiting when time is up, and an async body's task is cancelled. A sync
body keeps running until it returns; whatever it returns or raises then is
discarded: the attempt's outcome was recorded when it timed out, and a late
outcome is never written. An attempt that returns after its bound, even one a
wait did not catch, is timed out all the same (the bound is checked again on
the World's clock when the body returns).

Time is the World's clock, polled every ``POLL_SECONDS``: a ``ManualClock`` moved
past the bound times the attempt out, without any real waiting in tests.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Coroutine
from datetime import datetime, timedelta
from typing import Any

from world_aws.contract.clock import Clock
from world_aws.errors import StepTimeoutError

# Time left in the invocation at which a running attempt is handed on (its failure recorded
# and its retry message published, with time to spare for the writes).
HANDOFF_MARGIN_SECONDS = 5.0
_HANDED_ON = "could not finish before its invocation's time ran out; handed on"
POLL_SECONDS = 0.01


class _Attempt:
    """The body on a thread of its own; ``done`` is set when it returned or raised."""

    def __init__(self, call: Callable[[], Any], is_async: bool) -> None:
        self._call = call
        self._is_async = is_async
        self.done = threading.Event()
        self.result: Any = None
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[Any] | None = None

    def run(self) -> None:
        try:
            self.result = asyncio.run(self._main()) if self._is_async else self._call()
        except BaseException as exc:  # handed to the waiting caller, which raises it
            self.error = exc
        finally:
            self.done.set()

    async def _main(self) -> Any:
        self._loop = asyncio.get_running_loop()
        self._task = asyncio.current_task()
        coroutine: Coroutine[Any, Any, Any] = self._call()
        return await coroutine

    def cancel(self) -> None:
        """Cancel an async body's task (best effort: a sync body cannot be stopped)."""
        if self._loop is not None and self._task is not None:
            self._loop.call_soon_threadsafe(self._task.cancel)


def run_attempt(
    call: Callable[[], Any],
    *,
    is_async: bool,
    step_name: str,
    clock: Clock,
    timeout_seconds: float | None,
    deadline: datetime | None,
) -> Any:
    """Run one attempt of a step body, ``call()`` (a coroutine function's call when ``is_async``).

    Args:
        call: the body with its arguments bound.
        is_async: ``call()`` returns a coroutine, run on an event loop of its own.
        step_name: for the error message.
        clock: the World's clock, which measures the attempt.
        timeout_seconds: the step's timeout (``None``: none).
        deadline: when the handling invocation will be stopped (``None``: never).

    Returns:
        What the body returned.

    Raises:
        StepTimeoutError: the attempt was still running at its bound, or finished after it.
        BaseException: whatever the body raised in time.
    """
    started = clock.now()
    bound, reason = _bound(started, timeout_seconds, deadline)
    if bound is None:
        return run_to_end(call) if is_async else call()
    handed_on = reason == _HANDED_ON
    if clock.now() >= bound:  # no time left at all: do not begin what cannot finish
        raise StepTimeoutError(f"step {step_name!r} {reason}", handed_on=handed_on)
    attempt = _Attempt(call, is_async)
    context = contextvars.copy_context()
    threading.Thread(
        target=context.run, args=(attempt.run,), name=f"world-aws-step {step_name}", daemon=True
    ).start()
    while not attempt.done.wait(POLL_SECONDS):
        if clock.now() >= bound:
            attempt.cancel()
            raise StepTimeoutError(f"step {step_name!r} {reason}", handed_on=handed_on)
    if clock.now() > bound:
        late = f"step {step_name!r} {reason} (it finished late; its outcome is discarded)"
        raise StepTimeoutError(late, handed_on=handed_on)
    if attempt.error is not None:
        raise attempt.error
    return attempt.result


def _bound(
    started: datetime, timeout_seconds: float | None, deadline: datetime | None
) -> tuple[datetime | None, str]:
    """The earlier of the timeout and the hand-off point, and what the error says of it."""
    bounds: list[tuple[datetime, str]] = []
    if timeout_seconds is not None:
        limit = started + timedelta(seconds=timeout_seconds)
        bounds.append((limit, f"ran past its timeout of {timeout_seconds:g} s"))
    if deadline is not None:
        handoff = deadline - timedelta(seconds=HANDOFF_MARGIN_SECONDS)
        bounds.append((handoff, _HANDED_ON))
    if not bounds:
        return None, ""
    return min(bounds, key=lambda b: b[0])


def run_to_end(make: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run the coroutine ``make()`` to its end on this thread, or, if an event loop already
    runs on this thread (an async caller driving a World in-process), on a thread of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    result: list[Any] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            result.append(asyncio.run(make()))
        except BaseException as exc:  # handed back to the caller's thread as is
            failure.append(exc)

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(body,), name="world-aws-step", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
