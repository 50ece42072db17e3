"""``AwsConfig``: the AWS World's configuration, frozen and built once (``AwsConfig.from_env()``).

Environment variables (set by ``template.yaml`` on every function, and by the
local launcher):

=================================  ==========================================  ==================
variable                           meaning                                     required
=================================  ==========================================  ==================
WORKFLOW_TABLE_NAME                the DynamoDB table                          yes
WORKFLOW_QUEUE_URL                 the workflow queue                          yes
STEP_QUEUE_URL                     the step queue                              yes
WORKFLOW_PAYLOAD_BUCKET            the S3 bucket for large payloads            yes
AWS_REGION                         region (else AWS_DEFAULT_REGION)            yes
AWS_ENDPOINT_URL                   endpoint override (moto, local)             no
WORKFLOW_DEPLOYMENT_ID             a hand-set deployment id (override)         no
WORKFLOW_DEPLOYMENT_FUNCTION       the workflow function's version ARN         no
AWS_LAMBDA_FUNCTION_NAME           set by Lambda                               no
AWS_LAMBDA_FUNCTION_VERSION        set by Lambda                               no
WORKFLOW_HEARTBEAT_SECONDS         visibility heartbeat period (heartbeat.py)  no (10)
WORKFLOW_QUEUE_VISIBILITY_SECONDS  the queues' visibility timeout              no (900)
=================================  ==========================================  ==================

The deployment id (README "Deploying changes") is the version of the workflow
function that serves this code: on the workflow function its own version
(``AWS_LAMBDA_FUNCTION_VERSION``, a number when invoked through its alias), on the
others the version the template names (``WORKFLOW_DEPLOYMENT_FUNCTION``, the
published version's ARN, whose last part is the number). ``pinned_function`` is
then the function a hand-over invokes, as ``<function>:<version>``. A non-empty
``WORKFLOW_DEPLOYMENT_ID`` overrides both (a stack deployed without versions; no
hand-over); with neither it is ``dpl_local``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from world_aws.aws.queue.heartbeat import HeartbeatConfig
from world_aws.errors import BadInput

DEFAULT_DEPLOYMENT_ID = "dpl_local"


@dataclass(frozen=True, slots=True)
class AwsConfig:
    """Where the AWS World's resources are. Immutable."""

    table_name: str
    workflow_queue_url: str
    step_queue_url: str
    bucket_name: str
    region: str
    endpoint_url: str | None = None
    deployment_id: str = DEFAULT_DEPLOYMENT_ID
    heartbeat: HeartbeatConfig = field(default_factory=HeartbeatConfig)
    # The workflow function whose versions are the deployments (None: no hand-over).
    pinned_function: str | None = None
    # The customer KMS key new runs' payloads are sealed under (README "Security"); None: off
    # (payloads of runs sealed elsewhere are still opened).
    payload_key_id: str | None = None

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AwsConfig:
        """The configuration from environment variables (``os.environ`` by default).

        Raises:
            BadInput: naming the first required variable that is missing or empty.
        """
        env = os.environ if environ is None else environ

        def required(*names: str) -> str:
            for name in names:
                value = env.get(name, "").strip()
                if value:
                    return value
            raise BadInput(f"environment variable {names[0]} is not set (the AWS World needs it)")

        deployment_id, function = _deployment(env)
        return cls(
            table_name=required("WORKFLOW_TABLE_NAME"),
            workflow_queue_url=required("WORKFLOW_QUEUE_URL"),
            step_queue_url=required("STEP_QUEUE_URL"),
            bucket_name=required("WORKFLOW_PAYLOAD_BUCKET"),
            region=required("AWS_REGION", "AWS_DEFAULT_REGION"),
            endpoint_url=env.get("AWS_ENDPOINT_URL", "").strip() or None,
            deployment_id=deployment_id,
            pinned_function=function,
            heartbeat=HeartbeatConfig.from_env(env),
            payload_key_id=env.get("WORKFLOW_KMS_KEY_ID", "").strip() or None,
        )


def _deployment(env: Mapping[str, str]) -> tuple[str, str | None]:
    """This code's deployment id, and the function whose versions the deployments are.

    Raises:
        BadInput: ``WORKFLOW_DEPLOYMENT_FUNCTION`` is not a version's ARN.
    """
    override = env.get("WORKFLOW_DEPLOYMENT_ID", "").strip()
    named = env.get("WORKFLOW_DEPLOYMENT_FUNCTION", "").strip()
    version = env.get("AWS_LAMBDA_FUNCTION_VERSION", "").strip()
    name = env.get("AWS_LAMBDA_FUNCTION_NAME", "").strip()
    if override:
        return override, None
    if named:
        function, _, number = named.rpartition(":")
        if not number.isdigit() or ":function:" not in function:
            raise BadInput(
                f"WORKFLOW_DEPLOYMENT_FUNCTION must be a published version's ARN "
                f"(arn:...:function:NAME:N), got {named[:200]!r}"
            )
        return named.rpartition(":")[2], function
    if version.isdigit() and name:
        return version, name
    return DEFAULT_DEPLOYMENT_ID, None
