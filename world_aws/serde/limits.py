"""Size limits of the values a run carries (issue 14): step input, step result, run result, hook payload.

A value over its limit is refused with a ``SerializationError`` naming the value, its size
and the limit, where it is written: a step whose result is too large fails at once
(``step_failed``), a step call whose arguments are too large raises in the workflow, a run
whose result is too large fails (``SERIALIZATION_ERROR``), and ``start()`` or
``resume_hook()`` with too large an input raises (a 400 through the API). The same checks
run whatever the World, since they happen before anything is written.

Memory stays bounded by the value itself: the encoder counts string and byte lengths as
it walks and stops as soon as the count passes the limit, so a 50 MiB result is refused
before any CBOR is built, uploaded or logged.

Configure per app: ``Workflows(limits=PayloadLimits(step_result=16 * MIB))``.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

MIB = 1024 * 1024
# 4 MiB: far above the 128 KiB that stay inline (larger values go to S3), and far below what
# a 1 GB Lambda can hold while it encodes, stores and replays a value a few times over.
DEFAULT_LIMIT_BYTES = 4 * MIB


class Payload(StrEnum):
    """The kinds of value a limit applies to."""

    STEP_INPUT = "step input"  # a step call's arguments; also a run's input (start() arguments)
    STEP_RESULT = "step result"
    RUN_RESULT = "run result"
    HOOK_PAYLOAD = "hook payload"


@dataclass(frozen=True, slots=True)
class PayloadLimits:
    """The largest encoded size, in bytes, of each kind of value."""

    step_input: int = DEFAULT_LIMIT_BYTES
    step_result: int = DEFAULT_LIMIT_BYTES
    run_result: int = DEFAULT_LIMIT_BYTES
    hook_payload: int = DEFAULT_LIMIT_BYTES

    def __post_init__(self) -> None:
        for kind in Payload:
            if self.of(kind) < 1:
                raise ValueError(f"the {kind} limit must be at least 1 byte, got {self.of(kind)}")

    def of(self, kind: Payload) -> int:
        """The limit of ``kind``."""
        return int(getattr(self, kind.name.lower()))
