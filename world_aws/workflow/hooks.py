"""The workflow side of a hook: an awaitable for one payload, an async iterator for many, disposable.

Tokens. Whoever holds a live hook's token can resume its run, so a default token
(``create_hook()`` without ``token=``) is a secret: ``whk_`` and 32 hex digits of
``os.urandom`` (128 bits), recorded in ``hook_created`` and read back from the log
on every replay. A caller-chosen token (``create_hook(token="approve:o-1")``) is an
identifier the caller can predict, and so can anyone else: use one only where
knowing it is harmless or the resume path checks its caller.
"""

from __future__ import annotations

import asyncio
from collections import deque
from os import urandom
from typing import Any

from world_aws.errors import BadInput, HookConflictError, HookDisposedError

# A token is stored in a DynamoDB key (``token#<token>``, partition keys hold at most 2048
# bytes: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html);
# a longer one would be accepted here and then fail in every write, the run redelivering.
MAX_TOKEN_BYTES = 1024


def check_token(token: str) -> str:
    """``token``, if a World can store it.

    Raises:
        BadInput: empty, over ``MAX_TOKEN_BYTES`` in UTF-8, or not encodable (a lone surrogate).
    """
    try:
        size = len(token.encode("utf-8"))
    except UnicodeEncodeError:
        raise BadInput("hook token: not valid text (a lone surrogate?)") from None
    if not 0 < size <= MAX_TOKEN_BYTES:
        raise BadInput(f"hook token: must be 1 to {MAX_TOKEN_BYTES} bytes in UTF-8, got {size}")
    return token


DEFAULT_TOKEN_PREFIX = "whk_"


def new_hook_token() -> str:
    """A fresh unguessable default hook token (128 bits from ``os.urandom``)."""
    return DEFAULT_TOKEN_PREFIX + urandom(16).hex()


class Hook:
    """A durable hook created inside a workflow by ``create_hook()``.

    ``await hook`` returns the next payload; ``async for payload in hook`` yields
    payloads in the order they were received. A token held by another live hook
    raises ``HookConflictError`` at the await. ``hook.dispose()`` releases the
    token (``hook_disposed`` is written at the next suspension, or the run's end
    frees it): payloads already delivered are still returned, then ``async for``
    ends and ``await`` raises ``HookDisposedError``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, hook_id: str, token: str, metadata: bytes) -> None:
        self._loop = loop
        self.hook_id = hook_id
        self.token = token
        self.metadata = metadata
        self._payloads: deque[Any] = deque()
        self._waiters: deque[asyncio.Future[Any]] = deque()
        self._conflict: HookConflictError | None = None
        self.disposed = False

    def next_payload(self) -> asyncio.Future[Any]:
        future: asyncio.Future[Any] = self._loop.create_future()
        if self._payloads:
            future.set_result(self._payloads.popleft())
        elif self._conflict is not None:
            future.set_exception(self._conflict)
        elif self.disposed:
            future.set_exception(HookDisposedError(self.token))
        else:
            self._waiters.append(future)
        return future

    def __await__(self) -> Any:
        return self.next_payload().__await__()

    def __aiter__(self) -> Hook:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.next_payload()
        except HookDisposedError:
            raise StopAsyncIteration from None

    def dispose(self) -> None:
        """Release the hook: no payload arrives after this point in the workflow."""
        if self.disposed:
            return
        self.disposed = True
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(HookDisposedError(self.token))

    def deliver(self, payload: Any) -> None:
        if self.disposed:
            # A resume that landed before hook_disposed was written but after the
            # workflow disposed the hook: dropped, so that every replay agrees.
            return
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(payload)
                return
        self._payloads.append(payload)

    def conflict(self, error: HookConflictError) -> None:
        self._conflict = error
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)
