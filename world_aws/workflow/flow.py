"""Flow control as declared on a step: ``Concurrency`` (slots per key) and ``RateLimit`` (starts per period).

``@app.step(concurrency=Concurrency(limit=5, key=lambda customer_id, *_: customer_id))``
lets at most 5 attempts of the step run at once per customer, across every consumer
and every run; ``rate_limit=RateLimit("100/min", key=...)`` lets at most 100 attempts
start in any minute per key. The key function receives the step's arguments; without
one every call shares one key. The worker admits an attempt before it starts it
(``world_aws.worker.admission``); the records are the World's (``world.admission``).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from world_aws.errors import BadInput
from world_aws.workflow.context import parse_duration

LOG = logging.getLogger("world_aws.flow")

# How long a slot stays held without its holder's outcome: a Lambda runs at most 15 minutes,
# so a holder silent past that has died (https://docs.aws.amazon.com/lambda/latest/dg/configuration-timeout.html).
DEFAULT_LEASE_SECONDS = 900.0

KeyFn = Callable[..., Any]

_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*(s|sec|second|m|min|minute|h|hour|d|day)s?\s*$")
_PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
_PERIODS |= {"d": 86400, "day": 86400}


@dataclass(frozen=True, slots=True)
class Concurrency:
    """At most ``limit`` attempts at once per key; waiters start first come, first served.

    Args:
        limit: slots per key (at least 1).
        key: called with the step's arguments; its ``str()`` is the key (None: one key).
        lease: how long a slot outlives a holder that died without an outcome ("15m",
            seconds, a timedelta); an attempt must not run longer (a step ``timeout``
            shorter than the lease keeps that true).
    """

    limit: int
    key: KeyFn | None = None
    lease: str | float | timedelta = DEFAULT_LEASE_SECONDS
    lease_seconds: float = field(init=False, default=DEFAULT_LEASE_SECONDS)

    def __post_init__(self) -> None:
        if isinstance(self.limit, bool) or not isinstance(self.limit, int) or self.limit < 1:
            raise BadInput(f"Concurrency(limit=...) must be an int of at least 1, got {self.limit!r}")
        seconds = parse_duration(self.lease)
        if seconds <= 0:
            raise BadInput(f"Concurrency(lease=...) must be positive, got {self.lease!r}")
        object.__setattr__(self, "lease_seconds", seconds)


@dataclass(frozen=True, slots=True)
class RateLimit:
    """At most N starts per period per key: ``RateLimit("100/min")``, ``"20/s"``, ``"5/10s"``.

    Args:
        rate: "<count>/<period>", the period a unit (s, min, h, day) with an optional count.
        key: as ``Concurrency.key``.
    """

    rate: str
    key: KeyFn | None = None
    limit: int = field(init=False, default=0)
    period_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        match = _RATE.match(self.rate) if isinstance(self.rate, str) else None
        if match is None or int(match.group(1)) < 1:
            raise BadInput(
                f"RateLimit({self.rate!r}): write '<count>/<period>', e.g. '100/min', '20/s', '5/10s'"
            )
        count = int(match.group(2)) if match.group(2) else 1
        if count < 1:
            raise BadInput(f"RateLimit({self.rate!r}): the period must be at least 1 unit")
        object.__setattr__(self, "limit", int(match.group(1)))
        object.__setattr__(self, "period_seconds", float(count * _PERIODS[match.group(3)]))


def key_of(key: KeyFn | None, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    """The flow-control key of a call: ``str(key(*args, **kwargs))``, or "*" without a key function.

    Raises:
        BadInput: the key function raised (naming its error).
    """
    if key is None:
        return "*"
    try:
        return str(key(*args, **kwargs))
    except Exception as exc:
        raise BadInput(f"the flow-control key function raised {type(exc).__name__}: {exc}") from exc


def step_scope(step_name: str, key: str) -> str:
    """The scope of a step's flow-control records (``world.admission``): one per step name and key."""
    return f"step:{step_name}:{key}"


def call_key(
    loads: Callable[[bytes], Any],
    concurrency: Concurrency | None,
    rate_limit: RateLimit | None,
    data: bytes,
    *,
    where: str,
) -> str:
    """The flow-control key of a call whose serialized input is ``data`` (``loads``: the app's decoder).

    A key function that raises gives the key "!error": the step's own attempt would fail
    the same way, and under one shared key it runs and fails where its error is recorded,
    rather than never running at all.
    """
    value = loads(data)
    args, kwargs = tuple(value.get("args", ())), dict(value.get("kwargs", {}))
    key = concurrency.key if concurrency is not None else None
    if key is None and rate_limit is not None:
        key = rate_limit.key
    try:
        return key_of(key, args, kwargs)
    except BadInput:
        LOG.warning("flow-control key function of %s raised; using the key '!error'", where, exc_info=True)
        return "!error"
