"""``OpCosts``: round trips per World operation, measured on moto; ``LatencyCharge``: them as latency.

The moto pass attributes every AWS call to the World operation (op, ``bench.ops``)
that made it. Summed over runs, that gives per op: how often it ran and how many
calls of each ``service.Operation`` it made, hence its mean round trips per
invocation by service. The calls of one op are sequential on AWS (judge, reserve,
commit; claim, send, record), so an op costs the sum of its round trips:
``dynamodb * ddb_latency + sqs * sqs_latency + s3 * s3_latency``. That is what the
model pass (``bench.model``) sleeps before each op on the in-memory World.

Calls made outside any op are the event source's (receives, deletes, visibility
changes): kept apart in ``event_source``; the model's pump charges them itself.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench.instrument import EMPTY_RECEIVE, EVENT_SOURCE, Latency, Snapshot
from bench.measure import RunSample, calls_by_service
from bench.world import method_of

SERVICES = ("dynamodb", "sqs", "s3")


@dataclass(frozen=True, slots=True)
class OpCost:
    """One op's measured cost: ``invocations``, and ``calls`` per ``service.Operation`` over all of them."""

    invocations: int
    calls: dict[str, int]

    def mean_calls(self) -> dict[str, float]:
        """Calls per invocation by ``service.Operation``."""
        return {op: count / self.invocations for op, count in sorted(self.calls.items())}

    def round_trips(self) -> dict[str, float]:
        """Round trips per invocation by service (every service in ``SERVICES``, 0 if none)."""
        out = dict.fromkeys(SERVICES, 0.0)
        for operation, count in self.calls.items():
            service = operation.split(".", 1)[0]
            out[service] = out.get(service, 0.0) + count / self.invocations
        return out

    def seconds(self, latency: Latency) -> float:
        """The op's latency: its sequential round trips times each service's round-trip time."""
        return sum(trips * latency.of(service) for service, trips in self.round_trips().items())


@dataclass(frozen=True, slots=True)
class OpCosts:
    """Measured costs per op key, and the calls made outside any op (the event source's)."""

    ops: dict[str, OpCost]
    event_source: dict[str, int] = field(default_factory=dict)
    runs: int = 0

    @classmethod
    def from_samples(cls, samples: Iterable[RunSample]) -> OpCosts:
        """Sum the op attribution of the moto samples (model samples carry no calls)."""
        invocations: dict[str, int] = {}
        calls: dict[str, dict[str, int]] = {}
        runs = 0
        for sample in samples:
            if sample.backend != "moto" or not sample.ops:
                continue
            runs += 1
            for key, count in sample.ops.items():
                invocations[key] = invocations.get(key, 0) + count
            for key, by_operation in sample.op_calls.items():
                into = calls.setdefault(key, {})
                for operation, count in by_operation.items():
                    into[operation] = into.get(operation, 0) + count
        ops = {
            key: OpCost(count, dict(sorted(calls.get(key, {}).items())))
            for key, count in sorted(invocations.items())
        }
        return cls(ops, dict(sorted(calls.get(EVENT_SOURCE, {}).items())), runs)

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, runs: int) -> OpCosts:
        """The op attribution of a recorder window (``after - before``) over ``runs`` runs."""
        calls: dict[str, dict[str, int]] = {}
        for (key, operation), count in sorted(snapshot.op_calls.items()):
            calls.setdefault(key, {})[operation] = count
        ops = {key: OpCost(count, calls.get(key, {})) for key, count in sorted(snapshot.ops.items())}
        return cls(ops, calls.get(EVENT_SOURCE, {}), runs)

    def cost(self, key: str) -> OpCost | None:
        """The cost of ``key``; for a key never measured, its method's pooled cost; None if neither."""
        if key in self.ops:
            return self.ops[key]
        method = method_of(key)
        pooled = [cost for name, cost in self.ops.items() if method_of(name) == method]
        if not pooled:
            return None
        calls: dict[str, int] = {}
        for cost in pooled:
            for operation, count in cost.calls.items():
                calls[operation] = calls.get(operation, 0) + count
        return OpCost(sum(cost.invocations for cost in pooled), calls)

    def round_trips(self, ops: Mapping[str, int]) -> dict[str, float]:
        """Modeled round trips by service of the given op invocations (unmeasured ops count 0)."""
        out = dict.fromkeys(SERVICES, 0.0)
        for key, count in ops.items():
            cost = self.cost(key)
            if cost is None:
                continue
            for service, trips in cost.round_trips().items():
                out[service] = out.get(service, 0.0) + trips * count
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "ops": {
                key: {
                    "invocations": cost.invocations,
                    "round_trips": {k: round(v, 4) for k, v in cost.round_trips().items()},
                    "calls": cost.calls,
                }
                for key, cost in self.ops.items()
            },
            "event_source": self.event_source,
        }

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> OpCosts:
        ops = {
            str(key): OpCost(int(entry["invocations"]), {str(k): int(v) for k, v in entry["calls"].items()})
            for key, entry in document["ops"].items()
        }
        source = {str(k): int(v) for k, v in document.get("event_source", {}).items()}
        return cls(ops, source, int(document.get("runs", 0)))

    def markdown(self) -> str:
        """The costs as a markdown table: one row per op, then the event source's calls."""
        headers = ["op", "invocations", "DynamoDB", "SQS", "S3", "calls per invocation"]
        lines = [
            "| " + " | ".join(headers) + " |",
            "|---|" + "|".join("---:" for _ in headers[1:-1]) + "|---|",
        ]
        for key, cost in self.ops.items():
            trips = cost.round_trips()
            detail = ", ".join(f"{op.split('.', 1)[1]} {mean:.2f}" for op, mean in cost.mean_calls().items())
            cells = [f"`{key}`", str(cost.invocations), *(f"{trips[s]:.2f}" for s in SERVICES), detail]
            lines.append("| " + " | ".join(cells) + " |")
        for operation, count in self.event_source.items():
            label = "empty polls" if operation == EMPTY_RECEIVE else operation.split(".", 1)[1]
            lines.append(f"| (event source) {label} | {count} calls | | | | outside any op |")
        return "\n".join(lines)


class LatencyCharge:
    """Sleeps each op's measured round trips: the latency of the model World.

    Args:
        costs: the measured costs.
        latency: round-trip time per service.
        sleep: how to wait (tests inject a recorder instead of real sleeps).
    """

    def __init__(self, costs: OpCosts, latency: Latency, sleep: Callable[[float], None] = time.sleep) -> None:
        self.costs = costs
        self.latency = latency
        self._sleep = sleep
        self._lock = threading.Lock()
        self._unmeasured: set[str] = set()
        # Per key, computed once: the model's own CPU competes with its ops for the GIL.
        self._seconds: dict[str, float] = {}

    def seconds(self, key: str) -> float:
        """What ``key`` costs; 0 for an op whose method was never measured (noted in ``unmeasured``)."""
        with self._lock:
            known = self._seconds.get(key)
        if known is not None:
            return known
        cost = self.costs.cost(key)
        seconds = 0.0 if cost is None else cost.seconds(self.latency)
        with self._lock:
            self._seconds[key] = seconds
            if cost is None:
                self._unmeasured.add(key)
        return seconds

    def __call__(self, key: str) -> None:
        seconds = self.seconds(key)
        if seconds > 0:
            self._sleep(seconds)

    @property
    def unmeasured(self) -> list[str]:
        """Ops charged nothing because the moto pass never ran them (nor their method)."""
        with self._lock:
            return sorted(self._unmeasured)


def modeled_round_trips(costs: OpCosts) -> Callable[[Snapshot], dict[str, float]]:
    """Round trips of a model window: its ops' measured costs plus the calls the model's pump recorded."""

    def count(snapshot: Snapshot) -> dict[str, float]:
        out = costs.round_trips(snapshot.ops)
        for service, calls in calls_by_service(snapshot).items():
            out[service] = out.get(service, 0.0) + calls
        return out

    return count
