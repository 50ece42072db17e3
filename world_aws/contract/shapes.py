"""Which data fields each event type takes (SPEC §3's table): one definition per type, both Worlds.

``validate_request`` (``rules``) checks a request against its type's shape before
anything is read or written: a required field missing, or a field the type does
not take, is ``BadInput`` naming it. A field is *set* when it is not ``None``
(``via_step_dispatch``: when it is true); a required one must also not be empty.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from world_aws.contract.records import EventData, EventType

DATA_FIELDS = tuple(f.name for f in fields(EventData))


@dataclass(frozen=True, slots=True)
class EventShape:
    """The data fields of one event type: ``required`` must be set, the rest of ``allowed`` may be."""

    required: frozenset[str]
    allowed: frozenset[str]


def _shape(required: tuple[str, ...] = (), optional: tuple[str, ...] = ()) -> EventShape:
    return EventShape(frozenset(required), frozenset(required + optional))


# The owner of an inline step (runtime/inline.py) may be named by each of its events.
_OWNED = ("owner",)

SHAPES: dict[EventType, EventShape] = {
    EventType.RUN_CREATED: _shape(("creation",)),
    EventType.RUN_STARTED: _shape(optional=("creation",)),  # creation data: the resilient start (§6.1)
    EventType.RUN_COMPLETED: _shape(optional=("output",)),
    EventType.RUN_FAILED: _shape(("error",), ("error_code",)),
    EventType.RUN_CANCELLED: _shape(optional=("reason",)),
    EventType.STEP_CREATED: _shape(("step_name", "input"), ("via_step_dispatch", *_OWNED)),
    EventType.STEP_STARTED: _shape(optional=("step_name", *_OWNED)),
    EventType.STEP_RETRYING: _shape(("error",), ("retry_after", *_OWNED)),
    EventType.STEP_COMPLETED: _shape(optional=("output", *_OWNED)),
    EventType.STEP_FAILED: _shape(("error",), _OWNED),
    EventType.HOOK_CREATED: _shape(("token",), ("metadata",)),
    EventType.HOOK_CONFLICT: _shape(("token", "conflicting_run_id")),  # the World's own
    # The token: the runtime names the hook it resumes by it (the World keys by hook id).
    EventType.HOOK_RECEIVED: _shape(("payload",), ("resume_id", "token")),
    EventType.HOOK_DISPOSED: _shape(),
    EventType.WAIT_CREATED: _shape(("resume_at",)),
    EventType.WAIT_COMPLETED: _shape(),
    EventType.NOOP: _shape(),  # the World's own: a sealed position
}


def set_fields(data: EventData) -> list[str]:
    """The data fields that ``data`` sets, in declaration order."""
    return [
        name
        for name in DATA_FIELDS
        if (getattr(data, name) is True if name == "via_step_dispatch" else getattr(data, name) is not None)
    ]


def shape_errors(etype: EventType, data: EventData) -> list[str]:
    """What is wrong with ``data`` as ``etype``'s data: missing fields, then fields it does not take."""
    shape = SHAPES[etype]
    present = set_fields(data)
    # An empty name or token is as good as none.
    missing = sorted(name for name in shape.required if getattr(data, name) in (None, ""))
    extra = [name for name in present if name not in shape.allowed]
    errors = [f"{etype.value} needs {name}" for name in missing]
    errors += [f"{etype.value} takes no {name}" for name in extra]
    return errors
