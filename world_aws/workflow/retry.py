"""Step retry delays: exponential backoff with jitter and a cap (contract §8.2).

A step body that raises is retried after a delay chosen here, unless it raised
``RetryableError(retry_after=...)``, whose delay wins. The default schedule
doubles from 1 s up to 5 minutes, each delay drawn at random from its upper
half ("equal jitter"), so many steps failing together (a downstream outage
under a fan-out) do not come back in lock-step. Lambda durable functions and
DBOS default to the same shape.

The delay is decided by the step consumer, never by the workflow, so the
randomness here does not touch replay determinism. The consumer records it as
the step's ``retry_after`` and publishes a fresh delayed message for the next
attempt (retries do not count against the delivery cap).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from world_aws.contract.clock import Clock
from world_aws.errors import BadInput, Throttled, Transient

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait before each retry of a step.

    Attributes:
        initial: the delay before the first retry, in seconds.
        multiplier: each later delay is the previous one times this.
        max_delay: no delay is longer than this, in seconds.
        jitter: the fraction of each delay drawn at random: the delay is uniform in
            ``[d * (1 - jitter), d]``. 0 gives exact delays.
    """

    initial: float = 1.0
    multiplier: float = 2.0
    max_delay: float = 300.0
    jitter: float = 0.5

    def __post_init__(self) -> None:
        if not self.initial >= 0:
            raise BadInput(f"Backoff.initial must be >= 0 seconds, got {self.initial}")
        if not self.multiplier >= 1:
            raise BadInput(f"Backoff.multiplier must be >= 1, got {self.multiplier}")
        if not self.max_delay >= self.initial:
            raise BadInput(f"Backoff.max_delay ({self.max_delay}) must be >= initial ({self.initial})")
        if not 0 <= self.jitter <= 1:
            raise BadInput(f"Backoff.jitter must be between 0 and 1, got {self.jitter}")

    def ceiling(self, failed_attempt: int) -> float:
        """The delay before the retry after attempt ``failed_attempt`` (1-based), before jitter."""
        exponent = max(0, failed_attempt - 1)
        # Compare in the exponent's domain: multiplier**exponent overflows floats long
        # before a step could reach such an attempt number through max_retries.
        delay = self.initial
        for _ in range(exponent):
            delay *= self.multiplier
            if delay >= self.max_delay:
                return self.max_delay
        return min(delay, self.max_delay)

    def delay(self, failed_attempt: int, rand: Callable[[], float] = random.random) -> float:
        """The jittered delay before the retry after attempt ``failed_attempt``, in seconds."""
        ceiling = self.ceiling(failed_attempt)
        return ceiling * (1 - self.jitter * rand())


DEFAULT_BACKOFF = Backoff()


def retry_in_process(call: Callable[[], T], *, attempts: int, clock: Clock, max_pause: float) -> T:
    """``call``, tried up to ``attempts`` times while it fails with ``Transient`` or ``Throttled``.

    For a World call whose failure the caller would rather absorb than hand to a
    redelivery (recording an outcome, the wake-up after a recorded hook payload).
    Between tries it pauses a throttle's ``retry_after``, else 50 ms doubling, at
    most ``max_pause`` seconds. The last failure is raised.
    """
    for attempt in range(attempts):
        try:
            return call()
        except (Transient, Throttled) as exc:
            if attempt == attempts - 1:
                raise
            pause = exc.retry_after if isinstance(exc, Throttled) else 0.05 * 2**attempt
            clock.sleep(min(max_pause, pause))
    raise AssertionError("unreachable")  # pragma: no cover - the loop always returns or raises
