"""A warm handler's suspended replays, so a continuation runs only what is new (contract §8.3).

Without it every continuation replays the workflow from its first line: the log
is read incrementally (``LogCache``), but the code re-runs every step call it
already made, so a continuation of an n-step run costs O(n) and the whole run
O(n²). A replay that ended its continuation suspended is kept here instead, and
the next continuation of that run on this ``Runtime`` feeds it just the events
after its ``last_position``.

A replay is used by one thread at a time: ``take`` removes it, ``put`` gives it
back, so a concurrent continuation of the same run simply builds a fresh one.
Bounded (least recently used runs drop out, and are closed).

*Checked* (``RuntimeConfig.replay_checks``, local runs): a warm replay runs the workflow
code once, so it never compares the code with a log an earlier execution wrote, which
is how a workflow that is not deterministic shows. So a checked cache has a run's
replay start over from the log (re-running the code from its first line against every
logged event) when the log has grown to twice the length the replay last re-ran
(``check_due``), and always before the run's end is recorded (``check_before_end``):
the recorded end is always that of a cold replay of the whole log, as with no cache at
all, and the re-runs cost at most about twice the log, not a log per continuation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from world_aws.engine.replay import Replay


class ReplayCache:
    def __init__(self, max_runs: int, *, checked: bool = False) -> None:
        self._max_runs = max_runs
        self._checked = checked and max_runs > 0
        self._replays: OrderedDict[str, Replay] = OrderedDict()
        self._lock = threading.Lock()

    @property
    def keeps_replays(self) -> bool:
        """False when every continuation replays cold (``replay_cache_runs`` = 0: local runs)."""
        return self._max_runs > 0

    def check_due(self, replay: Replay) -> bool:
        """Checked: whether ``replay`` should start over from the log (it doubled since its last re-run)."""
        if not self._checked or replay.last_position <= replay.cold_through:
            return False
        return replay.last_position >= 2 * replay.cold_through

    def check_before_end(self, replay: Replay) -> bool:
        """Checked: whether ``replay``, about to end its run, saw events it did not re-run its code on."""
        return self._checked and replay.last_position > replay.cold_through

    def take(self, run_id: str) -> Replay | None:
        """The suspended replay of ``run_id``, now owned by the caller; None if there is none."""
        with self._lock:
            return self._replays.pop(run_id, None)

    def put(self, run_id: str, replay: Replay) -> None:
        """Keep a replay that is suspended (not done) for the next continuation of its run."""
        evicted: list[Replay] = []
        with self._lock:
            previous = self._replays.pop(run_id, None)
            if previous is not None:
                evicted.append(previous)
            self._replays[run_id] = replay
            while len(self._replays) > self._max_runs:
                evicted.append(self._replays.popitem(last=False)[1])
        for old in evicted:  # closing runs the cancelled workflow's cleanup: outside the lock
            old.close()

    def clear(self) -> None:
        """Close every kept replay (the runtime is shutting down)."""
        with self._lock:
            replays = list(self._replays.values())
            self._replays.clear()
        for replay in replays:
            replay.close()

    def forget(self, run_id: str) -> None:
        with self._lock:
            replay = self._replays.pop(run_id, None)
        if replay is not None:
            replay.close()
