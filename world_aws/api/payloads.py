"""An event's payloads as the API shows them: decoded with the app's serializer, JSON-safe.

The event list carries them inline when they are small (at most
:data:`INLINE_PAYLOAD_BYTES` encoded, all fields together), else only their
size; ``GET /runs/{run_id}/events/{position}`` answers one event with all of
them, however large (a payload the World keeps in S3 is read only then by a
client that wants it).
"""

from __future__ import annotations

import logging
from typing import Any

from world_aws.api.jsonable import to_jsonable
from world_aws.api.models import ErrorView
from world_aws.contract import records
from world_aws.contract.records import Event, creation_of
from world_aws.contract.sealing import ENCRYPTED_MARKER
from world_aws.errors import PayloadEncrypted, SerializationError
from world_aws.serde.codec import ErrorInfo, Serializer, decode_error

LOG = logging.getLogger("world_aws.api")

# Small enough that a page of a thousand rows stays a few MB at most, large enough for typical arguments.
INLINE_PAYLOAD_BYTES = 2048


def error_view(info: ErrorInfo, *, code: str | None = None) -> ErrorView:
    """A stored error as the API shows it, with its traceback and its chain of causes."""
    cause = error_view(info.cause) if info.cause is not None else None
    return ErrorView(type=info.type, message=info.message, code=code, stack=info.stack, cause=cause)


def payload_fields(event: Event) -> dict[str, bytes]:
    """The event's payload fields that are present: name → encoded bytes."""
    data = event.data
    fields = {name: getattr(data, name) for name in records.payload_fields(type(data))}
    creation = creation_of(data)
    if creation is not None and creation.input:
        fields["input"] = creation.input
    return {name: bytes(value) for name, value in fields.items() if value}


def payload_size(event: Event) -> int:
    """The encoded size of all the event's payloads."""
    return sum(len(value) for value in payload_fields(event).values())


def decoded_payloads(event: Event, serializer: Serializer) -> dict[str, Any]:
    """Each payload field of ``event`` decoded and JSON-safe; an undecodable one says why.

    Also carries the event's small non-payload data when set (``reason``, ``error_code``,
    ``token``, ``resume_id``, ``resume_at``, ``retry_after``).
    """
    shown: dict[str, Any] = {}
    for name, raw in payload_fields(event).items():
        try:
            if name == "error":
                shown[name] = error_view(decode_error(raw)).model_dump(mode="json")
            else:
                shown[name] = to_jsonable(serializer.loads(raw, context=name))
        except PayloadEncrypted:
            shown[name] = ENCRYPTED_MARKER  # this process has no kms:Decrypt on the run's key
        except SerializationError as exc:
            LOG.warning("cannot decode %s of event %s/%d: %s", name, event.run_id, event.position, exc)
            shown[name] = f"<undecodable {name}: {exc}>"
    data = event.data
    for name in ("reason", "error_code", "token", "resume_id"):
        if value := getattr(data, name, None):  # the fields this event's record has
            shown[name] = value
    for name in ("resume_at", "retry_after"):
        if (moment := getattr(data, name, None)) is not None:
            shown[name] = moment.isoformat()
    return shown
