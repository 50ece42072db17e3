"""Creating one resolved CloudFormation resource through the AWS APIs.

Each function translates the *properties of the template* into API calls; there is
no second copy of the definitions here. A property that is not translated is a
``TemplateError``: a new setting in ``template.yaml`` must not be dropped silently
from local runs. Each returns the resource's attributes for ``Ref``/``Fn::GetAtt``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from world_aws.aws.infra.template import TemplateError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient
    from mypy_boto3_s3 import S3Client
    from mypy_boto3_sqs import SQSClient

# CloudFormation property -> CreateTable parameter, where they coincide.
_TABLE_PASSTHROUGH = (
    "AttributeDefinitions",
    "KeySchema",
    "BillingMode",
    "GlobalSecondaryIndexes",
    "LocalSecondaryIndexes",
    "ProvisionedThroughput",
    "Tags",
    "DeletionProtectionEnabled",
    "TableClass",
)
_TABLE_AFTER_CREATE = ("PointInTimeRecoverySpecification", "TimeToLiveSpecification")

# AWS::SQS::Queue properties that are queue attributes of the same name.
_QUEUE_ATTRIBUTES = frozenset(
    {
        "DelaySeconds",
        "MaximumMessageSize",
        "MessageRetentionPeriod",
        "ReceiveMessageWaitTimeSeconds",
        "VisibilityTimeout",
        "RedrivePolicy",
        "RedriveAllowPolicy",
        "SqsManagedSseEnabled",
        "KmsMasterKeyId",
        "KmsDataKeyReusePeriodSeconds",
        "FifoQueue",
        "ContentBasedDeduplication",
        "DeduplicationScope",
        "FifoThroughputLimit",
    }
)

_BUCKET_PROPERTIES = frozenset(
    {
        "BucketName",
        "BucketEncryption",
        "PublicAccessBlockConfiguration",
        "LifecycleConfiguration",
        "OwnershipControls",
        "VersioningConfiguration",
        "Tags",
    }
)


def _reject_unknown(kind: str, properties: Mapping[str, Any], known: set[str] | frozenset[str]) -> None:
    unknown = sorted(set(properties) - set(known))
    if unknown:
        raise TemplateError(f"{kind} properties not translated for local provisioning: {unknown}")


def create_table(
    dynamodb: DynamoDBClient, name: str, properties: Mapping[str, Any], *, settings: bool = True
) -> dict[str, str]:
    """Create an ``AWS::DynamoDB::Table`` and (unless ``settings=False``) apply its PITR and TTL settings."""
    known = {
        *_TABLE_PASSTHROUGH,
        *_TABLE_AFTER_CREATE,
        "TableName",
        "SSESpecification",
        "StreamSpecification",
    }
    _reject_unknown("AWS::DynamoDB::Table", properties, known)
    request: dict[str, Any] = {key: properties[key] for key in _TABLE_PASSTHROUGH if key in properties}
    if "SSESpecification" in properties:
        sse = properties["SSESpecification"]
        request["SSESpecification"] = {
            "Enabled": bool(sse.get("SSEEnabled", False)),
            **{key: sse[key] for key in ("SSEType", "KMSMasterKeyId") if key in sse},
        }
    if "StreamSpecification" in properties:
        request["StreamSpecification"] = {"StreamEnabled": True, **properties["StreamSpecification"]}
    description = dynamodb.create_table(TableName=name, **request)["TableDescription"]
    if settings and "PointInTimeRecoverySpecification" in properties:
        enabled = bool(properties["PointInTimeRecoverySpecification"].get("PointInTimeRecoveryEnabled"))
        dynamodb.update_continuous_backups(
            TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": enabled}
        )
    if settings and "TimeToLiveSpecification" in properties:
        ttl = properties["TimeToLiveSpecification"]
        dynamodb.update_time_to_live(
            TableName=name,
            TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": bool(ttl["Enabled"])},
        )
    attributes = {"Ref": name, "Arn": description["TableArn"]}
    if "LatestStreamArn" in description:
        attributes["StreamArn"] = description["LatestStreamArn"]
    return attributes


def queue_attributes(properties: Mapping[str, Any]) -> dict[str, str]:
    """The SQS attribute strings of an ``AWS::SQS::Queue``'s (resolved) properties."""
    attributes: dict[str, str] = {}
    for key, value in properties.items():
        if key not in _QUEUE_ATTRIBUTES:
            continue
        if isinstance(value, bool):
            attributes[key] = "true" if value else "false"
        elif isinstance(value, dict):
            attributes[key] = json.dumps(value, separators=(",", ":"))
        else:
            attributes[key] = str(value)
    return attributes


def create_queue(sqs: SQSClient, name: str, properties: Mapping[str, Any]) -> dict[str, str]:
    """Create an ``AWS::SQS::Queue`` with its attributes (RedrivePolicy already resolved)."""
    _reject_unknown("AWS::SQS::Queue", properties, {*_QUEUE_ATTRIBUTES, "QueueName", "Tags"})
    tags = {tag["Key"]: tag["Value"] for tag in properties.get("Tags", [])}
    url = sqs.create_queue(QueueName=name, Attributes=queue_attributes(properties), tags=tags)["QueueUrl"]  # type: ignore[arg-type]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return {"Ref": url, "QueueUrl": url, "Arn": arn, "QueueName": name}


def _lifecycle_rule(rule: Mapping[str, Any]) -> dict[str, Any]:
    _reject_unknown(
        "LifecycleConfiguration rule",
        rule,
        {
            "Id",
            "Status",
            "Prefix",
            "ExpirationInDays",
            "AbortIncompleteMultipartUpload",
            "NoncurrentVersionExpirationInDays",
        },
    )
    translated: dict[str, Any] = {"Status": rule["Status"], "Filter": {"Prefix": rule.get("Prefix", "")}}
    if "Id" in rule:
        translated["ID"] = rule["Id"]
    if "ExpirationInDays" in rule:
        translated["Expiration"] = {"Days": int(rule["ExpirationInDays"])}
    if "AbortIncompleteMultipartUpload" in rule:
        days = int(rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"])
        translated["AbortIncompleteMultipartUpload"] = {"DaysAfterInitiation": days}
    if "NoncurrentVersionExpirationInDays" in rule:
        translated["NoncurrentVersionExpiration"] = {
            "NoncurrentDays": int(rule["NoncurrentVersionExpirationInDays"])
        }
    return translated


def create_bucket(
    s3: S3Client, name: str, properties: Mapping[str, Any], *, settings: bool = True
) -> dict[str, str]:
    """Create an ``AWS::S3::Bucket`` with (unless ``settings=False``) its encryption, public access
    block, lifecycle, ownership, versioning and tags."""
    _reject_unknown("AWS::S3::Bucket", properties, _BUCKET_PROPERTIES)
    region = s3.meta.region_name
    if region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": region})  # type: ignore[typeddict-item]
    attributes = {"Ref": name, "Arn": f"arn:aws:s3:::{name}", "DomainName": f"{name}.s3.amazonaws.com"}
    if not settings:
        return attributes
    if "OwnershipControls" in properties:
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=properties["OwnershipControls"])
    if "PublicAccessBlockConfiguration" in properties:
        block = {key: bool(value) for key, value in properties["PublicAccessBlockConfiguration"].items()}
        s3.put_public_access_block(Bucket=name, PublicAccessBlockConfiguration=block)  # type: ignore[arg-type]
    if "BucketEncryption" in properties:
        rules = [
            {
                "ApplyServerSideEncryptionByDefault": dict(rule["ServerSideEncryptionByDefault"]),
                **(
                    {"BucketKeyEnabled": bool(rule["BucketKeyEnabled"])} if "BucketKeyEnabled" in rule else {}
                ),
            }
            for rule in properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        ]
        encryption: Any = {"Rules": rules}
        s3.put_bucket_encryption(Bucket=name, ServerSideEncryptionConfiguration=encryption)
    if "LifecycleConfiguration" in properties:
        lifecycle: Any = {
            "Rules": [_lifecycle_rule(r) for r in properties["LifecycleConfiguration"]["Rules"]]
        }
        s3.put_bucket_lifecycle_configuration(Bucket=name, LifecycleConfiguration=lifecycle)
    if "VersioningConfiguration" in properties:
        status = properties["VersioningConfiguration"]["Status"]
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
    if "Tags" in properties:
        s3.put_bucket_tagging(Bucket=name, Tagging={"TagSet": list(properties["Tags"])})
    return attributes


def put_bucket_policy(s3: S3Client, properties: Mapping[str, Any]) -> dict[str, str]:
    """Apply an ``AWS::S3::BucketPolicy`` (Bucket and PolicyDocument already resolved)."""
    _reject_unknown("AWS::S3::BucketPolicy", properties, {"Bucket", "PolicyDocument"})
    bucket = str(properties["Bucket"])
    s3.put_bucket_policy(Bucket=bucket, Policy=json.dumps(properties["PolicyDocument"]))
    return {"Ref": bucket}
