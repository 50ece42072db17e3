"""template.yaml: it lints clean, it reads with short-form tags, and it says what contract §4.3/§7.1 ask."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from world_aws.aws.codec import keys
from world_aws.aws.infra.template import DEFAULT_TEMPLATE, TemplateError, load_template, resources
from world_aws.aws.queue.heartbeat import HeartbeatConfig
from world_aws.contract.limits import DEFAULT_MAX_QUEUE_DELIVERIES


def _cfn_lint() -> str:
    beside_python = Path(sys.executable).parent / "cfn-lint"
    found = str(beside_python) if beside_python.exists() else shutil.which("cfn-lint")
    if found is None:
        pytest.fail("cfn-lint is not installed (it is in the dev extra)")
    return found


def test_template_passes_cfn_lint_with_no_findings() -> None:
    # GIVEN the repository's template WHEN cfn-lint checks it
    result = subprocess.run(
        [_cfn_lint(), "--", str(DEFAULT_TEMPLATE)], capture_output=True, text=True, timeout=120, check=False
    )
    # THEN it reports nothing
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_short_form_tags_load_as_long_form_intrinsics(tmp_path: Path) -> None:
    # GIVEN a template using CloudFormation's short forms and a date-like string
    path = tmp_path / "t.yaml"
    path.write_text(
        "Resources:\n"
        "  R:\n"
        "    Type: AWS::SQS::Queue\n"
        "    Properties:\n"
        "      A: !Ref Thing\n"
        "      B: !GetAtt Dlq.Arn\n"
        "      C: !GetAtt [Dlq, QueueName]\n"
        "      D: !Sub '${Bucket.Arn}/*'\n"
        "      E: !If [Cond, !Ref X, !Ref AWS::NoValue]\n"
        "      F: !Join ['', [a, !Ref Y]]\n"
        "      G: 2012-10-17\n"
    )
    # WHEN it is loaded
    props = load_template(path)["Resources"]["R"]["Properties"]
    # THEN each tag is the long form CloudFormation itself would read
    assert props == {
        "A": {"Ref": "Thing"},
        "B": {"Fn::GetAtt": ["Dlq", "Arn"]},
        "C": {"Fn::GetAtt": ["Dlq", "QueueName"]},
        "D": {"Fn::Sub": "${Bucket.Arn}/*"},
        "E": {"Fn::If": ["Cond", {"Ref": "X"}, {"Ref": "AWS::NoValue"}]},
        "F": {"Fn::Join": ["", ["a", {"Ref": "Y"}]]},
        "G": "2012-10-17",
    }


def test_unknown_short_form_tag_is_a_template_error(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text("Resources:\n  R:\n    Type: X\n    Properties:\n      A: !Bogus y\n")
    with pytest.raises(TemplateError, match="!Bogus"):
        load_template(path)


def test_table_is_the_single_table_the_key_layout_expects() -> None:
    # GIVEN the template's one table
    (table,) = resources(load_template(), "AWS::DynamoDB::Table").values()
    p = table.properties
    # THEN it has the keys, index and TTL attribute world_aws.aws.codec.keys writes,
    assert p["KeySchema"] == [
        {"AttributeName": keys.PK, "KeyType": "HASH"},
        {"AttributeName": keys.SK, "KeyType": "RANGE"},
    ]
    gsi, live, deployments, expiring = p["GlobalSecondaryIndexes"]
    assert gsi["IndexName"] == keys.RUNS_INDEX
    assert gsi["KeySchema"] == [
        {"AttributeName": keys.GSI1_PK, "KeyType": "HASH"},
        {"AttributeName": keys.GSI1_SK, "KeyType": "RANGE"},
    ]
    # Only the workflow filter is projected: step events and transitions must not write the runs index.
    assert gsi["Projection"] == {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["workflow_name"]}
    # The live index: keyed by reconcile mark, keys only, so no event ever writes it.
    assert live["IndexName"] == keys.LIVE
    assert live["KeySchema"] == [
        {"AttributeName": keys.LIVE_PK, "KeyType": "HASH"},
        {"AttributeName": keys.LIVE_SK, "KeyType": "RANGE"},
    ]
    assert live["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    # The deployment index: live runs by deployment (entered with the live index), keys only.
    assert deployments["IndexName"] == keys.DEPLOYMENT_INDEX
    assert deployments["KeySchema"] == [{"AttributeName": keys.DEP_PK, "KeyType": "HASH"}]
    assert deployments["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    # The expiring index: ended runs with a retention by expiry (a number: end + retention, µs).
    assert expiring["IndexName"] == keys.EXPIRING_INDEX
    assert expiring["KeySchema"] == [
        {"AttributeName": keys.XP_PK, "KeyType": "HASH"},
        {"AttributeName": keys.XP_US, "KeyType": "RANGE"},
    ]
    assert expiring["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    types = {d["AttributeName"]: d["AttributeType"] for d in p["AttributeDefinitions"]}
    assert types == {
        keys.PK: "S",
        keys.SK: "S",
        keys.GSI1_PK: "S",
        keys.GSI1_SK: "S",
        keys.LIVE_PK: "S",
        keys.LIVE_SK: "S",
        keys.DEP_PK: "S",
        keys.XP_PK: "S",
        keys.XP_US: "N",
    }
    assert p["TimeToLiveSpecification"] == {"AttributeName": keys.TTL_ATTRIBUTE, "Enabled": True}
    # AND the operational settings contract §7.1 asks for
    assert p["BillingMode"] == "PAY_PER_REQUEST"
    assert p["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert p["SSESpecification"] == {"SSEEnabled": True}


def test_every_queue_with_a_dlq_redrives_above_the_handler_delivery_cap() -> None:
    queues = resources(load_template(), "AWS::SQS::Queue")
    redriven = {
        lid: q.properties["RedrivePolicy"] for lid, q in queues.items() if "RedrivePolicy" in q.properties
    }
    # THEN both the workflow and the step queue have a DLQ that is itself a declared queue
    assert set(redriven) == {"WorkflowQueue", "StepQueue"}
    for policy in redriven.values():
        assert policy["deadLetterTargetArn"]["Fn::GetAtt"][0] in queues
        # AND SQS never dead-letters before the handler's own cap fails the run (contract §4.3)
        assert policy["maxReceiveCount"] > DEFAULT_MAX_QUEUE_DELIVERIES


def test_queues_are_encrypted_and_keep_messages_fourteen_days() -> None:
    for queue in resources(load_template(), "AWS::SQS::Queue").values():
        assert queue.properties["SqsManagedSseEnabled"] is True
        assert queue.properties["MessageRetentionPeriod"] == 14 * 24 * 3600


def test_queue_visibility_covers_six_times_the_timeout_of_its_consumer() -> None:
    # GIVEN the functions consuming each queue
    template = load_template()
    queues = resources(template, "AWS::SQS::Queue")
    default_timeout = template.get("Globals", {}).get("Function", {}).get("Timeout", 3)
    for function in resources(template, "AWS::Serverless::Function").values():
        timeout = function.properties.get("Timeout", default_timeout)
        for event in function.properties.get("Events", {}).values():
            if event["Type"] != "SQS":
                continue
            queue = queues[event["Properties"]["Queue"]["Fn::GetAtt"][0]]
            # THEN a batch never becomes visible again while its invocation may still run
            assert queue.properties.get("VisibilityTimeout", 30) >= 6 * timeout


def test_the_heartbeat_hides_messages_briefly_and_a_failure_for_the_queues_own_timeout() -> None:
    # GIVEN the functions' heartbeat settings and the queues
    template = load_template()
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    config = HeartbeatConfig.from_env(variables)
    # THEN they are the code's defaults (the embedded stack and dev run with the template's settings)
    assert config == HeartbeatConfig()
    for name, queue in resources(template, "AWS::SQS::Queue").items():
        if "RedrivePolicy" not in queue.properties:
            continue
        # AND a failed record is hidden exactly as long as a received one (the queue's timeout)
        assert queue.properties["VisibilityTimeout"] == config.queue_visibility_seconds, name
        # AND a beat hides a message for seconds: a crashed consumer's messages come back quickly
        assert 0 < config.visibility_seconds <= 60 < config.queue_visibility_seconds


def test_payload_bucket_is_private_encrypted_tls_only_with_a_lifecycle() -> None:
    template = load_template()
    ((bucket_id, bucket),) = resources(template, "AWS::S3::Bucket").items()
    block = bucket.properties["PublicAccessBlockConfiguration"]
    assert set(block) == {"BlockPublicAcls", "BlockPublicPolicy", "IgnorePublicAcls", "RestrictPublicBuckets"}
    assert all(value is True for value in block.values())
    assert bucket.properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert bucket.properties["LifecycleConfiguration"]["Rules"]
    (policy,) = resources(template, "AWS::S3::BucketPolicy").values()
    assert policy.properties["Bucket"] == {"Ref": bucket_id}
    denies = [s for s in policy.properties["PolicyDocument"]["Statement"] if s["Effect"] == "Deny"]
    assert any(s.get("Condition", {}).get("Bool", {}).get("aws:SecureTransport") == "false" for s in denies)
