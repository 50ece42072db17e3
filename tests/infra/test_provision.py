"""world_aws.aws.infra.provision creates exactly what template.yaml declares, as read back from moto."""

from __future__ import annotations

import json
from typing import Any

import pytest

from world_aws.aws.infra.provision import ProvisionedResources, physical_name, provision
from world_aws.aws.infra.template import DEFAULT_TEMPLATE, TemplateError, load_template, resources
from world_aws.contract.limits import DEFAULT_MAX_QUEUE_DELIVERIES
from world_aws.contract.world import QueueName

PREFIX = "t-main"


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def provisioned(clients: Any) -> ProvisionedResources:
    return provision(clients, name_prefix=PREFIX)


def _ours(names: Any) -> set[str]:
    """The names of this module's main copy (other tests provision under other prefixes)."""
    return {name for name in names if name.startswith(f"{PREFIX}-")}


def _queue_url(clients: Any, logical_id: str) -> str:
    return str(clients.sqs.get_queue_url(QueueName=physical_name(PREFIX, logical_id))["QueueUrl"])


def test_created_resources_are_exactly_the_declared_ones(
    clients: Any, template: dict[str, Any], provisioned: ProvisionedResources
) -> None:
    # GIVEN an empty moto WHEN the template is provisioned
    # THEN the tables, queues and buckets listed back are the template's, one for one
    tables = resources(template, "AWS::DynamoDB::Table")
    queues = resources(template, "AWS::SQS::Queue")
    buckets = resources(template, "AWS::S3::Bucket")
    assert _ours(clients.dynamodb.list_tables()["TableNames"]) == {
        physical_name(PREFIX, lid) for lid in tables
    }
    listed_queues = _ours(url.rsplit("/", 1)[-1] for url in clients.sqs.list_queues()["QueueUrls"])
    assert listed_queues == {physical_name(PREFIX, lid) for lid in queues}
    assert _ours(b["Name"] for b in clients.s3.list_buckets()["Buckets"]) == {
        physical_name(PREFIX, lid) for lid in buckets
    }
    # AND the returned description names them
    assert provisioned.table_name == physical_name(PREFIX, "WorkflowTable")
    assert provisioned.workflow_queue_url == _queue_url(clients, "WorkflowQueue")
    assert provisioned.step_queue_url == _queue_url(clients, "StepQueue")
    assert provisioned.workflow_dlq_url == _queue_url(clients, "WorkflowDeadLetterQueue")
    assert provisioned.step_dlq_url == _queue_url(clients, "StepDeadLetterQueue")
    assert provisioned.bucket_name == physical_name(PREFIX, "PayloadBucket")


def test_table_settings_read_back_match_the_template(
    clients: Any, template: dict[str, Any], provisioned: ProvisionedResources
) -> None:
    for lid, table in resources(template, "AWS::DynamoDB::Table").items():
        p = table.properties
        name = physical_name(PREFIX, lid)
        described = clients.dynamodb.describe_table(TableName=name)["Table"]
        assert described["KeySchema"] == p["KeySchema"]
        assert sorted(described["AttributeDefinitions"], key=str) == sorted(
            p["AttributeDefinitions"], key=str
        )
        assert described["BillingModeSummary"]["BillingMode"] == p["BillingMode"]
        live_gsis = {g["IndexName"]: g for g in described.get("GlobalSecondaryIndexes", [])}
        assert set(live_gsis) == {g["IndexName"] for g in p["GlobalSecondaryIndexes"]}
        for gsi in p["GlobalSecondaryIndexes"]:
            assert live_gsis[gsi["IndexName"]]["KeySchema"] == gsi["KeySchema"]
            assert live_gsis[gsi["IndexName"]]["Projection"] == gsi["Projection"]
        ttl = clients.dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        expected_ttl = p["TimeToLiveSpecification"]
        assert ttl["AttributeName"] == expected_ttl["AttributeName"]
        assert ttl["TimeToLiveStatus"] == ("ENABLED" if expected_ttl["Enabled"] else "DISABLED")
        backups = clients.dynamodb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        pitr = backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"]
        expected_pitr = p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"]
        assert pitr == ("ENABLED" if expected_pitr else "DISABLED")
        assert (described["SSEDescription"]["Status"] == "ENABLED") is p["SSESpecification"]["SSEEnabled"]


def test_queue_attributes_and_redrive_read_back_match_the_template(
    clients: Any, template: dict[str, Any], provisioned: ProvisionedResources
) -> None:
    simple = ("VisibilityTimeout", "MessageRetentionPeriod", "DelaySeconds", "MaximumMessageSize")
    for lid, queue in resources(template, "AWS::SQS::Queue").items():
        p = queue.properties
        live = clients.sqs.get_queue_attributes(QueueUrl=_queue_url(clients, lid), AttributeNames=["All"])[
            "Attributes"
        ]
        for name in simple:
            if name in p:
                assert live[name] == str(p[name]), (lid, name)
        assert live["SqsManagedSseEnabled"] == str(p["SqsManagedSseEnabled"]).lower()
        if "RedrivePolicy" not in p:
            assert "RedrivePolicy" not in live
            continue
        redrive = json.loads(live["RedrivePolicy"])
        dlq_lid = p["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        dlq_arn = clients.sqs.get_queue_attributes(
            QueueUrl=_queue_url(clients, dlq_lid), AttributeNames=["QueueArn"]
        )["Attributes"]["QueueArn"]
        # THEN the GetAtt resolved to the DLQ that was created for it
        assert redrive == {
            "deadLetterTargetArn": dlq_arn,
            "maxReceiveCount": p["RedrivePolicy"]["maxReceiveCount"],
        }


def test_provisioned_queue_settings_carry_the_template_redrive_and_visibility(
    template: dict[str, Any], provisioned: ProvisionedResources
) -> None:
    declared = resources(template, "AWS::SQS::Queue")
    for queue, lid in ((QueueName.WORKFLOW, "WorkflowQueue"), (QueueName.STEP, "StepQueue")):
        p = declared[lid].properties
        assert provisioned.max_receive_count(queue) == p["RedrivePolicy"]["maxReceiveCount"]
        assert provisioned.max_receive_count(queue) > DEFAULT_MAX_QUEUE_DELIVERIES
        assert provisioned.visibility_timeout(queue) == p["VisibilityTimeout"]


def test_bucket_settings_read_back_match_the_template(
    clients: Any, template: dict[str, Any], provisioned: ProvisionedResources
) -> None:
    ((lid, bucket),) = resources(template, "AWS::S3::Bucket").items()
    p = bucket.properties
    name = physical_name(PREFIX, lid)
    block = clients.s3.get_public_access_block(Bucket=name)["PublicAccessBlockConfiguration"]
    assert block == p["PublicAccessBlockConfiguration"]
    (rule,) = clients.s3.get_bucket_encryption(Bucket=name)["ServerSideEncryptionConfiguration"]["Rules"]
    (declared,) = p["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert rule["ApplyServerSideEncryptionByDefault"] == declared["ServerSideEncryptionByDefault"]
    assert rule["BucketKeyEnabled"] == declared["BucketKeyEnabled"]
    live_rules = {r["ID"]: r for r in clients.s3.get_bucket_lifecycle_configuration(Bucket=name)["Rules"]}
    assert set(live_rules) == {r["Id"] for r in p["LifecycleConfiguration"]["Rules"]}
    for declared_rule in p["LifecycleConfiguration"]["Rules"]:
        live = live_rules[declared_rule["Id"]]
        assert live["Status"] == declared_rule["Status"]
        assert live["AbortIncompleteMultipartUpload"] == declared_rule["AbortIncompleteMultipartUpload"]
    ownership = clients.s3.get_bucket_ownership_controls(Bucket=name)["OwnershipControls"]
    assert ownership == p["OwnershipControls"]


def test_bucket_policy_is_resolved_and_applied_on_request(clients: Any, template: dict[str, Any]) -> None:
    # GIVEN provisioning asked to apply bucket policies
    created = provision(clients, name_prefix="t-policy", apply_bucket_policies=True)
    # THEN the live policy is the template's document with the bucket's ARN filled in
    live = json.loads(clients.s3.get_bucket_policy(Bucket=created.bucket_name)["Policy"])
    (declared,) = resources(template, "AWS::S3::BucketPolicy").values()
    (statement,) = live["Statement"]
    (declared_statement,) = declared.properties["PolicyDocument"]["Statement"]
    arn = f"arn:aws:s3:::{created.bucket_name}"
    assert statement["Resource"] == [arn, f"{arn}/*"]
    assert {k: v for k, v in statement.items() if k != "Resource"} == {
        k: v for k, v in declared_statement.items() if k != "Resource"
    }
    assert "PayloadBucketPolicy" not in created.not_applied


def test_bucket_policy_is_not_applied_by_default_so_local_objects_work(
    clients: Any, provisioned: ProvisionedResources
) -> None:
    # GIVEN default provisioning (moto cannot evaluate the TLS-only condition)
    # THEN the policy is reported as not applied, and objects can be written and read
    assert "PayloadBucketPolicy" in provisioned.not_applied
    clients.s3.put_object(Bucket=provisioned.bucket_name, Key="k", Body=b"payload")
    assert clients.s3.get_object(Bucket=provisioned.bucket_name, Key="k")["Body"].read() == b"payload"


def test_env_names_the_created_resources(provisioned: ProvisionedResources) -> None:
    env = provisioned.to_env()
    assert env["WORKFLOW_TABLE_NAME"] == provisioned.table_name
    assert env["WORKFLOW_QUEUE_URL"] == provisioned.workflow_queue_url
    assert env["STEP_QUEUE_URL"] == provisioned.step_queue_url
    assert env["WORKFLOW_PAYLOAD_BUCKET"] == provisioned.bucket_name
    assert env["WORKFLOW_DEPLOYMENT_ID"] == load_template()["Parameters"]["DeploymentId"]["Default"]


def test_parameters_override_template_defaults(clients: Any) -> None:
    created = provision(clients, name_prefix="t-param", parameters={"DeploymentId": "dpl_42"})
    assert created.deployment_id == "dpl_42"
    tags = clients.dynamodb.list_tags_of_resource(
        ResourceArn=clients.dynamodb.describe_table(TableName=created.table_name)["Table"]["TableArn"]
    )["Tags"]
    assert {"Key": "world-aws:deployment-id", "Value": "dpl_42"} in tags


def test_an_untranslated_property_is_refused_not_dropped(clients: Any, tmp_path: Any) -> None:
    # GIVEN a template whose queue uses a property local provisioning does not translate
    text = DEFAULT_TEMPLATE.read_text()
    path = tmp_path / "template.yaml"
    path.write_text(text.replace("      SqsManagedSseEnabled: true\n", "      Bogus: 1\n", 1))
    # WHEN provisioned THEN it fails loudly, naming the property
    with pytest.raises(TemplateError, match="Bogus"):
        provision(clients, path, name_prefix="t-bogus")


def test_name_prefix_must_be_usable_in_bucket_names(clients: Any) -> None:
    with pytest.raises(TemplateError, match="name_prefix"):
        provision(clients, name_prefix="Upper_Case")


def test_without_settings_the_resources_behave_the_same_and_the_idle_settings_are_left_out(
    clients: Any, provisioned: ProvisionedResources
) -> None:
    # GIVEN the template provisioned for a local run only (apply_settings=False)
    bare = provision(clients, name_prefix="t-bare", apply_settings=False)
    # THEN the table has the same keys and indexes, the queues the same attributes and redrive
    full_table = clients.dynamodb.describe_table(TableName=provisioned.table_name)["Table"]
    bare_table = clients.dynamodb.describe_table(TableName=bare.table_name)["Table"]
    for key in ("KeySchema", "AttributeDefinitions", "BillingModeSummary"):
        assert bare_table.get(key) == full_table.get(key), key
    index_names = {i["IndexName"] for i in full_table.get("GlobalSecondaryIndexes", [])}
    assert {i["IndexName"] for i in bare_table.get("GlobalSecondaryIndexes", [])} == index_names
    for queue in QueueName:
        assert bare.queues[queue].visibility_timeout == provisioned.queues[queue].visibility_timeout
        assert bare.max_receive_count(queue) == provisioned.max_receive_count(queue)
    clients.s3.put_object(Bucket=bare.bucket_name, Key="k", Body=b"v")
    assert clients.s3.get_object(Bucket=bare.bucket_name, Key="k")["Body"].read() == b"v"
    # AND the settings moto never acts on were not applied
    ttl = clients.dynamodb.describe_time_to_live(TableName=bare.table_name)["TimeToLiveDescription"]
    assert ttl["TimeToLiveStatus"] == "DISABLED"
    with pytest.raises(clients.s3.exceptions.ClientError):
        clients.s3.get_bucket_lifecycle_configuration(Bucket=bare.bucket_name)
