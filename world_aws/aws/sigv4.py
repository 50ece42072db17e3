"""Signing HTTP requests to an IAM-authorized API Gateway API with AWS Signature Version 4.

The operator CLI talks to a deployed world-aws API over plain HTTP (urllib);
when that API uses IAM authorization, each request must carry a SigV4
signature for the ``execute-api`` service. botocore does the signing and finds
credentials through the default chain (environment, ``~/.aws``, SSO, instance
or container roles), which is why this lives in ``world_aws/aws``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from urllib.parse import urlsplit

import botocore.exceptions
import botocore.session
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest

from world_aws.errors import BadInput

EXECUTE_API = "execute-api"
# https://docs.aws.amazon.com/apigateway/latest/developerguide/how-to-call-api.html:
# {api-id}.execute-api.{region}.amazonaws.com (.com.cn in the China regions)
_EXECUTE_API_HOST = re.compile(r"^[a-z0-9]+\.execute-api\.([a-z0-9-]+)\.amazonaws\.com(\.cn)?$")


def execute_api_region(url: str) -> str | None:
    """The region of an API Gateway default endpoint URL, or None for any other host."""
    match = _EXECUTE_API_HOST.match((urlsplit(url).hostname or "").lower())
    return match.group(1) if match else None


def sigv4_headers(
    method: str,
    url: str,
    *,
    body: bytes = b"",
    headers: Mapping[str, str] | None = None,
    region: str | None = None,
    service: str = EXECUTE_API,
) -> dict[str, str]:
    """The request's headers with a SigV4 signature added (``Authorization``, ``X-Amz-Date``, ...).

    Args:
        method: the HTTP method.
        url: the full URL, path percent-encoded as it will be sent.
        body: the exact body bytes that will be sent.
        headers: headers that will be sent (they are signed too).
        region: the API's region; by default read from an ``execute-api`` host, else
            ``AWS_REGION``, else the AWS configuration (``AWS_DEFAULT_REGION``, the profile).
        service: the service to sign for.

    Raises:
        BadInput: no credentials or no region could be found.
    """
    session = botocore.session.Session()
    try:
        credentials = session.get_credentials()
    except botocore.exceptions.ProfileNotFound as exc:  # AWS_PROFILE names a profile ~/.aws does not have
        raise BadInput(f"cannot sign the request: {exc}") from None
    if credentials is None:
        raise BadInput(
            "no AWS credentials found to sign the request (set AWS_PROFILE or AWS_ACCESS_KEY_ID, "
            "or run `aws sso login`)"
        )
    # botocore reads AWS_DEFAULT_REGION and the profile; Lambda and most tools set AWS_REGION
    region = (
        region
        or execute_api_region(url)
        or os.environ.get("AWS_REGION", "").strip()
        or session.get_config_variable("region")
    )
    if not region:
        raise BadInput("no AWS region to sign the request for (set AWS_REGION)")
    request = AWSRequest(method=method.upper(), url=url, data=body, headers=dict(headers or {}))
    SigV4Auth(credentials.get_frozen_credentials(), service, region).add_auth(request)
    return {name: str(value) for name, value in request.headers.items()}
