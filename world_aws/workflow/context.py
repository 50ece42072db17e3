"""What workflow and step code can ask about where it runs, and the deterministic helpers.

Inside a workflow (during replay) ``now()``, ``random()`` and ``uuid4()`` are
deterministic per run; ``sleep()`` is a durable wait and ``create_hook()`` a
durable hook. Inside a step, ``get_step_metadata()`` gives the run id, step id
and attempt, for building idempotency keys towards external systems.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime, timedelta
from random import Random
from typing import TYPE_CHECKING, Any, Protocol

from world_aws.errors import BadInput

if TYPE_CHECKING:
    from world_aws.workflow.hooks import Hook


class WorkflowScope(Protocol):
    """What authoring code asks of the replay it runs in: the seam to the engine.

    The engine's ``Replay`` is the one implementation (``engine/replay.py``); the
    authoring layer sees only this, so it never imports the engine.
    """

    run_id: str
    workflow_name: str
    rng: Random

    def now(self) -> datetime: ...

    # ``step`` is a registry.StepFunction and ``workflow`` a registry.WorkflowFunction: typed
    # loosely because the registry imports this module (no import cycle, type-only included).
    def call_step(self, step: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...

    def call_child(self, workflow: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...

    def create_hook(self, *, token: str | None, metadata: Any) -> Hook: ...

    def patched(self, change_id: str) -> bool: ...


@dataclass(frozen=True, slots=True)
class StepMetadata:
    run_id: str
    step_id: str
    step_name: str
    attempt: int


@dataclass(frozen=True, slots=True)
class WorkflowMetadata:
    run_id: str
    workflow_name: str


_REPLAY: ContextVar[WorkflowScope | None] = ContextVar("world_aws_replay", default=None)
_STEP: ContextVar[StepMetadata | None] = ContextVar("world_aws_step", default=None)


def current_replay() -> WorkflowScope | None:
    return _REPLAY.get()


def _require_replay(what: str) -> WorkflowScope:
    replay = _REPLAY.get()
    if replay is None:
        raise RuntimeError(f"{what} can only be used inside a workflow")
    return replay


def get_step_metadata() -> StepMetadata:
    """The running step's run id, step id, name and attempt (1-based)."""
    meta = _STEP.get()
    if meta is None:
        raise RuntimeError("get_step_metadata() can only be used inside a step")
    return meta


def get_workflow_metadata() -> WorkflowMetadata:
    replay = _require_replay("get_workflow_metadata()")
    return WorkflowMetadata(run_id=replay.run_id, workflow_name=replay.workflow_name)


def now() -> datetime:
    """The workflow's deterministic current time: the time of the latest event replayed."""
    return _require_replay("now()").now()


def random() -> float:
    """A deterministic pseudo-random float in [0, 1), seeded per run."""
    return _require_replay("random()").rng.random()


def uuid4() -> uuid.UUID:
    """A deterministic version-4 UUID, seeded per run."""
    return uuid.UUID(int=_require_replay("uuid4()").rng.getrandbits(128), version=4)


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, None: 1}


def parse_duration(duration: str | float | int | timedelta) -> float:
    """Seconds in ``duration``: a number of seconds, a timedelta, or text like "2h", "90s", "3d".

    Raises:
        BadInput: unparseable or negative.
    """
    if isinstance(duration, timedelta):
        seconds = duration.total_seconds()
    elif isinstance(duration, int | float):
        seconds = float(duration)
    else:
        match = _DURATION.match(duration)
        if match is None:
            raise BadInput(f"cannot parse duration {duration!r}: use e.g. '90s', '15m', '2h', '3d'")
        seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    if seconds < 0:
        raise BadInput(f"duration must not be negative, got {duration!r}")
    return seconds


async def sleep(duration: str | float | int | timedelta) -> None:
    """Durably sleep: a ``wait_created`` plus a delayed wake-up (contract §8.5).

    Outside a workflow this is a plain ``asyncio.sleep``.
    """
    seconds = parse_duration(duration)
    await asyncio.sleep(seconds)


def create_hook(*, token: str | None = None, metadata: Any = None) -> Hook:
    """A durable hook: ``await hook`` for one payload, ``async for p in hook`` for many.

    Its token stays taken until the run ends or the workflow calls ``hook.dispose()``
    (then a new hook may take the token, and the disposed one yields no more payloads).
    """
    return _require_replay("create_hook()").create_hook(token=token, metadata=metadata)


def set_step_metadata(meta: StepMetadata | None) -> Any:
    return _STEP.set(meta)


def reset_step_metadata(token: Any) -> None:
    _STEP.reset(token)


def set_replay(replay: WorkflowScope | None) -> Any:
    return _REPLAY.set(replay)
