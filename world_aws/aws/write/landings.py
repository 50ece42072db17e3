"""``Landings``: the tails this World committed, or read, whose batch item has not landed.

A batch committed in the run item's ``tail`` (ARCHITECTURE §8 "The tail") is in the log
from that write on; its own item is put after it. This World remembers each such tail
until its item lands, because the run's next append replaces the tail and must not
lose it. That append either *carries* it (its batch holds the tail's events and its own,
one item: the tail's put is never made, a write unit saved) or *settles* it first (puts
it). A tail is carried only while the run item stays within one write unit
(``carry_budget``), while the append follows it directly (its ``after`` is the tail's
last position: nothing took a position in between) and while it is young
(``CARRY_SECONDS``): an older one may have been put by a reader meanwhile, which a
carry would repeat (readers read such a repeat once: ``items.events_from_item``'s
``since``, ``Sequencer.committed_items``).

A reader of the log that finds a young tail at a live run's end (``LogReader``) reads
its events from the run item and hands it here instead of putting it, when there is
room: its writer's next append carries it, or this World's, when the reading process is
the one that appends next (a redelivered continuation after its writer died).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from world_aws.aws.codec import items, keys
from world_aws.aws.codec.dynamo import Item
from world_aws.aws.write.sequencer import Sequencer
from world_aws.errors import WorldAwsError

# A tail older than this (since its commit, or since a reader saw it committed) is put,
# not carried: a reader may have put it (readers put a live run's last tail once it is
# this old by the run's progress, ``READER_KEEPS_SECONDS``).
CARRY_SECONDS = 5.0
# A reader leaves a live run's last tail to its writer's next append while it is younger
# than this by the run's progress (``prog_us``, the writer's clock): twice the carry
# limit, for clock skew between writer and reader.
READER_KEEPS_SECONDS = 2 * CARRY_SECONDS
# Runs whose unlanded tail this World keeps at most (a reader hands one over only while
# there is room; an append's own is always kept).
PENDING_MEMORY = 256


@dataclass(frozen=True, slots=True)
class _Pending:
    tail: Item
    since: float  # monotonic time of the commit (or of the reader's sighting, less the tail's age)


class Landings:
    """The unlanded tails of this World, one per run (see the module docstring)."""

    def __init__(self, sequencer: Sequencer, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._seq = sequencer
        self._monotonic = monotonic
        self._pending: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def land(self, run_id: str, tail: Item, *, later: bool = False) -> None:
        """Remember ``tail`` as just committed; put it now unless ``later`` (Transient if it cannot)."""
        with self._lock:
            self._pending[run_id] = _Pending(tail, self._monotonic())
        if not later:
            self.settle(run_id)

    def keep(self, run_id: str, tail: Item, age: float) -> bool:
        """Take over a reader's unlanded ``tail``, ``age`` seconds old; False (not kept) if full."""
        with self._lock:
            held = self._pending.get(run_id)
            if held is not None and items.item_span(held.tail)[1] >= items.item_span(tail)[1]:
                return True  # this World's own, or a later one: the run's next append settles it
            if held is None and len(self._pending) >= PENDING_MEMORY:
                return False
            self._pending[run_id] = _Pending(tail, self._monotonic() - max(0.0, age))
            return True

    def young(self, run_id: str) -> Item | None:
        """The unlanded tail of ``run_id`` if it is younger than ``CARRY_SECONDS``: one to carry."""
        with self._lock:
            held = self._pending.get(run_id)
        if held is None or self._monotonic() - held.since >= CARRY_SECONDS:
            return None
        return held.tail

    def settle(self, run_id: str) -> None:
        """Put this World's unlanded tail of ``run_id``, if any; Transient if it still cannot."""
        with self._lock:
            held = self._pending.get(run_id)
        if held is None:
            return
        tail = held.tail
        self._seq.land_committed(
            tail, f"run {keys.run_id_of(tail)}: the batch at {tail['pos']}..{tail.get('last', tail['pos'])}"
        )
        with self._lock:
            if self._pending.get(run_id) is held:
                del self._pending[run_id]

    def settle_all(self) -> None:
        """``settle`` every run, best effort (a World's close)."""
        with self._lock:
            runs = list(self._pending)
        for run_id in runs:
            try:
                self.settle(run_id)
            except WorldAwsError:
                pass  # committed: the run's next reader puts it
