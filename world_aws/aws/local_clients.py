"""boto3 clients for a local endpoint (the embedded moto server), with fake credentials.

The credentials are passed explicitly, so nothing is read from (or written to)
the environment, ``~/.aws`` or an instance metadata service. Only
``world_aws/aws`` imports boto3, which is why ``world_aws.local`` builds its
clients through this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

FAKE_ACCESS_KEY_ID = "testing"
FAKE_SECRET_ACCESS_KEY = "testing"


@dataclass(frozen=True, slots=True)
class EndpointClients:
    """The three clients of a World (same attribute names as ``AwsClients``)."""

    dynamodb: DynamoDBClient
    sqs: SQSClient
    s3: S3Client

    @classmethod
    def for_endpoint(
        cls, endpoint_url: str, region: str, *, max_pool_connections: int = 32
    ) -> EndpointClients:
        """Clients that talk to ``endpoint_url`` with fake credentials.

        Args:
            endpoint_url: e.g. ``http://127.0.0.1:PORT``.
            region: the region the endpoint plays.
            max_pool_connections: HTTP connections per client (pollers, fan-out threads).
        """
        session = boto3.session.Session(
            aws_access_key_id=FAKE_ACCESS_KEY_ID,
            aws_secret_access_key=FAKE_SECRET_ACCESS_KEY,
            region_name=region,
        )
        config = Config(
            max_pool_connections=max_pool_connections,
            retries={"mode": "standard", "max_attempts": 3},
            s3={"addressing_style": "path"},
        )
        return cls(
            dynamodb=session.client("dynamodb", endpoint_url=endpoint_url, config=config),
            sqs=session.client("sqs", endpoint_url=endpoint_url, config=config),
            s3=session.client("s3", endpoint_url=endpoint_url, config=config),
        )

    def close(self) -> None:
        """Close the clients' connection pools."""
        for client in (self.dynamodb, self.sqs, self.s3):
            client.close()
