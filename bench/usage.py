"""``Usage``: the billable units of some AWS requests, summed; one per World operation in a bill.

The meter (``bench.meter``) adds each request's units to the ``Usage`` of the World
operation that made it (``bench.world.op_key`` keys, or ``event_source`` for the SQS event
source's receives and deletes); ``bench.prices`` turns units into dollars. It
also sums DynamoDB writes per kind of item (``ItemWrites``: run item, events,
steps, markers, dedup items...), which shows what each item's size costs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any, TypeVar


class Tally:
    """Numeric fields that add up (the base of ``Usage`` and ``ItemWrites``)."""

    __slots__ = ()

    def add(self, other: Tally) -> None:
        """Add ``other``'s numbers to this one's."""
        for f in fields(self):  # type: ignore[arg-type]
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def scaled(self, factor: float) -> dict[str, float]:
        """Every number times ``factor`` (per step: ``1 / steps``)."""
        return {f.name: getattr(self, f.name) * factor for f in fields(self)}  # type: ignore[arg-type]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)  # type: ignore[call-overload, no-any-return]


T = TypeVar("T", bound=Tally)


@dataclass(slots=True)
class Usage(Tally):
    """Billable units.

    Attributes:
        wru: DynamoDB write request units of the table (transactions counted twice).
        gsi_wru: write request units of keeping the global secondary indexes up to date.
        rru: DynamoDB read request units.
        sqs_requests: billed SQS requests (64 KB chunks), empty receives excluded.
        sqs_empty_receives: receives that brought nothing (a poller's cost, not a step's).
        s3_put: S3 PUT, COPY, POST and LIST requests.
        s3_get: S3 GET and other requests (DELETE is free and not counted).
        kms_requests: KMS requests (payload encryption: GenerateDataKey, Decrypt).
        calls: API calls made.
    """

    wru: float = 0.0
    gsi_wru: float = 0.0
    rru: float = 0.0
    sqs_requests: int = 0
    sqs_empty_receives: int = 0
    s3_put: int = 0
    s3_get: int = 0
    kms_requests: int = 0
    calls: int = 0

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> Usage:
        return cls(**{f.name: document.get(f.name, 0) for f in fields(cls)})

    @classmethod
    def total(cls, usages: Iterable[Usage]) -> Usage:
        out = cls()
        for usage in usages:
            out.add(usage)
        return out


@dataclass(slots=True)
class ItemWrites(Tally):
    """DynamoDB writes to one kind of item (the sort key up to its ``#``: ``run``, ``evt``, ``pend``...).

    Attributes:
        writes: items written (a transaction's actions each count).
        transactional: of those, inside ``TransactWriteItems``.
        wru: their write request units (without GSI upkeep).
        bytes: the larger of each write's before and after sizes, summed.
    """

    writes: int = 0
    transactional: int = 0
    wru: float = 0.0
    bytes: int = 0


def difference(after: Mapping[str, T], before: Mapping[str, T], kind: type[T]) -> dict[str, T]:
    """Per key, the numbers in ``after`` beyond those in ``before`` (keys with nothing new left out)."""
    out: dict[str, T] = {}
    for key, tally in after.items():
        old = before.get(key, kind())
        names = [f.name for f in fields(tally)]  # type: ignore[arg-type]
        delta = kind(**{name: getattr(tally, name) - getattr(old, name) for name in names})
        if any(getattr(delta, name) for name in names):
            out[key] = delta
    return dict(sorted(out.items()))
