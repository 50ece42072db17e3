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
WORKFLOW_DEPLOYMENT_ID             this code's deployment id                   no (``dpl_local``)
WORKFLOW_HEARTBEAT_SECONDS         visibility heartbeat period (heartbeat.py)  no (10)
WORKFLOW_QUEUE_VISIBILITY_SECONDS  the queues' visibility timeout              no (900)
=================================  ==========================================  ==================
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from world_aws.aws.heartbeat import HeartbeatConfig
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

        return cls(
            table_name=required("WORKFLOW_TABLE_NAME"),
            workflow_queue_url=required("WORKFLOW_QUEUE_URL"),
            step_queue_url=required("STEP_QUEUE_URL"),
            bucket_name=required("WORKFLOW_PAYLOAD_BUCKET"),
            region=required("AWS_REGION", "AWS_DEFAULT_REGION"),
            endpoint_url=env.get("AWS_ENDPOINT_URL", "").strip() or None,
            deployment_id=env.get("WORKFLOW_DEPLOYMENT_ID", "").strip() or DEFAULT_DEPLOYMENT_ID,
            heartbeat=HeartbeatConfig.from_env(env),
        )
