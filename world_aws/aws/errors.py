"""Translation of botocore failures into the SPEC §3 kinds: no botocore error leaves the AWS World.

Conditional-check failures are *not* translated here: the caller classifies them
from ``ALL_OLD`` images or transaction cancellation reasons with the rules of
``world_aws.contract.rules``, because only it knows what the condition protected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError

from world_aws.errors import BadInput, NotFound, Throttled, Transient, WorldAwsError

THROTTLING_CODES = frozenset(
    {
        "ProvisionedThroughputExceededException",
        "ThrottlingException",
        "Throttling",
        "RequestLimitExceeded",
        "TooManyRequestsException",
        "SlowDown",
        "RequestThrottled",
        "RequestThrottledException",
        "TransactionInProgressException",
    }
)
NOT_FOUND_CODES = frozenset({"ResourceNotFoundException", "NoSuchKey", "NoSuchBucket", "404"})
BAD_INPUT_CODES = frozenset({"ValidationException", "InvalidParameterValue", "InvalidMessageContents"})


# Codes a TransactWriteItems cancellation reason may carry besides ConditionalCheckFailed
# (https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactWriteItems.html).
THROTTLING_REASONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded"})
VALIDATION_REASONS = frozenset({"ValidationError", "ItemCollectionSizeLimitExceeded"})


def error_code(exc: ClientError) -> str:
    """The AWS error code of a client error (``""`` when it has none)."""
    return str(exc.response.get("Error", {}).get("Code", ""))


def cancellation_error(codes: list[str], *, operation: str = "") -> WorldAwsError:
    """The world-aws error for a transaction cancelled for reasons other than its conditions.

    Throttling of any action is ``Throttled``; a validation failure (an item too
    large, for example) is ``BadInput``; ``TransactionConflict`` (another write on
    the same item in flight) and anything else is ``Transient``: safe to retry.
    """
    where = f" during {operation}" if operation else ""
    failing = [c for c in codes if c not in ("None", "ConditionalCheckFailed")]
    if any(c in THROTTLING_REASONS for c in failing):
        return Throttled(f"AWS throttled{where}: {failing}", retry_after=1.0)
    if any(c in VALIDATION_REASONS for c in failing):
        return BadInput(f"AWS rejected the transaction{where}: {failing}")
    return Transient(f"transaction cancelled{where}: {failing}", retry_after=0.1)


def translate(exc: Exception, *, operation: str = "") -> WorldAwsError:
    """The world-aws error for a botocore failure (not a conditional-check failure).

    Args:
        exc: what botocore raised.
        operation: named in the message.

    Returns:
        ``Throttled`` for throttling codes, ``NotFound`` for missing resources,
        ``BadInput`` for validation failures, ``Transient`` for everything else.
    """
    where = f" during {operation}" if operation else ""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "")
        if code in THROTTLING_CODES:
            return Throttled(f"AWS throttled{where}: {code}", retry_after=1.0)
        if code in NOT_FOUND_CODES:
            return NotFound(f"AWS resource not found{where}: {code} {message}")
        if code in BAD_INPUT_CODES:
            return BadInput(f"AWS rejected the request{where}: {code} {message}")
        return Transient(f"AWS error{where}: {code} {message}")
    if isinstance(exc, BotoCoreError):
        return Transient(f"AWS transport failure{where}: {exc}")
    return Transient(f"unexpected failure{where}: {type(exc).__name__}: {exc}")


@contextmanager
def mapped_errors(operation: str) -> Iterator[None]:
    """Run a block of boto3 calls; any botocore failure leaves as a world-aws error."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, operation=operation) from exc
