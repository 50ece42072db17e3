"""Create the resources of ``template.yaml`` on any endpoint (moto locally, or real AWS).

``provision`` reads the template, creates exactly the DynamoDB tables, SQS queues,
S3 buckets and bucket policies it declares (properties translated by
``world_aws.aws.infra.creators``, intrinsics resolved by ``world_aws.aws.infra.intrinsics``), in dependency
order so that ``!GetAtt DeadLetterQueue.Arn`` resolves to the created DLQ. The
template stays the single source of truth: nothing about a resource is restated
here. What comes back, ``ProvisionedResources``, is found through the template's
``Outputs``.

Compute resources (functions, roles, log groups) and queue policies are skipped:
locally the ``LocalEventSource`` plays the part of Lambda's SQS event source.

Bucket policies are resolved but, by default, not applied. The template's policy
denies every request without TLS (``aws:SecureTransport = false``): the embedded
endpoint is plain HTTP on loopback, and moto evaluates a Deny statement without
its Condition (moto 5.2 ``IAMPolicyStatement._check_conditions`` has no request
context), so locally the policy would refuse every object request. Pass
``apply_bucket_policies=True`` to apply it anyway (e.g. against a TLS endpoint
that evaluates conditions); ``ProvisionedResources.not_applied`` says what was left out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from world_aws.aws.infra import creators
from world_aws.aws.infra.intrinsics import Resolver
from world_aws.aws.infra.template import (
    DEFAULT_TEMPLATE,
    Resource,
    TemplateError,
    load_template,
    outputs,
    parameter_defaults,
    references,
    resources,
)
from world_aws.contract.world import QueueName

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

PROVISIONED_TYPES = ("AWS::DynamoDB::Table", "AWS::SQS::Queue", "AWS::S3::Bucket", "AWS::S3::BucketPolicy")
# Replaced locally by the embedded event source, or meaningless without Lambda (alarms
# watch metrics that only AWS emits; queue policies name the functions' roles, which are
# not created locally, and deny non-TLS use of a plain-HTTP endpoint).
SKIPPED_TYPE_PREFIXES = (
    "AWS::SQS::QueuePolicy",
    "AWS::Serverless::",
    "AWS::Lambda::",
    "AWS::IAM::",
    "AWS::Logs::",
    "AWS::CloudWatch::",
)

# SQS's default when a queue declares no VisibilityTimeout.
_DEFAULT_VISIBILITY_TIMEOUT = 30
_POLICY_NOT_APPLIED = (
    "bucket policy not applied: it denies non-TLS requests and the local endpoint is plain HTTP"
    " (moto also ignores policy conditions)"
)
_PREFIX_PATTERN = re.compile(r"^[a-z0-9][a-z0-9-]{0,29}$")


class AwsClientsLike(Protocol):
    """Anything with the three boto3 clients (e.g. ``world_aws.aws.world.AwsClients``)."""

    @property
    def dynamodb(self) -> DynamoDBClient: ...
    @property
    def sqs(self) -> SQSClient: ...
    @property
    def s3(self) -> S3Client: ...


@dataclass(frozen=True, slots=True)
class QueueSettings:
    """What a consumer of one queue needs to know about it and its dead-letter queue."""

    url: str
    arn: str
    dlq_url: str
    dlq_arn: str
    max_receive_count: int
    visibility_timeout: int


@dataclass(frozen=True, slots=True)
class ProvisionedResources:
    """The physical resources created from the template."""

    table_name: str
    workflow_queue_url: str
    step_queue_url: str
    workflow_dlq_url: str
    step_dlq_url: str
    bucket_name: str
    deployment_id: str
    queues: Mapping[QueueName, QueueSettings]
    # Logical id -> physical id (the Ref value) of every created resource.
    physical_ids: Mapping[str, str] = field(default_factory=dict)
    # Logical id -> why a declared resource was not created/applied here.
    not_applied: Mapping[str, str] = field(default_factory=dict)
    # Logical id -> the template's properties with every intrinsic resolved.
    resolved_properties: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def queue_urls(self) -> dict[QueueName, str]:
        """The URL of each queue by name."""
        return {name: settings.url for name, settings in self.queues.items()}

    def max_receive_count(self, queue: QueueName) -> int:
        """The redrive ``maxReceiveCount`` of ``queue``."""
        return self.queues[queue].max_receive_count

    def visibility_timeout(self, queue: QueueName) -> int:
        """The visibility timeout (seconds) of ``queue``."""
        return self.queues[queue].visibility_timeout

    def to_env(self) -> dict[str, str]:
        """The environment variables that ``AwsConfig.from_env()`` reads."""
        return {
            "WORKFLOW_TABLE_NAME": self.table_name,
            "WORKFLOW_QUEUE_URL": self.workflow_queue_url,
            "STEP_QUEUE_URL": self.step_queue_url,
            "WORKFLOW_DLQ_URL": self.workflow_dlq_url,
            "STEP_DLQ_URL": self.step_dlq_url,
            "WORKFLOW_PAYLOAD_BUCKET": self.bucket_name,
            "WORKFLOW_DEPLOYMENT_ID": self.deployment_id,
        }


def physical_name(name_prefix: str, logical_id: str, explicit: str | None = None) -> str:
    """A local name: the prefix, then the template's name or the kebab-cased logical id."""
    base = explicit or re.sub(r"(?<!^)(?=[A-Z])", "-", logical_id).lower()
    return f"{name_prefix}-{base}"


def provision(
    clients: AwsClientsLike,
    template_path: Path | str = DEFAULT_TEMPLATE,
    *,
    name_prefix: str = "world-aws",
    parameters: Mapping[str, str] | None = None,
    apply_bucket_policies: bool = False,
    apply_settings: bool = True,
) -> ProvisionedResources:
    """Create the template's tables, queues and buckets where ``clients`` point.

    Args:
        clients: an object with ``.dynamodb``, ``.sqs`` and ``.s3`` boto3 clients.
        template_path: the SAM template (default: the repository's ``template.yaml``).
        name_prefix: prepended to every physical name, so that several copies
            (one per test) can live on one endpoint. Lowercase letters, digits, '-'.
        parameters: template parameter values overriding the defaults.
        apply_bucket_policies: also apply ``AWS::S3::BucketPolicy`` resources (see
            the module docstring for why that is off by default).
        apply_settings: also apply the settings that moto stores but never acts on:
            the table's point-in-time recovery and TTL, the bucket's encryption, public
            access block, ownership, lifecycle, versioning and tags (7 calls of 19).
            ``False`` for a local stack that only runs workflows.

    Returns:
        The created resources.

    Raises:
        TemplateError: the template uses something that cannot be created locally.
        botocore.exceptions.ClientError: the endpoint refused a call (e.g. a name clash).
    """
    if not _PREFIX_PATTERN.match(name_prefix):
        raise TemplateError(f"name_prefix {name_prefix!r} must match {_PREFIX_PATTERN.pattern}")
    template = load_template(template_path)
    declared = resources(template)
    skipped = [r for r in declared.values() if r.type.startswith(SKIPPED_TYPE_PREFIXES)]
    unknown = [
        r.logical_id for r in declared.values() if r.type not in PROVISIONED_TYPES and r not in skipped
    ]
    if unknown:
        raise TemplateError(f"resources of a type local provisioning does not know: {unknown}")
    wanted = {lid: r for lid, r in declared.items() if r.type in PROVISIONED_TYPES}

    values = {
        **parameter_defaults(template),
        **(parameters or {}),
        "AWS::Region": clients.sqs.meta.region_name,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::StackName": name_prefix,
    }
    attributes: dict[str, dict[str, str]] = {}
    resolver = Resolver(values, attributes)
    resolved_properties: dict[str, dict[str, Any]] = {}
    not_applied: dict[str, str] = {}
    for resource in _creation_order(wanted):
        properties = resolver.resolve(dict(resource.properties))
        resolved_properties[resource.logical_id] = properties
        if resource.type == "AWS::S3::BucketPolicy" and not apply_bucket_policies:
            not_applied[resource.logical_id] = _POLICY_NOT_APPLIED
            continue
        attributes[resource.logical_id] = _create(clients, name_prefix, resource, properties, apply_settings)
    for resource in skipped:
        not_applied[resource.logical_id] = f"{resource.type} is not created locally"
    described = _describe(template, resolver, attributes, resolved_properties, values)
    return replace(described, not_applied=not_applied, resolved_properties=resolved_properties)


def _create(
    clients: AwsClientsLike, name_prefix: str, resource: Resource, properties: dict[str, Any], settings: bool
) -> dict[str, str]:
    lid = resource.logical_id
    if resource.type == "AWS::DynamoDB::Table":
        name = physical_name(name_prefix, lid, properties.get("TableName"))
        return creators.create_table(clients.dynamodb, name, properties, settings=settings)
    if resource.type == "AWS::SQS::Queue":
        name = physical_name(name_prefix, lid, properties.get("QueueName"))
        if properties.get("FifoQueue") and not name.endswith(".fifo"):
            name += ".fifo"
        return creators.create_queue(clients.sqs, name, properties)
    if resource.type == "AWS::S3::Bucket":
        name = physical_name(name_prefix, lid, properties.get("BucketName"))
        return creators.create_bucket(clients.s3, name, properties, settings=settings)
    return creators.put_bucket_policy(clients.s3, properties)


def _creation_order(wanted: Mapping[str, Resource]) -> list[Resource]:
    """Resources ordered so that every one comes after those it references (Ref/GetAtt/Sub)."""
    ordered: list[Resource] = []
    state: dict[str, str] = {}

    def visit(lid: str) -> None:
        if state.get(lid) == "done":
            return
        if state.get(lid) == "visiting":
            raise TemplateError(f"circular reference through {lid}")
        state[lid] = "visiting"
        resource = wanted[lid]
        for dependency in sorted(
            (references(dict(resource.properties)) | set(resource.depends_on)) & set(wanted)
        ):
            visit(dependency)
        state[lid] = "done"
        ordered.append(resource)

    for lid in wanted:
        visit(lid)
    return ordered


def _describe(
    template: Mapping[str, Any],
    resolver: Resolver,
    attributes: Mapping[str, Mapping[str, str]],
    properties: Mapping[str, Mapping[str, Any]],
    values: Mapping[str, str],
) -> ProvisionedResources:
    declared_outputs = outputs(template)

    def output(name: str) -> str:
        if name not in declared_outputs:
            raise TemplateError(f"template has no output {name!r}")
        return str(resolver.resolve(declared_outputs[name]))

    def settings(output_name: str) -> QueueSettings:
        (lid,) = references(declared_outputs[output_name])
        redrive = properties[lid].get("RedrivePolicy")
        if not redrive:
            raise TemplateError(f"queue {lid} has no RedrivePolicy: every world-aws queue needs a DLQ")
        dlq_arn = str(redrive["deadLetterTargetArn"])
        dlq_url = next(a["Ref"] for a in attributes.values() if a.get("Arn") == dlq_arn)
        return QueueSettings(
            url=attributes[lid]["Ref"],
            arn=attributes[lid]["Arn"],
            dlq_url=dlq_url,
            dlq_arn=dlq_arn,
            max_receive_count=int(redrive["maxReceiveCount"]),
            visibility_timeout=int(properties[lid].get("VisibilityTimeout", _DEFAULT_VISIBILITY_TIMEOUT)),
        )

    queues = {QueueName.WORKFLOW: settings("WorkflowQueueUrl"), QueueName.STEP: settings("StepQueueUrl")}
    return ProvisionedResources(
        table_name=output("WorkflowTableName"),
        workflow_queue_url=queues[QueueName.WORKFLOW].url,
        step_queue_url=queues[QueueName.STEP].url,
        workflow_dlq_url=queues[QueueName.WORKFLOW].dlq_url,
        step_dlq_url=queues[QueueName.STEP].dlq_url,
        bucket_name=output("PayloadBucketName"),
        deployment_id=values.get("DeploymentId", ""),
        queues=queues,
        physical_ids={lid: attrs["Ref"] for lid, attrs in attributes.items()},
    )
