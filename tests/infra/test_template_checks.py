"""template.yaml after the SAM transform: environment, dead letters, IAM scope, SQS triggers, the API.

The template is read with ``world_aws.aws.infra.template.load_template`` and transformed offline
by samtranslator (a region, an ``s3://`` placeholder for the local CodeUri and a
stub managed-policy loader are all it needs), so the checks see the resources
CloudFormation would create: the functions with Globals merged in, the event
source mappings, the roles, the HTTP API's OpenAPI body.

The environment check is derived from the code: the functions' composition root
(``LambdaProcess.create`` and ``Container.from_env``, what a cold start runs) is
given a mapping that records every name read; and a scan of every module a
handler imports makes sure nothing reads the environment anywhere else.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from samtranslator.translator.transform import transform

from functions._container import Container, LambdaProcess
from functions._metrics import MISCONFIGURATIONS, RUNS_HELD
from world_aws.aws.codec import keys
from world_aws.aws.infra.template import load_template
from world_aws.aws.s3 import KEY_PREFIX

REPO = Path(__file__).resolve().parents[2]
HANDLER_MODULES = (
    "functions.workflow_handler",
    "functions.step_handler",
    "functions.api_handler",
    "functions.reconciler_handler",
    "functions.scheduler_handler",
)
# Read by the code but never set by the template: Lambda sets the region itself (reserved
# names, CloudFormation refuses them), and the endpoint override is for local runs only.
NOT_FROM_TEMPLATE = frozenset(
    {
        "AWS_REGION",
        "AWS_DEFAULT_REGION",
        "AWS_ENDPOINT_URL",
        # Lambda sets the function's own name and version (the deployment id, aws/config.py).
        "AWS_LAMBDA_FUNCTION_NAME",
        "AWS_LAMBDA_FUNCTION_VERSION",
    }
)
# The only places that may read the environment (each is fed a recording mapping below).
ENVIRONMENT_READERS = frozenset(
    {
        ("world_aws/aws/config.py", "from_env"),
        ("world_aws/worker/config.py", "from_env"),
        ("functions/_container.py", "from_env"),
        ("functions/_container.py", "create"),
    }
)
CONSUME_ACTIONS = {
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:GetQueueAttributes",
    "sqs:ChangeMessageVisibility",
}


class _StubPolicyLoader:
    """samtranslator asks it only for managed policy names it does not know (none here)."""

    def load(self) -> dict[str, str]:
        return {}


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template()


@pytest.fixture(scope="module")
def transformed(template: dict[str, Any]) -> Iterator[dict[str, Any]]:
    document = copy.deepcopy(template)
    document["Globals"]["Function"]["CodeUri"] = "s3://placeholder-bucket/code.zip"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        yield transform(document, {}, _StubPolicyLoader())


def of_type(document: Mapping[str, Any], resource_type: str) -> dict[str, dict[str, Any]]:
    return {
        lid: dict(body.get("Properties") or {})
        for lid, body in document["Resources"].items()
        if body["Type"] == resource_type
    }


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def statements(role: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The role's inline statements; a conditional one (``Fn::If``) as granted when its condition holds."""
    out: list[dict[str, Any]] = []
    for policy in role.get("Policies", []):
        for statement in policy["PolicyDocument"]["Statement"]:
            branches = statement["Fn::If"][1:] if "Fn::If" in statement else [statement]
            out += [b for b in branches if "Effect" in b]  # AWS::NoValue grants nothing
    return out


def role_of(document: Mapping[str, Any], function: Mapping[str, Any]) -> dict[str, Any]:
    role_id = function["Role"]["Fn::GetAtt"][0]
    return of_type(document, "AWS::IAM::Role")[role_id]


def mapped_function(document: Mapping[str, Any], mapping: Mapping[str, Any]) -> str:
    """The logical id of the function an event source mapping invokes (through its alias, if any)."""
    target = str(mapping["FunctionName"]["Ref"])
    aliases = of_type(document, "AWS::Lambda::Alias")
    return str(aliases[target]["FunctionName"]["Ref"]) if target in aliases else target


def allowed(role: Mapping[str, Any], action: str) -> list[Any]:
    """The resources ``role`` allows ``action`` on."""
    return [
        resource
        for s in statements(role)
        if s["Effect"] == "Allow" and action in as_list(s["Action"])
        for resource in as_list(s["Resource"])
    ]


# ----------------------------------------------------------------------------- environment


class RecordingEnvironment(Mapping[str, str]):
    """An environment that notes every name read, and answers a workable value for each."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = dict(values)
        self.read: set[str] = set()

    def __getitem__(self, name: str) -> str:
        self.read.add(name)
        return self._values.get(name, "1")

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)


def names_read_at_cold_start() -> set[str]:
    env = RecordingEnvironment(
        {
            "WORKFLOW_APP": "world_aws.demo:app",
            "AWS_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": "http://127.0.0.1:9",  # never contacted: nothing is called
        }
    )
    process = LambdaProcess.create(env)
    Container.from_env(process.logger, process.metrics, environ=env).close()
    return env.read


def environment_reads(path: Path) -> set[tuple[str, str]]:
    """(file, enclosing function) of every ``os.environ`` / ``getenv`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: set[tuple[str, str]] = set()
    shown = path.relative_to(REPO).as_posix()

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else function
            if isinstance(child, ast.Attribute) and child.attr in ("environ", "getenv"):
                found.add((shown, function))
            if (
                isinstance(child, ast.ImportFrom)
                and child.module == "os"
                and {a.name for a in child.names} & {"environ", "getenv"}
            ):
                found.add((shown, function))
            visit(child, inner)

    visit(tree, "<module>")
    return found


def test_functions_read_the_environment_only_through_their_composition_root() -> None:
    # GIVEN every module of this repository that a handler imports (a fresh interpreter)
    script = (
        "import json, sys\n"
        + "".join(f"import {m}\n" for m in HANDLER_MODULES)
        + "print(json.dumps([getattr(m, '__file__', None) for m in list(sys.modules.values())]))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=120, check=True
    )
    files = {Path(f) for f in json.loads(result.stdout.splitlines()[-1]) if f}
    # Only this repository's own sources: not examples, and not a virtualenv inside the
    # checkout (CI creates .venv there), whose site-packages hold compiled modules.
    ours = sorted(
        f
        for f in files
        if f.suffix == ".py"
        and f.is_relative_to(REPO)
        and f.parts[len(REPO.parts)] not in {"examples", ".venv"}
        and "site-packages" not in f.parts
    )
    assert any(f.name == "config.py" for f in ours) and len(ours) > 30
    # WHEN each is scanned for environment reads
    reads = set().union(*(environment_reads(f) for f in ours))
    # THEN they happen only in the readers that the cold-start recording below covers (or the CLI's)
    assert reads == ENVIRONMENT_READERS


def test_every_variable_the_code_reads_is_set_on_every_function_and_nothing_else(
    transformed: dict[str, Any],
) -> None:
    # GIVEN the names a cold start reads
    wanted = names_read_at_cold_start() - NOT_FROM_TEMPLATE
    assert {"WORKFLOW_APP", "WORKFLOW_TABLE_NAME", "WORKFLOW_MAX_QUEUE_DELIVERIES"} <= wanted
    functions = of_type(transformed, "AWS::Lambda::Function")
    assert len(functions) == 5
    for lid, function in functions.items():
        # THEN each function sets exactly those (Globals merged in by the transform)
        assert set(function["Environment"]["Variables"]) == wanted, lid


# ----------------------------------------------------------------------------- queues


def test_every_queue_has_a_dead_letter_queue_with_an_alarm_on_any_message(template: dict[str, Any]) -> None:
    queues = of_type(template, "AWS::SQS::Queue")
    alarms = of_type(template, "AWS::CloudWatch::Alarm").values()
    dead_letter = {
        lid: q["RedrivePolicy"]["deadLetterTargetArn"]["Fn::GetAtt"][0]
        for lid, q in queues.items()
        if "RedrivePolicy" in q
    }
    # THEN every queue is either redriven to a DLQ or is one
    assert set(queues) == set(dead_letter) | set(dead_letter.values())
    assert set(dead_letter) == {"WorkflowQueue", "StepQueue"}
    for dlq in dead_letter.values():
        # AND each DLQ has an alarm that fires on its first visible message
        watching = [
            a
            for a in alarms
            if a["Namespace"] == "AWS/SQS"
            and a["MetricName"] == "ApproximateNumberOfMessagesVisible"
            and a["Dimensions"] == [{"Name": "QueueName", "Value": {"Fn::GetAtt": [dlq, "QueueName"]}}]
        ]
        assert len(watching) == 1, dlq
        (alarm,) = watching
        assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_misconfigurations_the_functions_count_are_alarmed_on(transformed: dict[str, Any]) -> None:
    # GIVEN the functions' EMF namespace and service dimension, as the template sets them
    functions = of_type(transformed, "AWS::Lambda::Function").values()
    emitted = {
        (v["POWERTOOLS_METRICS_NAMESPACE"], v["POWERTOOLS_SERVICE_NAME"])
        for v in (f["Environment"]["Variables"] for f in functions)
    }
    (namespace, service), *_ = emitted
    assert len(emitted) == 1
    alarms = of_type(transformed, "AWS::CloudWatch::Alarm").values()
    # THEN one alarm fires on the first misconfiguration they count
    (alarm,) = [a for a in alarms if a["MetricName"] == MISCONFIGURATIONS]
    assert alarm["Namespace"] == namespace
    assert alarm["Dimensions"] == [{"Name": "service", "Value": service}]
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "Sum",
        "GreaterThanThreshold",
        0,
    )


def test_every_sqs_trigger_reports_batch_item_failures_one_record_at_a_time(
    transformed: dict[str, Any],
) -> None:
    mappings = of_type(transformed, "AWS::Lambda::EventSourceMapping")
    assert {m["EventSourceArn"]["Fn::GetAtt"][0] for m in mappings.values()} == {"WorkflowQueue", "StepQueue"}
    for mapping in mappings.values():
        assert mapping.get("FunctionResponseTypes") == ["ReportBatchItemFailures"]
        # Both functions run user steps (the workflow function its inline ones): a batch's
        # records run one after the other, so one record per invocation, or a run's steps
        # hold up the other runs of its batch and share their timeout.
        assert mapping["BatchSize"] == 1
        assert mapping["MaximumBatchingWindowInSeconds"] == 0
        assert 2 <= mapping["ScalingConfig"]["MaximumConcurrency"] <= 1000


def test_queue_visibility_is_at_least_six_times_the_consuming_function_timeout(
    transformed: dict[str, Any],
) -> None:
    queues = of_type(transformed, "AWS::SQS::Queue")
    functions = of_type(transformed, "AWS::Lambda::Function")
    for mapping in of_type(transformed, "AWS::Lambda::EventSourceMapping").values():
        queue = queues[mapping["EventSourceArn"]["Fn::GetAtt"][0]]
        function = functions[mapped_function(transformed, mapping)]
        # AWS: a batch must not become visible again while its invocation (or a retry) may run.
        assert queue.get("VisibilityTimeout", 30) >= 6 * function.get("Timeout", 3)


def test_deploys_publish_versions_of_the_workflow_function_that_only_the_consumers_may_invoke(
    transformed: dict[str, Any],
) -> None:
    functions = of_type(transformed, "AWS::Lambda::Function")
    versions = of_type(transformed, "AWS::Lambda::Version")
    aliases = of_type(transformed, "AWS::Lambda::Alias")
    # GIVEN the workflow function: each deploy publishes a version, and its queue trigger is its alias
    (version,) = versions.values()
    assert version["FunctionName"] == {"Ref": "WorkflowFunction"}
    (alias,) = aliases.values()
    assert alias["FunctionName"] == {"Ref": "WorkflowFunction"} and alias["Name"] == "live"
    workflow_mapping = next(
        m
        for m in of_type(transformed, "AWS::Lambda::EventSourceMapping").values()
        if m["EventSourceArn"] == {"Fn::GetAtt": ["WorkflowQueue", "Arn"]}
    )
    assert workflow_mapping["FunctionName"]["Ref"] in aliases
    assert functions["WorkflowFunction"]["FunctionName"] == {"Fn::Sub": "${AWS::StackName}-workflow"}
    # THEN the other functions know the newest version (the deployment new runs start on)
    (version_id,) = versions
    for lid, function in functions.items():
        variables = function["Environment"]["Variables"]
        if lid == "WorkflowFunction":
            assert variables["WORKFLOW_DEPLOYMENT_FUNCTION"] == ""  # its own, from Lambda
        else:
            assert variables["WORKFLOW_DEPLOYMENT_FUNCTION"] == {"Ref": version_id}, lid
    # AND only the two consumers may invoke, and only the workflow function's versions
    function_arn = "arn:${AWS::Partition}:lambda:${AWS::Region}:${AWS::AccountId}:function:"
    versions_arn = {"Fn::Sub": function_arn + "${AWS::StackName}-workflow:*"}
    invokers = {
        lid
        for lid, function in functions.items()
        if allowed(role_of(transformed, function), "lambda:InvokeFunction")
    }
    assert invokers == {"WorkflowFunction", "StepFunction"}
    for lid in invokers:
        assert allowed(role_of(transformed, functions[lid]), "lambda:InvokeFunction") == [versions_arn]
    # AND only the API lists versions and deletes old ones, never the function itself
    for lid, function in functions.items():
        role = role_of(transformed, function)
        deletes = allowed(role, "lambda:DeleteFunction")
        assert deletes == ([versions_arn] if lid == "ApiFunction" else []), lid


def test_held_runs_are_alarmed_on(transformed: dict[str, Any]) -> None:
    alarms = [
        a for a in of_type(transformed, "AWS::CloudWatch::Alarm").values() if a["MetricName"] == RUNS_HELD
    ]
    (alarm,) = alarms
    assert (alarm["Namespace"], alarm["Dimensions"]) == (
        "WorldAws",
        [{"Name": "service", "Value": "world_aws"}],
    )
    assert (alarm["Statistic"], alarm["ComparisonOperator"], alarm["Threshold"]) == (
        "Maximum",
        "GreaterThanThreshold",
        0,
    )


def test_each_queue_is_consumed_by_exactly_the_function_of_its_trigger(transformed: dict[str, Any]) -> None:
    functions = of_type(transformed, "AWS::Lambda::Function")
    for mapping in of_type(transformed, "AWS::Lambda::EventSourceMapping").values():
        queue_arn = mapping["EventSourceArn"]
        for lid, function in functions.items():
            role = role_of(transformed, function)
            consumes = {a for a in CONSUME_ACTIONS if queue_arn in allowed(role, a)}
            expected = CONSUME_ACTIONS if lid == mapped_function(transformed, mapping) else set()
            assert consumes == expected, (lid, queue_arn)


def test_functions_publishing_to_their_own_trigger_allow_the_recursive_loop(
    transformed: dict[str, Any],
) -> None:
    # Lambda stops SQS -> function -> SQS chains after ~16 hops unless told the loop is intended.
    functions = of_type(transformed, "AWS::Lambda::Function")
    for mapping in of_type(transformed, "AWS::Lambda::EventSourceMapping").values():
        function = functions[mapped_function(transformed, mapping)]
        assert mapping["EventSourceArn"] in allowed(role_of(transformed, function), "sqs:SendMessage")
        assert function["RecursiveLoop"] == "Allow"


# ----------------------------------------------------------------------------- IAM


def test_no_identity_policy_has_a_wildcard_action_or_resource(transformed: dict[str, Any]) -> None:
    roles = of_type(transformed, "AWS::IAM::Role")
    assert not of_type(transformed, "AWS::IAM::Policy") and not of_type(
        transformed, "AWS::IAM::ManagedPolicy"
    )
    for lid, role in roles.items():
        # Nothing hides behind a managed policy (AWSLambdaBasicExecutionRole has Resource "*").
        assert "ManagedPolicyArns" not in role, lid
        for statement in statements(role):
            assert (
                statement["Effect"] == "Allow"
                and "NotAction" not in statement
                and "NotResource" not in statement
            )
            assert all("*" not in action for action in as_list(statement["Action"])), (lid, statement)
            assert all(resource != "*" for resource in as_list(statement["Resource"])), (lid, statement)
    # AND every function runs under one of these roles (none generated by SAM)
    for function in of_type(transformed, "AWS::Lambda::Function").values():
        assert function["Role"]["Fn::GetAtt"][0] in roles


def test_payload_access_is_scoped_to_the_blob_prefix_the_code_writes(transformed: dict[str, Any]) -> None:
    expected = {"Fn::Sub": "${PayloadBucket.Arn}/" + KEY_PREFIX + "*"}
    for lid, function in of_type(transformed, "AWS::Lambda::Function").items():
        role = role_of(transformed, function)
        # The scheduler never reads or writes a payload: scheduled arguments are capped below
        # the inline limit. The reconciler only erases what retention expired (and may put back).
        blobs = [] if lid == "SchedulerFunction" else [expected]
        assert allowed(role, "s3:GetObject") == blobs == allowed(role, "s3:PutObject"), lid
        assert allowed(role, "dynamodb:PutItem") == [{"Fn::GetAtt": ["WorkflowTable", "Arn"]}], lid
        # Deleting a payload: only an erasure (POST /runs/{id}/delete, the retention sweep).
        erasing = lid in ("ApiFunction", "ReconcilerFunction")
        assert allowed(role, "s3:DeleteObject") == ([expected] if erasing else []), lid


def test_only_the_reconciler_may_query_the_expiring_index(transformed: dict[str, Any]) -> None:
    index = {"Fn::Sub": "${WorkflowTable.Arn}/index/" + keys.EXPIRING_INDEX}
    for lid, function in of_type(transformed, "AWS::Lambda::Function").items():
        queries = index in allowed(role_of(transformed, function), "dynamodb:Query")
        assert queries is (lid == "ReconcilerFunction"), lid


def test_only_the_api_and_the_reconciler_may_query_the_runs_index(transformed: dict[str, Any]) -> None:
    # The API lists runs; the reconciler's sweep reads the new ones (live_index.sweep_created).
    index = {"Fn::Sub": "${WorkflowTable.Arn}/index/" + keys.RUNS_INDEX}
    for lid, function in of_type(transformed, "AWS::Lambda::Function").items():
        queries = index in allowed(role_of(transformed, function), "dynamodb:Query")
        assert queries is (lid in ("ApiFunction", "ReconcilerFunction")), lid


def test_only_the_api_and_the_reconciler_may_query_the_deployment_index(transformed: dict[str, Any]) -> None:
    index = {"Fn::Sub": "${WorkflowTable.Arn}/index/" + keys.DEPLOYMENT_INDEX}
    querying = {
        lid
        for lid, function in of_type(transformed, "AWS::Lambda::Function").items()
        if index in allowed(role_of(transformed, function), "dynamodb:Query")
    }
    assert querying == {"ApiFunction", "ReconcilerFunction"}


def test_only_the_reconciler_may_query_the_live_index(transformed: dict[str, Any]) -> None:
    index = {"Fn::Sub": "${WorkflowTable.Arn}/index/" + keys.LIVE}
    for lid, function in of_type(transformed, "AWS::Lambda::Function").items():
        queries = index in allowed(role_of(transformed, function), "dynamodb:Query")
        assert queries is (lid == "ReconcilerFunction"), lid


# ----------------------------------------------------------------------------- reconciler


def test_the_reconciler_runs_on_a_schedule_whose_rate_is_a_parameter(
    template: dict[str, Any], transformed: dict[str, Any]
) -> None:
    # GIVEN the reconciler function of the template
    functions = of_type(transformed, "AWS::Lambda::Function")
    reconciler = functions["ReconcilerFunction"]
    assert reconciler["Handler"] == "functions.reconciler_handler.handler"
    # THEN one EventBridge rule invokes it, at the rate of the ReconcilePeriodMinutes parameter
    (rule,) = rules_invoking(transformed, "ReconcilerFunction")
    assert rule["ScheduleExpression"] == {"Fn::Sub": "rate(${ReconcilePeriodMinutes} minutes)"}
    assert rule.get("State", "ENABLED") == "ENABLED"
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["ReconcilerFunction", "Arn"]}
    parameters = template["Parameters"]
    assert parameters["ReconcilePeriodMinutes"]["Default"] == 5
    # (rate(1 minutes) is not a valid expression: a rate of 1 needs the singular unit)
    assert parameters["ReconcilePeriodMinutes"]["MinValue"] >= 2
    # AND the same parameters reach the code's configuration
    variables = reconciler["Environment"]["Variables"]
    assert variables["WORKFLOW_RECONCILE_PERIOD_MINUTES"] == {"Ref": "ReconcilePeriodMinutes"}
    assert variables["WORKFLOW_RECONCILE_AFTER_SECONDS"] == {"Ref": "ReconcileAfterSeconds"}
    # AND a tick fits well inside the period
    assert reconciler["Timeout"] < 60 * parameters["ReconcilePeriodMinutes"]["MinValue"]
    # AND no run is woken while a body may still run in a consumer's invocation: the silence
    # it waits for is at least twice the longest consumer timeout
    consumers = [functions[name]["Timeout"] for name in ("WorkflowFunction", "StepFunction")]
    assert parameters["ReconcileAfterSeconds"]["MinValue"] >= 2 * max(consumers)
    assert parameters["ReconcileAfterSeconds"]["Default"] >= parameters["ReconcileAfterSeconds"]["MinValue"]


def test_the_reconciler_only_publishes_wake_ups_and_consumes_no_queue(transformed: dict[str, Any]) -> None:
    role = role_of(transformed, of_type(transformed, "AWS::Lambda::Function")["ReconcilerFunction"])
    assert allowed(role, "sqs:SendMessage") == [{"Fn::GetAtt": ["WorkflowQueue", "Arn"]}]
    assert not any(allowed(role, action) for action in CONSUME_ACTIONS)
    table = {"Fn::GetAtt": ["WorkflowTable", "Arn"]}
    # Reads its sweep cursor and run items in batches, moves marks and the cursor, and
    # claims/records/releases idempotency keys; erases the runs whose retention passed
    # (reads and deletes their partitions).
    granted = {a for s in statements(role) for a in as_list(s["Action"]) if table in as_list(s["Resource"])}
    actions = ("GetItem", "BatchGetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchWriteItem")
    assert granted == {f"dynamodb:{a}" for a in actions}


def rules_invoking(transformed: dict[str, Any], function: str) -> list[dict[str, Any]]:
    """The EventBridge rules with ``function`` as a target."""
    return [
        rule
        for rule in of_type(transformed, "AWS::Events::Rule").values()
        if any(t["Arn"] == {"Fn::GetAtt": [function, "Arn"]} for t in rule["Targets"])
    ]


# ----------------------------------------------------------------------------- scheduler


def test_the_scheduler_passes_every_minute_and_a_pass_fits_in_the_minute(transformed: dict[str, Any]) -> None:
    # GIVEN the scheduler function of the template
    scheduler = of_type(transformed, "AWS::Lambda::Function")["SchedulerFunction"]
    assert scheduler["Handler"] == "functions.scheduler_handler.handler"
    # THEN one enabled EventBridge rule invokes it every minute
    (rule,) = rules_invoking(transformed, "SchedulerFunction")
    assert rule["ScheduleExpression"] == "rate(1 minute)"
    assert rule.get("State", "ENABLED") == "ENABLED"
    # AND a pass ends before the next one begins
    assert scheduler["Timeout"] < 60
    assert scheduler["Environment"]["Variables"]["WORKFLOW_SCHEDULE_PERIOD_SECONDS"] == "60"


def test_the_scheduler_only_starts_runs_and_advances_schedules(transformed: dict[str, Any]) -> None:
    role = role_of(transformed, of_type(transformed, "AWS::Lambda::Function")["SchedulerFunction"])
    assert allowed(role, "sqs:SendMessage") == [{"Fn::GetAtt": ["WorkflowQueue", "Arn"]}]
    assert not any(allowed(role, action) for action in CONSUME_ACTIONS)
    table = {"Fn::GetAtt": ["WorkflowTable", "Arn"]}
    # Reads schedule states and run items, writes run_created and schedule states, claims keys;
    # no Query (no index, no log read), no transaction condition checks, no S3.
    granted = {a for s in statements(role) for a in as_list(s["Action"]) if table in as_list(s["Resource"])}
    assert granted == {f"dynamodb:{a}" for a in ("GetItem", "PutItem", "UpdateItem", "DeleteItem")}
    assert not allowed(role, "dynamodb:Query") and not allowed(role, "s3:ListBucket")


# ----------------------------------------------------------------------------- HTTP API


def test_every_api_route_needs_iam_authorization_and_reaches_the_api_function(
    transformed: dict[str, Any],
) -> None:
    (api,) = of_type(transformed, "AWS::ApiGatewayV2::Api").values()
    methods = [method for path in api["Body"]["paths"].values() for method in path.values()]
    assert methods
    for method in methods:
        assert method["security"] == [{"AWS_IAM": []}]
        uri = method["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
        assert "${ApiFunction.Arn}" in uri
    assert (
        api["Body"]["components"]["securitySchemes"]["AWS_IAM"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    )
    # API Gateway gives up on an integration after 30 s.
    assert of_type(transformed, "AWS::Lambda::Function")["ApiFunction"]["Timeout"] < 30


def test_outputs_name_the_api_url_and_every_resource_a_client_needs(template: dict[str, Any]) -> None:
    outputs = template["Outputs"]
    for name in ("ApiUrl", "WorkflowTableName", "WorkflowQueueUrl", "StepQueueUrl", "PayloadBucketName"):
        assert name in outputs
    assert "${WorkflowApi}" in outputs["ApiUrl"]["Value"]["Fn::Sub"]


# ----------------------------------------------------------------------------- hardening (issue 14)


def test_each_queue_takes_sends_only_from_the_roles_that_publish_to_it_and_only_over_tls(
    transformed: dict[str, Any],
) -> None:
    policies = of_type(transformed, "AWS::SQS::QueuePolicy").values()
    roles = of_type(transformed, "AWS::IAM::Role")
    for queue in ("WorkflowQueue", "StepQueue"):
        arn = {"Fn::GetAtt": [queue, "Arn"]}
        (policy,) = [p for p in policies if p["Queues"] == [{"Ref": queue}]]
        by_sid = {s["Sid"]: s for s in policy["PolicyDocument"]["Statement"]}
        tls = by_sid["DenyInsecureTransport"]
        assert (tls["Effect"], tls["Principal"], tls["Action"], tls["Resource"]) == (
            "Deny",
            "*",
            "sqs:*",
            arn,
        )
        assert tls["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
        send = by_sid["SendOnlyFromTheFunctions"]
        assert (send["Effect"], send["Principal"], send["Action"]) == ("Deny", "*", "sqs:SendMessage")
        # THEN the senders it lets through are exactly the roles granted SendMessage on it
        senders = {ref["Fn::GetAtt"][0] for ref in send["Condition"]["ArnNotEquals"]["aws:PrincipalArn"]}
        assert senders == {lid for lid, role in roles.items() if arn in allowed(role, "sqs:SendMessage")}


def test_api_traffic_is_throttled_and_the_api_function_can_be_capped(
    template: dict[str, Any], transformed: dict[str, Any]
) -> None:
    parameters = template["Parameters"]
    (stage,) = of_type(transformed, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["DefaultRouteSettings"]
    assert settings["ThrottlingRateLimit"] == {"Ref": "ApiThrottlingRateLimit"}
    assert settings["ThrottlingBurstLimit"] == {"Ref": "ApiThrottlingBurstLimit"}
    assert (
        0
        < parameters["ApiThrottlingRateLimit"]["Default"]
        <= parameters["ApiThrottlingBurstLimit"]["Default"]
    )
    function = of_type(transformed, "AWS::Lambda::Function")["ApiFunction"]
    assert function["ReservedConcurrentExecutions"] == {
        "Fn::If": ["HasApiReservedConcurrency", {"Ref": "ApiReservedConcurrency"}, {"Ref": "AWS::NoValue"}]
    }
    assert parameters["ApiReservedConcurrency"]["Default"] == 0  # 0 = not reserved (deploys anywhere)


def test_the_table_has_deletion_protection(template: dict[str, Any]) -> None:
    assert of_type(template, "AWS::DynamoDB::Table")["WorkflowTable"]["DeletionProtectionEnabled"] is True


def test_list_bucket_is_granted_only_for_the_blob_prefix(transformed: dict[str, Any]) -> None:
    listings = 0
    for lid, role in of_type(transformed, "AWS::IAM::Role").items():
        listing = [s for s in statements(role) if "s3:ListBucket" in as_list(s["Action"])]
        listings += len(listing)
        for statement in listing:
            assert statement["Condition"] == {"StringLike": {"s3:prefix": KEY_PREFIX + "*"}}, lid
    assert listings == 4  # the roles of the functions that read payloads (the reconciler's: erasures)


def test_the_bundle_dependencies_are_installed_from_the_hashed_lock(template: dict[str, Any]) -> None:
    script = _load_build_script()
    lock = script.LOCK_FILE.read_text(encoding="utf-8").splitlines()
    pinned = [line for line in lock if line and not line.startswith("#")]
    # THEN every line pins one version with at least one sha256
    for line in pinned:
        name_version, *hashes = line.split(" ")
        assert "==" in name_version and hashes, line
        assert all(h.startswith("--hash=sha256:") and len(h) == 14 + 64 for h in hashes), line
    # AND every runtime dependency of pyproject.toml is in it
    names = {line.split("==")[0] for line in pinned}
    for requirement in script.runtime_requirements():
        assert _canonical(requirement) in names, requirement
    # AND the build installs exactly the lock, refusing any file whose hash differs
    command = script.pip_command(Path("/tmp/out"), native=False)
    assert {"--require-hashes", "--no-deps"} <= set(command)
    assert command[-2:] == ["-r", str(script.LOCK_FILE)]


def _load_build_script() -> Any:
    spec = importlib.util.spec_from_file_location("build_lambda", REPO / "scripts" / "build_lambda.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _canonical(requirement: str) -> str:
    name = re.split(r"[\[<>=!~; ]", requirement, maxsplit=1)[0]
    return re.sub(r"[-_.]+", "-", name).lower()


def test_logs_carry_no_user_values_unless_the_parameter_says_so(transformed: dict[str, Any]) -> None:
    assert transformed["Parameters"]["LogUserValues"]["Default"] == "false"
    assert transformed["Conditions"]["LogsCarryUserValues"] == {
        "Fn::Equals": [{"Ref": "LogUserValues"}, "true"]
    }
    for lid, function in of_type(transformed, "AWS::Lambda::Function").items():
        setting = function["Environment"]["Variables"]["WORKFLOW_LOG_USER_VALUES"]
        assert setting == {"Fn::If": ["LogsCarryUserValues", "1", "0"]}, lid


def test_the_payload_key_is_granted_only_with_its_parameter_and_only_on_that_key(
    template: dict[str, Any], transformed: dict[str, Any]
) -> None:
    # GIVEN the template's PayloadKmsKeyArn (empty by default: encryption off)
    assert template["Parameters"]["PayloadKmsKeyArn"]["Default"] == ""
    assert transformed["Conditions"]["EncryptsPayloads"] == {
        "Fn::Not": [{"Fn::Equals": [{"Ref": "PayloadKmsKeyArn"}, ""]}]
    }
    key = {"Ref": "PayloadKmsKeyArn"}
    for lid, role in of_type(transformed, "AWS::IAM::Role").items():
        if not lid.endswith("FunctionRole"):
            continue
        # THEN every function's KMS grant is one statement, conditioned on it, on the key alone
        conditional = [
            s["Fn::If"]
            for policy in role.get("Policies", [])
            for s in policy["PolicyDocument"]["Statement"]
            if "Fn::If" in s
        ]
        assert conditional == [
            [
                "EncryptsPayloads",
                {
                    "Sid": "PayloadKey",
                    "Effect": "Allow",
                    "Action": ["kms:GenerateDataKey", "kms:Decrypt"],
                    "Resource": key,
                },
                {"Ref": "AWS::NoValue"},
            ]
        ], lid
        kms = [s for s in statements(role) if any(str(a).startswith("kms:") for a in as_list(s["Action"]))]
        assert [s["Resource"] for s in kms] == [key], lid
    # and the functions are told the key (WORKFLOW_KMS_KEY_ID)
    for function in of_type(transformed, "AWS::Lambda::Function").values():
        assert function["Environment"]["Variables"]["WORKFLOW_KMS_KEY_ID"] == key
