"""Queue message transport (contract §4.1): CBOR, base64-encoded in the SQS text body.

The body of every queue message is ``base64(cbor(payload))``. CBOR keeps bytes
as bytes; base64 keeps the body inside the characters SQS accepts. Decoding is
strict: bad base64, trailing bytes, truncated CBOR, a repeated map key, a
non-map top level or a field of the wrong type is a ``BadInput`` that names what
is wrong. Unknown fields are ignored (see payload.py for why).

Only the standard CBOR tags our own writers produce are decoded: 0/1 datetimes
(``requested_at``) and 2/3 bignums. cbor2 decodes many more by itself, and some
are dangerous on data anyone with ``sqs:SendMessage`` can write: shared values and
references (28/29) and string references (25/256) let a few hundred bytes stand for
an exponentially large tree, tag 35 runs ``re.compile`` and tag 36 the e-mail parser.
Every such tag is refused at parse time with a ``BadInput`` naming it. Map keys must
be text or byte strings (cbor2's ``strict_hashable_types``): int keys have hashes an
attacker can make collide, which turns building one map quadratic.
"""

from __future__ import annotations

import base64
import binascii
import email.mime.text  # noqa: F401  # see below
import io
from typing import Any

import cbor2
from pydantic import ValidationError

from world_aws.contract.payload import HealthCheck, InvokePayload
from world_aws.errors import BadInput

# cbor2 resolves its deferred encoders, email.mime.text's among them, on the first datetime it
# encodes: imported here, that (some 10-20 ms) is paid at a process's start, not by its first message.


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


# The standard tags cbor2 6.3 decodes itself, other than the ones we use (found by decoding
# CBORTag(n, x) for every n below 70,000; tests/unit/test_transport.py repeats the scan, so a
# cbor2 upgrade that adds one fails a test instead of silently decoding it).
SEMANTIC_TAGS: dict[int, str] = {
    0: "date/time string",
    1: "epoch date/time",
    2: "positive bignum",
    3: "negative bignum",
    4: "decimal fraction",
    5: "bigfloat",
    25: "string reference",
    28: "shared value",
    29: "shared reference",
    30: "rational number",
    35: "regular expression",
    36: "MIME message",
    37: "UUID",
    52: "IPv4 address",
    54: "IPv6 address",
    100: "epoch date",
    256: "string reference namespace",
    258: "set",
    260: "network address",
    261: "network prefix",
    1004: "date string",
    43000: "complex number",
    55799: "self-described CBOR",
}
TRANSPORT_TAGS = frozenset({0, 1, 2, 3})
"""The standard tags a queue message may hold: datetimes (``requested_at``) and bignums."""
VALUE_TAGS = frozenset({2, 3})
"""The standard tags the runtime's value format uses: bignums (everything else is a world-aws tag)."""


class _RefusedTag(Exception):
    """Raised inside cbor2 by the decoder of a refused tag; turned into a ``BadInput``."""

    def __init__(self, tag: int) -> None:
        super().__init__(tag)
        self.tag = tag


def _refuser(tag: int) -> Any:
    def refuse(_value: object, _immutable: bool) -> object:
        raise _RefusedTag(tag)

    return refuse


_REFUSERS = {tag: _refuser(tag) for tag in SEMANTIC_TAGS}
_DECODERS = {
    allowed: {tag: refuse for tag, refuse in _REFUSERS.items() if tag not in allowed}
    for allowed in (TRANSPORT_TAGS, VALUE_TAGS)
}


def strict_cbor_loads(data: bytes, *, allowed_tags: frozenset[int] = TRANSPORT_TAGS) -> Any:
    """Decode exactly one CBOR item that spans all of ``data``.

    Args:
        data: the bytes.
        allowed_tags: the standard tags (keys of :data:`SEMANTIC_TAGS`) cbor2 may decode;
            :data:`TRANSPORT_TAGS` or :data:`VALUE_TAGS`. Tags outside the standard set
            come back as ``CBORTag`` for the caller to judge.

    Raises:
        BadInput: truncated, malformed, followed by trailing bytes, holding a refused
            tag (named) or a map key that is not a string.
    """
    if not data:
        raise BadInput("empty message: no CBOR item")
    stream = io.BytesIO(data)
    decoder = cbor2.CBORDecoder(
        stream,
        # A repeated map key would let two readers disagree on a field: refuse it.
        allow_duplicate_keys=False,
        strict_hashable_types=True,
        semantic_decoders=_DECODERS[allowed_tags],
    )
    try:
        value = decoder.decode()
    except cbor2.CBORDecodeEOF as exc:
        raise BadInput(f"truncated CBOR: {exc}") from exc
    except (cbor2.CBORDecodeError, ValueError, TypeError, OverflowError) as exc:
        refused = _refused_tag(exc)
        if refused is not None:
            raise BadInput(f"CBOR tag {refused} ({SEMANTIC_TAGS[refused]}) is not accepted") from exc
        raise BadInput(f"malformed CBOR: {exc}") from exc
    if stream.tell() != len(data):
        raise BadInput(f"CBOR has {len(data) - stream.tell()} trailing byte(s) after the message")
    return value


def _refused_tag(exc: BaseException) -> int | None:
    """The tag whose refusal caused ``exc`` (cbor2 wraps it, possibly more than once), if any."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, _RefusedTag):
            return seen.tag
        seen = seen.__cause__ or seen.__context__
    return None


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
