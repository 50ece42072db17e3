"""``AwsClients``: the boto3 clients of one AWS World, built once and injected.

boto3 clients are thread-safe; one set serves every store and consumer thread
of a World. The connection pool is sized for the runtime's fan-out threads.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config

from world_aws.aws.config import AwsConfig

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

# Standard retry mode retries throttling and transient errors with backoff; a few
# attempts, then the World's own error kinds take over (Throttled, Transient).
_RETRIES = {"mode": "standard", "max_attempts": 3}
_POOL_SIZE = 64


@dataclass(frozen=True, slots=True)
class AwsClients:
    """The DynamoDB, SQS, S3 and KMS clients of one World.

    ``kms`` (payload encryption, ``aws/kms.py``) may be None, and is unless a KMS key is
    configured or asked for: a boto3 client costs 50-150 ms to make, which a cold start
    of a World that meets no sealed run should not pay. ``make_kms`` then makes one, with
    the same session and endpoint, the first time a sealed run needs it.
    """

    dynamodb: DynamoDBClient
    sqs: SQSClient
    s3: S3Client
    kms: Any = None  # boto3-stubs[kms] is not a dependency
    make_kms: Callable[[], Any] | None = None

    @classmethod
    def create(cls, config: AwsConfig, *, kms: bool | None = None) -> AwsClients:
        """Clients for ``config``'s region and endpoint (credentials from the usual boto3 chain).

        ``kms``: make the KMS client now (default: when ``config`` names a payload key).
        """
        session = boto3.session.Session(region_name=config.region)
        client_config = Config(retries=_RETRIES, max_pool_connections=_POOL_SIZE)  # type: ignore[arg-type]
        endpoint = config.endpoint_url
        make_kms = partial(session.client, "kms", endpoint_url=endpoint, config=client_config)
        eager = config.payload_key_id is not None if kms is None else kms
        return cls(
            dynamodb=session.client("dynamodb", endpoint_url=endpoint, config=client_config),
            sqs=session.client("sqs", endpoint_url=endpoint, config=client_config),
            s3=session.client("s3", endpoint_url=endpoint, config=client_config),
            kms=make_kms() if eager else None,
            make_kms=make_kms,
        )

    def close(self) -> None:
        """Close the clients' connection pools."""
        for client in (self.dynamodb, self.sqs, self.s3, self.kms):
            if client is not None:
                client.close()
