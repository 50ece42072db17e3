"""Retention: how long an ended run's data is kept, and the sweep that erases it (contract §3.4).

``Workflows(retention="30d")`` sets the app's retention, ``@app.workflow(retention=...)``
one workflow's (``None``: the app's; ``"forever"``: kept). A run gets its workflow's
retention at creation as the ``$retention`` attribute (seconds), so a later change of the
setting does not move the expiry of runs already made. Each reconciler tick erases the
ended runs whose end + retention has passed (``sweep_expired``), at most
``WORKFLOW_RETENTION_MAX_RUNS_PER_TICK`` of them.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import timedelta

from world_aws.contract.erasure import RETENTION_ATTRIBUTE, ErasedRun
from world_aws.contract.world import World
from world_aws.errors import BadInput, Misconfigured, NotFound, WorldAwsError

LOG = logging.getLogger("world_aws.retention")

# Seconds per unit of a retention text ("30d", "12h", "90m", "3600s", "2w").
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_PATTERN = re.compile(r"(\d{1,9})([smhdw])")
FOREVER = "forever"
# The longest retention: the queues' longest delay (a year, contract §10) is far below it.
MAX_RETENTION_SECONDS = 10 * 366 * 86400

Retention = str | int | timedelta | None


def retention_seconds(value: Retention, *, where: str = "retention") -> int | None:
    """A retention setting in whole seconds; None for ``None`` or ``"forever"`` (kept).

    Accepts a ``timedelta``, whole seconds (an int) or text: a number and a unit of
    ``s``, ``m``, ``h``, ``d`` or ``w`` (``"30d"``).

    Raises:
        BadInput: naming ``where``: not a duration, not positive, or over ten years.
    """
    if value is None or value == FOREVER:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool) or not isinstance(value, int | str):
        raise BadInput(f"{where}: expected a duration such as '30d', got {type(value).__name__}")
    elif isinstance(value, int):
        seconds = value
    else:
        match = _PATTERN.fullmatch(value)
        if match is None:
            raise BadInput(
                f"{where}: expected a number and a unit of s, m, h, d or w (e.g. '30d'), got {value!r}"
            )
        seconds = int(match.group(1)) * _UNITS[match.group(2)]
    if seconds != int(seconds) or not 0 < seconds <= MAX_RETENTION_SECONDS:
        raise BadInput(f"{where}: must be whole seconds between 1 s and ten years, got {value!r}")
    return int(seconds)


def retention_attributes(seconds: int | None) -> dict[str, str]:
    """The run attributes that record a retention (none when kept forever)."""
    return {} if seconds is None else {RETENTION_ATTRIBUTE: str(seconds)}


@dataclass(frozen=True, slots=True)
class ExpirySweep:
    """What one ``sweep_expired`` did: runs erased, and those it could not erase now."""

    erased: list[ErasedRun] = field(default_factory=list)
    failed: int = 0


def sweep_expired(world: World, *, limit: int) -> ExpirySweep:
    """Erase up to ``limit`` ended runs whose retention has passed (and finish crashed erasures).

    A run that cannot be erased now (a transient failure) is listed again next time.

    Raises:
        Misconfigured: the table, its index or the bucket is missing or refused.
    """
    now = world.clock.now()
    erased: list[ErasedRun] = []
    failed = 0
    for run_id in world.erasure.expired(before=now, limit=limit):
        try:
            erased.append(world.erasure.delete(run_id))
        except NotFound:
            continue  # erased meanwhile by another sweep or an erasure request
        except Misconfigured:
            raise
        except WorldAwsError as exc:
            failed += 1
            LOG.warning("retention could not erase run: %s", exc, extra={"run_id": run_id})
            continue
        LOG.info("retention erased run", extra={"run_id": run_id})
    return ExpirySweep(erased=erased, failed=failed)
