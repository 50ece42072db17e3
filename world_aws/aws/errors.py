"""Translation of botocore failures into the contract §3 kinds: no botocore error leaves the AWS World.

A resource the configuration names that does not exist (a table or index, a
bucket, a queue) and refused access (wrong, expired or missing credentials, a
missing permission) are ``Misconfigured``, never ``NotFound``: the runtime
treats ``NotFound`` as domain state (a run that does not exist), and a typo in
a table name must not drop messages. Only a missing S3 *object* is ``NotFound``.

Conditional-check failures are *not* translated here: the caller classifies them
from ``ALL_OLD`` images or transaction cancellation reasons with the rules of
``world_aws.contract.rules``, because only it knows what the condition protected.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError, PartialCredentialsError

from world_aws.errors import BadInput, Misconfigured, NotFound, Throttled, Transient, WorldAwsError

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
# A missing object (GetObject answers NoSuchKey; a HEAD has no body, so only its status).
NOT_FOUND_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
# A table or index (DynamoDB), a bucket (S3) or a queue (SQS; the JSON protocol reports the
# query-protocol code) that the configuration names does not exist, or its KMS key.
MISSING_RESOURCE_CODES = frozenset(
    {
        "ResourceNotFoundException",
        "NoSuchBucket",
        "AWS.SimpleQueueService.NonExistentQueue",
        "QueueDoesNotExist",
        # The KMS key of an encrypted queue is gone or disabled.
        "KmsNotFound",
        "KMS.NotFoundException",
        "KmsDisabled",
        "KMS.DisabledException",
    }
)
# The credentials are missing, unknown, expired or lack a permission (IAM, KMS).
ACCESS_DENIED_CODES = frozenset(
    {
        "AccessDenied",
        "AccessDeniedException",
        "UnrecognizedClientException",
        "InvalidClientTokenId",
        "InvalidAccessKeyId",
        "ExpiredToken",
        "ExpiredTokenException",
        "MissingAuthenticationToken",
        "SignatureDoesNotMatch",
        "AllAccessDisabled",
        "KmsAccessDenied",
        "KMS.AccessDeniedException",
    }
)
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


def translate(exc: Exception, *, operation: str = "", resource: str = "") -> WorldAwsError:
    """The world-aws error for a botocore failure (not a conditional-check failure).

    Args:
        exc: what botocore raised.
        operation: named in the message.
        resource: what the call reached (``table <name>``, ``bucket <name>``,
            ``queue <url>``); named in a ``Misconfigured``.

    Returns:
        ``Throttled`` for throttling codes, ``Misconfigured`` for a missing table,
        index, bucket or queue and for refused access, ``NotFound`` for a missing
        object, ``BadInput`` for validation failures, ``Transient`` for everything else.
    """
    where = f" during {operation}" if operation else ""
    if isinstance(exc, ClientError):
        code = error_code(exc)
        message = exc.response.get("Error", {}).get("Message", "")
        if code in THROTTLING_CODES:
            return Throttled(f"AWS throttled{where}: {code}", retry_after=1.0)
        if code in MISSING_RESOURCE_CODES or code in ACCESS_DENIED_CODES:
            return misconfigured(exc, operation=operation, resource=resource)
        if code in NOT_FOUND_CODES:
            return NotFound(f"AWS object not found{where}: {code} {message}")
        if code in BAD_INPUT_CODES:
            return BadInput(f"AWS rejected the request{where}: {code} {message}")
        return Transient(f"AWS error{where}: {code} {message}")
    if isinstance(exc, NoCredentialsError | PartialCredentialsError):
        return Misconfigured(
            f"no usable AWS credentials{where}: {exc}",
            resource=resource or "credentials",
            operation=operation,
        )
    if isinstance(exc, BotoCoreError):
        return Transient(f"AWS transport failure{where}: {exc}")
    return Transient(f"unexpected failure{where}: {type(exc).__name__}: {exc}")


def misconfigured(exc: ClientError, *, operation: str, resource: str) -> Misconfigured:
    """The ``Misconfigured`` for a missing resource or refused access, naming both."""
    code = error_code(exc)
    message = exc.response.get("Error", {}).get("Message", "")
    # S3 names the bucket in its error; the others say only "not found".
    resource = resource or str(exc.response.get("Error", {}).get("BucketName", "")) or "an AWS resource"
    where = f" during {operation}" if operation else ""
    if code in ACCESS_DENIED_CODES:
        text = f"misconfigured: access denied to {resource}{where}"
    else:
        text = f"misconfigured: {resource} does not exist{where}"
    return Misconfigured(
        f"{text} ({code}: {message})",
        resource=resource,
        operation=operation,
    )


@contextmanager
def mapped_errors(operation: str, *, resource: str = "") -> Iterator[None]:
    """Run a block of boto3 calls; any botocore failure leaves as a world-aws error."""
    try:
        yield
    except (ClientError, BotoCoreError) as exc:
        raise translate(exc, operation=operation, resource=resource) from exc
