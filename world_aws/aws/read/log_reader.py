"""Reading a run's log from DynamoDB as a gap-free prefix, repairing holes (contract §3.2).

``list`` queries ``sk BETWEEN evt#<after+1> AND evt#<max>`` with
``ConsistentRead``, page by page (a Query page stops at 1 MB), and walks the
positions in order. Positions are reserved before they are committed, so a
reader may see position p+1 committed while p is not yet:

* p's writer is in flight: re-reading p after a short backoff finds it;
* p's writer died between reserving and committing: after a grace period
  (measured from the first time any reader of this World saw the hole, even
  one that failed while it waited) the reader *seals* p — with the real run
  event if p was reserved by a run transition (the run item keeps a copy), else
  with a ``noop`` — by a conditional put (``attribute_not_exists(sk)``). If that put fails, the writer
  committed meanwhile and its event is used. A writer whose position was sealed
  finds its commit cancelled as a whole (action 0 is the event put) and reserves
  again, so nothing of it is lost or half-applied.

An ``append_after`` stores its events in batch items (``items.batch_items``), each
keyed by the last position it covers, so the Query from ``after + 1`` finds the
one that holds it, and a re-read of position p looks for the first item at p or
later and takes it if it begins at or before p. A batch is committed whole: in the
transaction that takes its positions, or by the run item's write that takes them,
which keeps it as the run item's ``tail`` until its item lands (ARCHITECTURE §8 "The
tail"). So ``list`` reads the run item first: a hole the tail covers is put from it at
once, and so is a tail past the Query's last item (a writer that died between its two
writes, with nothing written after). A seal never lands inside a batch.

So a read never skips a position and never returns a position that could later
change: each read returns an extension of any earlier one. ``noop`` events
(sealed positions) are left out of the returned list; the positions of the
real events are as stored, so the list may skip numbers where noops are.
"""

from __future__ import annotations

import builtins
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import Item
from world_aws.aws.codec.payloads import PayloadReader
from world_aws.aws.write.landings import READER_KEEPS_SECONDS, Landings
from world_aws.aws.write.sequencer import FINAL_SLOT, Sequencer, covers, rebuild_run_event, tail_item
from world_aws.contract.clock import Clock
from world_aws.contract.records import Event, ResolveData, RunStatus
from world_aws.contract.world import BlobStore

# Holes whose first sighting a World keeps (a hole that another World sealed stays
# here until pushed out: a few dozen bytes each).
_MAX_HOLES_REMEMBERED = 10_000


@dataclass(frozen=True, slots=True)
class HoleRepairPolicy:
    """How long a reader waits for an in-flight writer before sealing its position.

    ``monotonic`` and ``sleep`` are injectable so tests need no real waiting.
    """

    grace_seconds: float = 2.0
    first_delay: float = 0.01
    max_delay: float = 0.16
    monotonic: Callable[[], float] = field(default=time.monotonic)
    sleep: Callable[[float], None] = field(default=time.sleep)


def _unlanded_end(run_item: Item) -> int | None:
    """The position of a terminal run's end event (committed by its reservation; maybe not landed).

    Not only when it is the run's last reserved position: a step's late outcome may have
    reserved the next one and died before its commit, and no later item then shows the
    end's position as a hole.
    """
    end = run_item.get(f"{FINAL_SLOT}_pos")
    if end is None or not RunStatus(run_item["status"]).terminal:
        return None
    return int(end)


class LogReader:
    """``events.list`` of the AWS World."""

    def __init__(
        self,
        sequencer: Sequencer,
        blobs: BlobStore,
        clock: Clock,
        policy: HoleRepairPolicy,
        landings: Landings | None = None,
    ) -> None:
        self._seq = sequencer
        self._landings = landings
        self._blobs = blobs
        self._clock = clock
        self._policy = policy
        # (run_id, position) -> when a reader first saw it missing; per World instance.
        self._first_seen: dict[tuple[str, int], float] = {}
        self._lock = threading.Lock()

    def list(
        self, run_id: str, *, after: int = 0, resolve_data: ResolveData = ResolveData.ALL
    ) -> builtins.list[Event]:
        """The run's events after position ``after``, gap-free, noops left out; ``[]`` for an unknown run."""
        # Read before the Query: a batch committed in the run item by then (its ``tail``)
        # is either in the Query's answer or still this tail (its writer's next append
        # waits for it to land: ``StepEvents.append_after``).
        run_item = self._seq.table.get(keys.run_key(run_id))
        return self.list_from(run_item, run_id, after=after, resolve_data=resolve_data)

    def list_from(
        self,
        run_item: Item | None,
        run_id: str,
        *,
        after: int = 0,
        resolve_data: ResolveData = ResolveData.ALL,
    ) -> builtins.list[Event]:
        """``list`` from a run item the caller read (consistently) just before: one read fewer.

        The log then holds everything committed before that read: a batch committed in
        the run item by then is in the Query's answer or in ``run_item``'s tail, whose
        writer's next append waits for its item (``StepEvents.append_after``).
        """
        reader = PayloadReader(self._blobs, resolve_data)
        events: builtins.list[Event] = []
        expected = max(0, after) + 1
        tail = None if run_item is None else tail_item(run_item)
        for item in self._seq.event_items(run_id, expected):
            first, last = items.item_span(item)
            while expected < first:
                repaired = self._repair(run_id, expected, tail)
                events += items.events_from_item(run_id, repaired, reader, since=expected)
                expected = items.item_span(repaired)[1] + 1
            if last >= expected:  # a batch item may begin before ``after``
                events += items.events_from_item(run_id, item, reader, since=expected)
                expected = last + 1
        if tail is not None and covers(tail, expected):
            # The log's last batch is committed but its item has not landed: a young one of a
            # live run is left to its writer's next append (this World's, if it appends next:
            # ``Landings``); otherwise put it.
            kept = run_item is not None and self._keeps(run_id, run_item, tail)
            landed = tail if kept else self._seq.land(tail)
            events += items.events_from_item(run_id, landed, reader, since=expected)
            expected = items.item_span(tail)[1] + 1
        if run_item is not None and _unlanded_end(run_item) == expected:
            # The run's end is committed (by its reservation) but its event has not landed,
            # and nothing read after it: put it from the run item's copy, as a refused late
            # transition would (``RunEvents._finish_terminal``), so no read ever shows a
            # terminal run without its terminal event.
            rebuilt = rebuild_run_event(run_item, expected)
            if rebuilt is not None:
                events += items.events_from_item(run_id, self._seq.land(rebuilt), reader, since=expected)
        return events

    def _keeps(self, run_id: str, run_item: Item, tail: Item) -> bool:
        """Whether ``tail``, the last batch of a live run younger than ``READER_KEEPS_SECONDS``, is kept."""
        if self._landings is None or RunStatus(run_item["status"]).terminal:
            return False
        if items.item_span(tail)[1] != int(run_item["seq"]):
            return False
        age = (self._clock.now() - items.run_progress_at(run_item)).total_seconds()
        return age < READER_KEEPS_SECONDS and self._landings.keep(run_id, tail, age)

    def _repair(self, run_id: str, position: int, tail: Item | None) -> Item:
        """Wait for the writer of a hole at ``position``, or seal it after the grace period.

        A hole in ``tail`` (the run item's committed batch, as read before the Query) is
        put from it at once: its writer has committed it, there is nothing to wait for.
        """
        if tail is not None and covers(tail, position):
            return self._seq.land(tail)
        policy = self._policy
        hole = (run_id, position)
        with self._lock:
            if hole not in self._first_seen and len(self._first_seen) >= _MAX_HOLES_REMEMBERED:
                del self._first_seen[next(iter(self._first_seen))]  # the oldest: it waits again
            first_seen = self._first_seen.setdefault(hole, policy.monotonic())
        delay = policy.first_delay
        while True:
            item = self._seq.covering_item(run_id, position)
            waited = policy.monotonic() - first_seen
            if item is None and waited >= policy.grace_seconds:
                item = self._seq.seal_hole(run_id, position, self._clock.now())
            if item is not None:
                # Forgotten only once resolved: a read that fails while it waits (a
                # throttle, a timeout) leaves the grace period running for the next
                # one, or a run whose deliveries keep failing there never gets past it.
                with self._lock:
                    self._first_seen.pop(hole, None)
                return item
            # At least the first backoff, even past the grace's end: a remainder below the
            # clock's resolution would never get there (``now + 1e-17 == now``).
            policy.sleep(min(delay, max(policy.grace_seconds - waited, policy.first_delay)))
            delay = min(delay * 2, policy.max_delay)
