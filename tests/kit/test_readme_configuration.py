"""The README's configuration table says what the code does: the deployment id's two defaults."""

from __future__ import annotations

from world_aws.aws.config import AwsConfig
from world_aws.aws.infra.template import load_template, parameter_defaults

from .readme import section

REQUIRED = {
    "WORKFLOW_TABLE_NAME": "t",
    "WORKFLOW_QUEUE_URL": "http://q/w",
    "STEP_QUEUE_URL": "http://q/s",
    "WORKFLOW_PAYLOAD_BUCKET": "b",
    "AWS_REGION": "us-east-1",
}


def test_the_deployment_id_defaults_are_the_ones_the_readme_names() -> None:
    row = next(line for line in section("Configuration").splitlines() if "`WORKFLOW_DEPLOYMENT_ID`" in line)
    assert "`dpl_local`" in row and "default empty" in row
    assert AwsConfig.from_env(REQUIRED).deployment_id == "dpl_local"
    assert parameter_defaults(load_template())["DeploymentId"] == ""


def test_the_readme_names_every_template_parameter_and_every_variable_the_functions_get() -> None:
    template = load_template()
    deploy, configuration = section("Deploy"), section("Configuration")
    variables = {
        name
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::Function"
        for name in resource["Properties"].get("Environment", {}).get("Variables", {})
    }
    shared = template.get("Globals", {}).get("Function", {}).get("Environment", {})
    variables |= set(shared.get("Variables", {}))
    assert variables, "the template sets no function environment"
    assert [name for name in sorted(variables) if f"`{name}`" not in configuration] == []
    assert [name for name in template["Parameters"] if f"`{name}`" not in deploy] == []
