"""boto3 clients for a local endpoint (the embedded moto server), with fake credentials.

The credentials are passed explicitly, so nothing is read from (or written to)
the environment, ``~/.aws`` or an instance metadata service. Only
``world_aws/aws`` imports boto3, which is why ``world_aws.local`` builds its
clients through this module.
"""

from __future__ import annotations

from functools import partial

import boto3
from botocore.config import Config

from world_aws.aws.clients import AwsClients

FAKE_ACCESS_KEY_ID = "testing"
FAKE_SECRET_ACCESS_KEY = "testing"


def clients_for_endpoint(endpoint_url: str, region: str, *, max_pool_connections: int = 64) -> AwsClients:
    """World clients that talk to ``endpoint_url`` with fake credentials.

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
        # An IP-address endpoint has no per-bucket host names.
        s3={"addressing_style": "path"},
    )
    return AwsClients(
        dynamodb=session.client("dynamodb", endpoint_url=endpoint_url, config=config),
        sqs=session.client("sqs", endpoint_url=endpoint_url, config=config),
        s3=session.client("s3", endpoint_url=endpoint_url, config=config),
        make_kms=partial(session.client, "kms", endpoint_url=endpoint_url, config=config),
    )


def local_kms_key(clients: AwsClients) -> str:
    """A new symmetric customer key on the local endpoint (moto's KMS): the ARN to seal payloads under.

    ``local_stack(app, encrypt=True)`` and ``world-aws run/dev --encrypt`` use it as
    ``PayloadKmsKeyArn`` is used on AWS (README "Security").
    """
    kms = clients.kms if clients.kms is not None else clients.make_kms() if clients.make_kms else None
    assert kms is not None, "clients without a KMS client or a way to make one"
    made = kms.create_key(Description="world-aws local payload key", KeySpec="SYMMETRIC_DEFAULT")
    return str(made["KeyMetadata"]["Arn"])
