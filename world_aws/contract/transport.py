"""Queue message transport (SPEC §4.1): CBOR, base64-encoded in the SQS text body.

The body of every queue message is ``base64(cbor(payload))``. CBOR keeps bytes
as bytes; base64 keeps the body inside the characters SQS accepts. Decoding is
strict: bad base64, trailing bytes, truncated CBOR, a repeated map key, a
non-map top level or a field of the wrong type is a ``BadInput`` that names what
is wrong. Unknown fields are ignored (see payload.py for why).
"""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import cbor2
from pydantic import ValidationError

from world_aws.contract.payload import HealthCheck, InvokePayload
from world_aws.errors import BadInput


def encode_payload(payload: InvokePayload | HealthCheck) -> bytes:
    """CBOR bytes of a payload (fields left at their defaults are omitted)."""
    return cbor2.dumps(payload.model_dump(exclude_defaults=True))


def encode_body(payload: InvokePayload | HealthCheck) -> str:
    """The SQS body text of a payload."""
    return base64.b64encode(encode_payload(payload)).decode("ascii")


def encode_body_bytes(data: bytes) -> str:
    """The SQS body text of CBOR bytes that are already encoded (base64, ASCII)."""
    return base64.b64encode(data).decode("ascii")


def decode_body_bytes(body: str | bytes) -> bytes:
    """The CBOR bytes inside an SQS body, without validating them as a payload.

    Raises:
        BadInput: the body is not strict base64.
    """
    try:
        return base64.b64decode(body, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise BadInput(f"message body is not base64: {exc}") from exc


def strict_cbor_loads(data: bytes) -> Any:
    """Decode exactly one CBOR item that spans all of ``data``.

    Raises:
        BadInput: truncated, malformed, or followed by trailing bytes.
    """
    if not data:
        raise BadInput("empty message: no CBOR item")
    stream = io.BytesIO(data)
    try:
        # A repeated map key would let two readers disagree on a field: refuse it.
        value = cbor2.CBORDecoder(stream, allow_duplicate_keys=False).decode()
    except cbor2.CBORDecodeEOF as exc:
        raise BadInput(f"truncated CBOR: {exc}") from exc
    except (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError) as exc:
        raise BadInput(f"malformed CBOR: {exc}") from exc
    if stream.tell() != len(data):
        raise BadInput(f"CBOR has {len(data) - stream.tell()} trailing byte(s) after the message")
    return value


def decode_payload(data: bytes) -> InvokePayload | HealthCheck:
    """Parse CBOR bytes into a validated payload.

    Raises:
        BadInput: naming the field and what was wrong with it.
    """
    value = strict_cbor_loads(data)
    if not isinstance(value, dict):
        raise BadInput(f"message must be a CBOR map, got {type(value).__name__}")
    if value.get("health_check") is True:
        try:
            return HealthCheck.model_validate(value)
        except ValidationError as exc:
            raise BadInput(f"invalid health check: {_describe(exc)}") from exc
    try:
        return InvokePayload.model_validate(value)
    except ValidationError as exc:
        raise BadInput(f"invalid invoke payload: {_describe(exc)}") from exc


def decode_body(body: str | bytes) -> InvokePayload | HealthCheck:
    """Parse an SQS body (base64 text) into a validated payload."""
    return decode_payload(decode_body_bytes(body))


def _describe(exc: ValidationError) -> str:
    """``field.path: problem; ...`` for the first few errors (a union's branch names are left out)."""
    parts = []
    for err in exc.errors(include_url=False)[:5]:
        where = ".".join(str(p) for p in err["loc"] if p not in _UNION_TAGS)
        message = err["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


# Tags of the step_input union (payload.StepInput): noise in an error's location.
_UNION_TAGS = frozenset({"InlineStepInput", "StepInputRef"})
