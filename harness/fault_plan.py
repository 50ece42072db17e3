"""``FaultPlan``: which faults fire where, decided from a seed and the call's identity.

A fault-injection run (``bench.chaos``, ``tests/faults``) asks the plan at each
injection point whether a fault fires: ``plan.fires(Fault.LOST, key)``. The
answer is a hash of the seed, the fault, the point's ``key`` (e.g. the event
type and correlation id of a write, never a random message id) and how many
times that key was asked before, so a configuration replays the same faults at
the same calls whatever order threads ask in.

Faults come in groups (``GROUPS``), each switched on with one rate; ``Crash`` is
the process dying: a ``BaseException``, so nothing that catches ``Exception``
can swallow it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum


class Crash(BaseException):
    """The process running the invocation died at this point."""


class Fault(StrEnum):
    """One kind of fault, and where it is injected."""

    TRANSIENT = "transient"  # a call fails before it is sent (throttling, 500, connection error)
    LOST = "lost"  # a call ran, its answer was lost (the caller sees an error)
    REPEAT = "repeat"  # a call that committed is sent again (a client retry): applied twice
    DROP_DELETE = "drop_delete"  # an acked message is not deleted: redelivered, same message id
    COPY = "copy"  # a message is delivered twice at once (the copy runs inside the original)
    CRASH_CALL = "crash_call"  # the process dies at a World/AWS call inside an invocation
    CRASH_BODY = "crash_body"  # the process dies right after a step body ran
    CRASH_DELIVERY = "crash_delivery"  # the process dies before the runtime sees a delivery
    DELAY = "delay"  # a published message gets extra delay (deliveries reordered)
    # Every call of a delivery throttled while a storm lasts (``FaultyWorld.storm``); in no
    # group: a configuration's storm setting turns it on (``bench.chaos --storm-seconds``).
    STORM = "storm"


GROUPS: dict[str, tuple[Fault, ...]] = {
    "none": (),
    "transient": (Fault.TRANSIENT,),
    "lost": (Fault.LOST, Fault.REPEAT),
    "delivery": (Fault.DROP_DELETE, Fault.COPY),
    "crash": (Fault.CRASH_CALL, Fault.CRASH_BODY, Fault.CRASH_DELIVERY),
    "reorder": (Fault.DELAY,),
}

# Default rate per fault when its group is on: per call for call faults, per
# delivery for delivery faults, per body for CRASH_BODY.
DEFAULT_RATES: dict[Fault, float] = {
    Fault.TRANSIENT: 0.05,
    Fault.LOST: 0.03,
    Fault.REPEAT: 0.02,
    Fault.DROP_DELETE: 0.1,
    Fault.COPY: 0.05,
    Fault.CRASH_CALL: 0.01,
    Fault.CRASH_BODY: 0.05,
    Fault.CRASH_DELIVERY: 0.03,
    Fault.DELAY: 0.2,
}
# Extra delay of a delayed publish, in seconds: up to this much.
MAX_EXTRA_DELAY_SECONDS = 3.0


def rates_for(groups: Iterable[str], scale: float = 1.0) -> dict[Fault, float]:
    """The default rates of every fault in ``groups`` ("all" for every group), times ``scale``."""
    names = list(GROUPS) if "all" in groups else list(groups)
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        raise ValueError(f"unknown fault group(s) {unknown}; known: {', '.join(GROUPS)}, all")
    return {fault: DEFAULT_RATES[fault] * scale for name in names for fault in GROUPS[name]}


@dataclass
class FaultPlan:
    """Seeded fault decisions, and a count of the faults that fired.

    Attributes:
        seed: the configuration's seed.
        rates: the probability of each fault at one injection point (absent: never).
        fired: how many times each fault fired.
        journal: where each fault fired, in order (``"<fault> <key>"``).
    """

    seed: int
    rates: Mapping[Fault, float] = field(default_factory=dict)
    fired: Counter[Fault] = field(default_factory=Counter)
    journal: list[str] = field(default_factory=list)
    _asked: Counter[tuple[Fault, str]] = field(default_factory=Counter)
    _chosen: Counter[str] = field(default_factory=Counter)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def fires(self, fault: Fault, key: str) -> bool:
        """Whether ``fault`` fires at the next injection point named ``key``."""
        rate = self.rates.get(fault, 0.0)
        if rate <= 0:
            return False
        with self._lock:
            nth = self._asked[(fault, key)]
            self._asked[(fault, key)] += 1
        hit = self.uniform(f"{fault}|{key}|{nth}") < rate
        if hit:
            with self._lock:
                self.fired[fault] += 1
                self.journal.append(f"{fault} {key}")
        return hit

    def uniform(self, key: str) -> float:
        """A number in [0, 1) fixed by the seed and ``key``."""
        digest = hashlib.blake2b(f"{self.seed}|{key}".encode(), digest_size=8).digest()
        return int.from_bytes(digest, "big") / 2**64

    def choose(self, key: str, options: int) -> int:
        """An index in ``range(options)`` fixed by the seed, ``key`` and how often ``key`` was chosen."""
        with self._lock:
            nth = self._chosen[key]
            self._chosen[key] += 1
        return int(self.uniform(f"{key}|{nth}") * options)

    def record(self, fault: Fault, key: str) -> None:
        """Count a fault fired by a rule of its own (not a rate): a storm's throttles."""
        with self._lock:
            self.fired[fault] += 1
            self.journal.append(f"{fault} {key}")

    def extra_delay(self, key: str) -> float:
        """Extra seconds for a delayed publish (0 unless ``Fault.DELAY`` fires)."""
        if not self.fires(Fault.DELAY, key):
            return 0.0
        return round(self.uniform(f"delay|{key}") * MAX_EXTRA_DELAY_SECONDS, 3)
