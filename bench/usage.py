"""``Usage``: the billable units of some AWS requests, summed; one per World operation in a bill.

The meter (``bench.meter``) adds each request's units to the ``Usage`` of the World
operation that made it (``bench.ops`` keys, or ``event_source`` for the SQS event
source's receives and deletes); ``bench.prices`` turns units into dollars.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any


@dataclass(slots=True)
class Usage:
    """Billable units.

    Attributes:
        wru: DynamoDB write request units of the table (transactions counted twice).
        gsi_wru: write request units of keeping the global secondary indexes up to date.
        rru: DynamoDB read request units.
        sqs_requests: billed SQS requests (64 KB chunks), empty receives excluded.
        sqs_empty_receives: receives that brought nothing (a poller's cost, not a step's).
        s3_put: S3 PUT, COPY, POST and LIST requests.
        s3_get: S3 GET and other requests (DELETE is free and not counted).
        calls: API calls made.
    """

    wru: float = 0.0
    gsi_wru: float = 0.0
    rru: float = 0.0
    sqs_requests: int = 0
    sqs_empty_receives: int = 0
    s3_put: int = 0
    s3_get: int = 0
    calls: int = 0

    def add(self, other: Usage) -> None:
        """Add ``other``'s units to this one's."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def scaled(self, factor: float) -> dict[str, float]:
        """Every unit times ``factor`` (per step: ``1 / steps``)."""
        return {f.name: getattr(self, f.name) * factor for f in fields(self)}

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Usage:
        return cls(**{f.name: document.get(f.name, 0) for f in fields(cls)})

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        out = cls()
        for usage in usages:
            out.add(usage)
        return out


def difference(after: Mapping[str, Usage], before: Mapping[str, Usage]) -> dict[str, Usage]:
    """Per key, the units in ``after`` beyond those in ``before`` (keys with nothing new left out)."""
    out: dict[str, Usage] = {}
    for key, usage in after.items():
        old = before.get(key, Usage())
        delta = Usage(**{f.name: getattr(usage, f.name) - getattr(old, f.name) for f in fields(Usage)})
        if any(getattr(delta, f.name) for f in fields(Usage)):
            out[key] = delta
    return dict(sorted(out.items()))
