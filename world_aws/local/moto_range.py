"""The moto releases the embedded default is tested on, and the one-line warning outside them.

moto is the embedded default's AWS: a new moto release can change how it answers (5.2.6 routed an
unsigned form POST to S3 and answered 500), so the releases ``requirements/dev.lock`` and
``requirements/local.lock`` pin are the ones the suite passes on. Any other release still runs, with
one warning line naming this range. ``tests/distribution/test_locks.py`` keeps both locks' moto
inside it.
"""

from __future__ import annotations

import functools
import logging
from importlib import metadata

LOG = logging.getLogger(__name__)

# Both ends inclusive: the oldest and newest moto the whole suite has passed on.
TESTED_MOTO = ("5.2.1", "5.2.6")


def _release(version: str) -> tuple[int, ...]:
    """The numeric release of a version string ("5.2.6.dev3" -> (5, 2, 6)); unparsable parts stop it."""
    parts: list[int] = []
    for piece in version.split(".")[:3]:
        digits = "".join(ch for ch in piece if ch.isdigit()) if piece[:1].isdigit() else ""
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def outside_tested_range(version: str) -> str | None:
    """The warning line for moto ``version``, or None inside :data:`TESTED_MOTO`."""
    low, high = TESTED_MOTO
    if _release(low) <= _release(version) <= _release(high):
        return None
    return (
        f"world-aws: moto {version} is outside the tested range {low} to {high}; the embedded default "
        "may misbehave (install with requirements/local.lock, or pip install 'moto[server]=={high}')"
    )


@functools.cache
def warn_if_untested() -> str | None:
    """Log the warning line once per process if the installed moto is outside the range."""
    try:
        version = metadata.version("moto")
    except metadata.PackageNotFoundError:
        return None
    line = outside_tested_range(version)
    if line is not None:
        LOG.warning(line)
    return line
