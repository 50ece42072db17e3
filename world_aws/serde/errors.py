"""How the runtime stores a step's or run's error: ``ErrorInfo`` and its CBOR form.

An exception object cannot be stored (its class may not exist where it is read,
and its arguments may not serialize), so the runtime keeps what a person and the
retry logic need: the qualified type name, the message, the traceback text
(trimmed), the chain of causes, and a ``RetryableError``'s ``retry_after``.
"""

from __future__ import annotations

import math
import os
import traceback
from dataclasses import dataclass
from types import TracebackType
from typing import Any

import cbor2
from cbor2 import CBORTag

from world_aws.contract.sealing import refuse_sealed
from world_aws.contract.transport import VALUE_TAGS, strict_cbor_loads
from world_aws.errors import BadInput, RetryableError, RetryLater, SerializationError
from world_aws.serde.tags import Tag

# Stored errors live in DynamoDB items next to other data; a deep recursion's
# traceback can be megabytes. Keep the start line and the innermost frames.
MAX_STACK_CHARS = 8_192
MAX_MESSAGE_CHARS = 16_384
# Cause chains deeper than this are cut (the last kept ErrorInfo has no cause).
MAX_CAUSE_DEPTH = 8
# Frames in this directory are world-aws's own (see _users_frames).
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# The package's own example app (``world-aws demo``): its frames are the user's, as an app's are.
_DEMO_FILE = _PACKAGE_DIR + "demo.py"


@dataclass(frozen=True)
class ErrorInfo:
    """A stored error.

    Attributes:
        type: qualified exception class name (``ValueError``, ``myapp.errors.PaymentDeclined``).
        message: ``str(exc)``, trimmed to ``MAX_MESSAGE_CHARS``.
        stack: the traceback text of this exception alone (its causes have their own),
            trimmed to ``MAX_STACK_CHARS``.
        cause: the ``__cause__`` (or implicit ``__context__``) of the exception, if any.
        retry_after: seconds, for a ``RetryableError`` (or a world-aws ``RetryLater``) that set it.
    """

    type: str
    message: str
    stack: str = ""
    cause: ErrorInfo | None = None
    retry_after: float | None = None


class RecordedError(Exception):
    """An error read back from a run's log, as the ``__cause__`` of the exception raised for it.

    A step's final failure reaches the workflow as ``StepFailedError``, whose cause is
    the step's own recorded error: ``info`` holds its type, message and traceback,
    and the run's stored error keeps it as its cause.
    """

    def __init__(self, info: ErrorInfo) -> None:
        super().__init__(f"{info.type}: {info.message}")
        self.info = info


def error_info(exc: BaseException) -> ErrorInfo:
    """Build the ``ErrorInfo`` of a live exception (with its cause chain)."""
    return _info(exc, depth=0, seen=set())


def encode_error(exc: BaseException) -> bytes:
    """Serialize an exception as an ``ErrorInfo`` (deterministic CBOR bytes)."""
    return bytes(cbor2.dumps(_encode_info(error_info(exc))))


def encode_error_info(info: ErrorInfo) -> bytes:
    """Serialize an ``ErrorInfo`` already built."""
    return bytes(cbor2.dumps(_encode_info(info)))


def decode_error(data: bytes) -> ErrorInfo:
    """Inverse of :func:`encode_error`.

    Raises:
        SerializationError: the bytes are not a stored error (``PayloadEncrypted``: sealed).
    """
    refuse_sealed(bytes(data), "stored error")
    try:
        raw = strict_cbor_loads(bytes(data), allowed_tags=VALUE_TAGS)
    except BadInput as exc:
        raise SerializationError(f"cannot decode stored error: {exc}") from exc
    return _decode_info(raw, depth=0)


def _type_name(tp: type) -> str:
    return tp.__qualname__ if tp.__module__ == "builtins" else f"{tp.__module__}.{tp.__qualname__}"


def _message(exc: BaseException) -> str:
    try:
        return _trim(str(exc), MAX_MESSAGE_CHARS)
    except Exception:  # a broken __str__ must not hide the original error
        return f"<unprintable {type(exc).__name__}>"


def _trim(text: str, limit: int) -> str:
    """Keep the first line and the end (the innermost frames and the error line) of a long text."""
    if len(text) <= limit:
        return text
    head, _, rest = text.partition("\n")
    keep = limit - len(head) - 64  # room for the head and the marker line
    if keep <= 0:
        return text[-limit:]
    return f"{head}\n  ... {len(rest) - keep} characters trimmed ...\n{rest[-keep:]}"


def _retry_after(exc: BaseException) -> float | None:
    if not isinstance(exc, RetryableError | RetryLater):
        return None
    value = exc.retry_after
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    return None


def _users_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback from its first frame outside world-aws on (the runtime's own calls above it dropped).

    A step's traceback starts in the step consumer, which called the user's function;
    the person debugging it wants their frames. A traceback of world-aws frames only
    (an error of the runtime itself) is kept whole.
    """
    first = tb
    while tb is not None and _internal(tb.tb_frame.f_code.co_filename):
        tb = tb.tb_next
    return tb if tb is not None else first


def _internal(filename: str) -> bool:
    return filename.startswith(_PACKAGE_DIR) and filename != _DEMO_FILE


def _info(exc: BaseException, *, depth: int, seen: set[int]) -> ErrorInfo:
    if isinstance(exc, RecordedError):
        return exc.info
    seen.add(id(exc))
    try:
        stack = "".join(
            traceback.format_exception(type(exc), exc, _users_frames(exc.__traceback__), chain=False)
        )
    except Exception:  # formatting calls __str__ too; see _message
        stack = ""
    parent = exc.__cause__
    if parent is None and not exc.__suppress_context__:
        parent = exc.__context__
    cause = None
    if parent is not None and id(parent) not in seen and depth + 1 < MAX_CAUSE_DEPTH:
        cause = _info(parent, depth=depth + 1, seen=seen)
    return ErrorInfo(
        type=_type_name(type(exc)),
        message=_message(exc),
        stack=_trim(stack, MAX_STACK_CHARS),
        cause=cause,
        retry_after=_retry_after(exc),
    )


def _encode_info(info: ErrorInfo) -> CBORTag:
    body: dict[str, Any] = {"type": info.type, "message": info.message, "stack": info.stack}
    if info.retry_after is not None:
        body["retry_after"] = float(info.retry_after)
    if info.cause is not None:
        body["cause"] = _encode_info(info.cause)
    return CBORTag(Tag.ERROR, body)


def _decode_info(raw: object, *, depth: int) -> ErrorInfo:
    if depth > MAX_CAUSE_DEPTH or not isinstance(raw, CBORTag) or raw.tag != Tag.ERROR:
        raise SerializationError(f"cannot decode stored error: not an error record: {raw!r:.80}")
    body = raw.value
    if not isinstance(body, dict | cbor2.frozendict):
        raise SerializationError("cannot decode stored error: the record is not a map")
    fields = dict(body.items())
    for key in ("type", "message", "stack"):
        if type(fields.get(key)) is not str:
            raise SerializationError(f"cannot decode stored error: field {key!r} must be a string")
    retry_after = fields.get("retry_after")
    if retry_after is not None and type(retry_after) not in (int, float):
        raise SerializationError("cannot decode stored error: field 'retry_after' must be a number")
    cause = fields.get("cause")
    return ErrorInfo(
        type=fields["type"],
        message=fields["message"],
        stack=fields["stack"],
        cause=None if cause is None else _decode_info(cause, depth=depth + 1),
        retry_after=None if retry_after is None else float(retry_after),
    )
