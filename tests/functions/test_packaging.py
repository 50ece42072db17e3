"""The Lambda bundle: what ``scripts/build_lambda.py`` builds runs every handler with nothing else.

The bundle is built once per session with the script the README's deploy uses,
``--native`` (wheels for this interpreter: the deployed arm64 / CPython 3.12 wheels
cannot load here), into a temporary directory. Then a fresh interpreter started
with ``-I -S`` (no site-packages, no PYTHON* variables, neither the script's nor the
current directory on the path) gets the bundle as its only addition to
``sys.path``, imports each handler named by ``template.yaml`` and runs it on the
sample events, against the moto endpoint this test process serves. moto stays
here: the subprocess only gets the endpoint and the provisioned names in its
environment, as a function gets them from the template.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from infra.events.make_events import RUN_ID, STEP_NAME
from world_aws.aws.infra.template import load_template, resources
from world_aws.aws.world import AwsWorld
from world_aws.contract.payload import InvokePayload
from world_aws.contract.records import RunStatus, StepStatus
from world_aws.contract.transport import decode_body
from world_aws.demo import app as orders_app

REPO = Path(__file__).resolve().parents[2]
BUILD_SCRIPT = REPO / "scripts" / "build_lambda.py"
SampleEvent = Callable[[str], dict[str, Any]]

# Runs in the isolated interpreter: argv = bundle, plan file, result file.
DRIVER = """
import importlib, json, sys, sysconfig

bundle, plan_file, result_file = sys.argv[1:4]
sys.path.insert(0, bundle)


class Context:
    function_name = "world-aws-bundle"
    function_version = "$LATEST"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:world-aws-bundle"
    aws_request_id = "bundle-request-1"
    remaining_ms = 150_000

    def get_remaining_time_in_millis(self) -> int:
        return self.remaining_ms


with open(plan_file) as f:
    plan = json.load(f)
responses = []
for call in plan:
    module_name, _, attribute = call["handler"].rpartition(".")
    handler = getattr(importlib.import_module(module_name), attribute)
    responses.append(handler(call["event"], Context()))
with open(result_file, "w") as f:
    json.dump(
        {
            "responses": responses,
            "files": {
                name: getattr(module, "__file__", None) or ""
                for name, module in list(sys.modules.items())
                if name not in ("__main__", "__mp_main__")  # the driver itself
            },
            "modules": sorted(sys.modules),
            "path": sys.path,
            "stdlib": sorted({sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}),
        },
        f,
    )
"""


def step_id_of(event: dict[str, Any]) -> str:
    """The step id the first record of a step event carries."""
    payload = decode_body(event["Records"][0]["body"])
    assert isinstance(payload, InvokePayload) and payload.step_id is not None
    return payload.step_id


def load_build_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("build_lambda", BUILD_SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundle, built by the deploy's script for this interpreter (once per session)."""
    out = tmp_path_factory.mktemp("bundle") / "lambda"
    subprocess.run(
        [sys.executable, str(BUILD_SCRIPT), "--native", "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=600,
    )
    return out


def handlers() -> dict[str, str]:
    """Handler strings by function logical id, as template.yaml declares them."""
    functions = resources(load_template(), "AWS::Serverless::Function")
    return {lid: str(f.properties["Handler"]) for lid, f in functions.items()}


def test_template_deploys_what_the_build_script_builds() -> None:
    template = load_template()
    script = load_build_script()
    defaults = template["Globals"]["Function"]
    # THEN CodeUri is the script's output, for the runtime and architecture it builds for,
    assert (REPO / defaults["CodeUri"]).resolve() == script.DEFAULT_OUT.resolve()
    assert defaults["Runtime"] == f"python{script.LAMBDA_PYTHON_VERSION}"
    assert defaults["Architectures"] == ["arm64"]
    assert all(platform.endswith("_aarch64") for platform in script.LAMBDA_PLATFORMS)
    # AND sam build copies it through the Makefile the script writes (its Python builder drops *.so)
    for lid, function in template["Resources"].items():
        if function["Type"] == "AWS::Serverless::Function":
            assert function["Metadata"]["BuildMethod"] == "makefile", lid
            assert "CodeUri" not in function["Properties"], lid


@pytest.mark.slow
def test_bundle_holds_the_handlers_and_runtime_dependencies_but_no_dev_tools(bundle: Path) -> None:
    top = {path.name for path in bundle.iterdir()}
    # THEN the handler modules, world_aws, the default app and the Makefile for sam build are there,
    for handler in handlers().values():
        module_path = Path(*handler.split(".")[:-1]).with_suffix(".py")
        assert (bundle / module_path).is_file(), handler
    assert {"world_aws", "functions", "examples", "Makefile"} <= top
    assert {"boto3", "botocore", "aws_lambda_powertools", "pydantic", "pydantic_core", "cbor2"} <= top
    # AND none of the development extras or the repository's other folders
    assert not top & {"moto", "pytest", "hypothesis", "mypy", "cfnlint", "samtranslator", "tests", "infra"}
    assert "build-%:" in (bundle / "Makefile").read_text(encoding="utf-8")


@pytest.mark.slow
def test_each_handler_runs_from_the_bundle_alone_against_moto(
    bundle: Path,
    tmp_path: Path,
    function_env: dict[str, str],
    sample_event: SampleEvent,
    world: AwsWorld,
) -> None:
    # GIVEN the template's handlers and the sample events: start a run, run a step twice
    # (its first attempt asks for a retry), start another run over HTTP
    by_function = handlers()
    step_event = sample_event("sqs_step_event.json")
    redelivered = json.loads(json.dumps(step_event))
    redelivered["Records"][0]["attributes"]["ApproximateReceiveCount"] = "2"
    plan = [
        {"handler": by_function["WorkflowFunction"], "event": sample_event("sqs_workflow_event.json")},
        {"handler": by_function["StepFunction"], "event": step_event},
        {"handler": by_function["StepFunction"], "event": redelivered},
        {"handler": by_function["ApiFunction"], "event": sample_event("http_start_run_event.json")},
        {"handler": by_function["ReconcilerFunction"], "event": {"detail-type": "Scheduled Event"}},
        {"handler": by_function["SchedulerFunction"], "event": {"detail-type": "Scheduled Event"}},
    ]
    (tmp_path / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    (tmp_path / "driver.py").write_text(DRIVER, encoding="utf-8")
    env = {
        **function_env,
        "PATH": os.defpath,
        "HOME": str(tmp_path),
        "AWS_CONFIG_FILE": str(tmp_path / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "no-aws-credentials"),
    }
    # WHEN a fresh interpreter that sees only the bundle and the standard library runs them
    result = subprocess.run(
        [
            sys.executable,
            "-I",
            "-S",
            "-B",
            str(tmp_path / "driver.py"),
            str(bundle),
            "plan.json",
            "result.json",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    outcome = json.loads((tmp_path / "result.json").read_text(encoding="utf-8"))
    # THEN every module came from the bundle or the standard library: nothing from the repo or a venv
    roots = [str(bundle), *outcome["stdlib"]]
    strays = {
        name: file
        for name, file in outcome["files"].items()
        if file and not any(file.startswith(root + os.sep) for root in roots)
    }
    assert strays == {}
    assert not any("site-packages" in entry for entry in outcome["path"])
    assert "moto" not in outcome["modules"] and "functions.workflow_handler" in outcome["modules"]
    # AND each handler answered as a function would
    started, retried, completed, http, reconciled, scheduled = outcome["responses"]
    # (the retry is acked: its next attempt went out as a delayed message of its own)
    assert started == {"batchItemFailures": []} == completed == retried
    assert http["statusCode"] == 201
    # (every run is younger than the reconciler's threshold: it looks at none)
    assert reconciled == {"looked_at": 0, "woken": 0, "remarked": 0, "failed": 0}
    # (the default app has no schedules: the scheduler's pass starts nothing)
    assert scheduled == {
        "started": 0,
        "already_started": 0,
        "skipped": 0,
        "missed": 0,
        "refused": 0,
        "failed": 0,
    }
    # AND the state they wrote reads back: the sample run runs, its step completed on attempt 2
    assert world.runs.get(RUN_ID).status is RunStatus.RUNNING
    step_id = step_id_of(step_event)
    step = world.steps.get(RUN_ID, step_id)
    assert (step.step_name, step.status, step.attempt) == (STEP_NAME, StepStatus.COMPLETED, 2)
    assert step.output is not None and orders_app.serializer.loads(step.output).startswith("ch_order-1_500_")
    assert world.runs.get(json.loads(http["body"])["run_id"]).workflow_name == "checkout"
    # AND the logs are Powertools JSON carrying run_id and step_id, the metrics EMF
    printed = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    step_logs = [p for p in printed if p.get("message") == "step completed"]
    assert step_logs and step_logs[0]["run_id"] == RUN_ID and step_logs[0]["step_id"] == step_id
    assert step_logs[0]["function_request_id"] == "bundle-request-1"
    emitted = {
        m["Name"] for p in printed if "_aws" in p for m in p["_aws"]["CloudWatchMetrics"][0]["Metrics"]
    }
    assert {"RunsStarted", "StepsRetried", "StepsCompleted", "RunsCreated", "ApiRequests"} <= emitted
    assert "RunsReconciled" in emitted
