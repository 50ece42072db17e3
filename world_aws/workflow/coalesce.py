"""Flow control of a workflow's starts: ``Debounce``, ``Batch`` and ``Singleton``.

``@app.workflow(debounce=Debounce("30s", key=lambda user_id: user_id))``: starts of one
key within the window collapse into one run, started with the last start's arguments
once the key has been quiet for the window. ``batch=Batch(max_size=100, max_wait="5s")``:
each start adds its one argument to the key's open batch; the batch's run is started
with the list of them when it holds ``max_size`` or ``max_wait`` after its first item.
``singleton=True`` (or ``Singleton(key=..., on_conflict="refuse")``): at most one live
run per key; a start while one lives returns it (``"return"``, the default) or is
refused with ``Conflict`` (``"refuse"``). The client applies them
(``world_aws.client.coalesce``); the records are the World's (``world.gates``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

from world_aws.errors import BadInput
from world_aws.workflow.context import parse_duration
from world_aws.workflow.flow import KeyFn

# SQS delivers a delayed message whole seconds late at most; a window shorter than this is a bug.
MIN_WINDOW_SECONDS = 1.0
MAX_BATCH_SIZE = 1000


def _seconds(value: str | float | timedelta, what: str) -> float:
    seconds = parse_duration(value)
    if seconds < MIN_WINDOW_SECONDS:
        raise BadInput(f"{what} must be at least {MIN_WINDOW_SECONDS:g}s, got {value!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class Debounce:
    """Collapse a key's starts within ``period`` into one run with the last arguments.

    Args:
        period: how long the key must stay quiet ("30s", seconds, a timedelta; at least 1 s).
        key: called with the start's arguments; its ``str()`` is the key (None: one key).
    """

    period: str | float | timedelta
    key: KeyFn | None = None
    seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", _seconds(self.period, "Debounce(period)"))


@dataclass(frozen=True, slots=True)
class Batch:
    """Gather a key's starts into one run whose one argument is the list of their items.

    Args:
        max_size: a batch starts once it holds this many items (1 to 1000).
        max_wait: or this long after its first item ("5s"; at least 1 s).
        key: called with the start's one argument (None: one key).
    """

    max_size: int
    max_wait: str | float | timedelta
    key: KeyFn | None = None
    wait_seconds: float = field(init=False, default=0.0)

    def __post_init__(self) -> None:
        size = self.max_size
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_BATCH_SIZE:
            raise BadInput(f"Batch(max_size=...) must be an int from 1 to {MAX_BATCH_SIZE}, got {size!r}")
        object.__setattr__(self, "wait_seconds", _seconds(self.max_wait, "Batch(max_wait)"))


@dataclass(frozen=True, slots=True)
class Singleton:
    """At most one live run per key; ``on_conflict``: ``"return"`` the live run or ``"refuse"``."""

    key: KeyFn | None = None
    on_conflict: Literal["return", "refuse"] = "return"

    def __post_init__(self) -> None:
        if self.on_conflict not in ("return", "refuse"):
            raise BadInput(
                f"Singleton(on_conflict=...) must be 'return' or 'refuse', got {self.on_conflict!r}"
            )


@dataclass(frozen=True, slots=True)
class StartGate:
    """A workflow's start flow control: at most one of debounce, batch, singleton."""

    debounce: Debounce | None = None
    batch: Batch | None = None
    singleton: Singleton | None = None

    @classmethod
    def of(
        cls, name: str, debounce: Debounce | None, batch: Batch | None, singleton: Singleton | bool | None
    ) -> StartGate | None:
        """The gate declared on workflow ``name`` (None: none). Raises BadInput for a wrong shape."""
        if singleton is True:
            singleton = Singleton()
        elif singleton is False:
            singleton = None
        for value, kind in ((debounce, Debounce), (batch, Batch), (singleton, Singleton)):
            if value is not None and not isinstance(value, kind):
                raise BadInput(f"workflow {name!r}: expected a {kind.__name__}, got {value!r}")
        chosen = [v for v in (debounce, batch, singleton) if v is not None]
        if len(chosen) > 1:
            raise BadInput(f"workflow {name!r}: choose one of debounce, batch and singleton")
        if not chosen:
            return None
        assert not isinstance(singleton, bool)
        return cls(debounce, batch, singleton)

    @property
    def kind(self) -> str:
        return "debounce" if self.debounce else "batch" if self.batch else "singleton"

    @property
    def key(self) -> KeyFn | None:
        chosen = self.debounce or self.batch or self.singleton
        assert chosen is not None
        return chosen.key

    @property
    def seconds(self) -> float:
        """The debounce window or the batch's ``max_wait`` (0 for a singleton)."""
        if self.debounce is not None:
            return self.debounce.seconds
        return self.batch.wait_seconds if self.batch is not None else 0.0


def gate_scope(kind: str, workflow: str, key: str) -> str:
    """The scope of a start gate's record (``world.gates``): ``<kind>:<workflow>:<key>``."""
    return f"{kind}:{workflow}:{key}"


def parse_scope(scope: str) -> tuple[str, str, str]:
    """(kind, workflow, key) of a scope. Raises BadInput for a malformed one."""
    parts = scope.split(":", 2)
    if len(parts) != 3 or parts[0] not in ("debounce", "batch", "singleton"):
        raise BadInput(f"not a start gate scope: {scope!r}")
    return parts[0], parts[1], parts[2]
