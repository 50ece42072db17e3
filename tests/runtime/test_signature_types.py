"""Dataclasses, pydantic models and Enums in signatures need no registration; JSON arguments are converted.

The CLI and the HTTP API receive JSON: a dict becomes the annotated dataclass, a
string the Enum; a value that does not fit names the parameter (exit 2 / 400).
"""

from __future__ import annotations

import io
import json
from collections.abc import Callable

from tests.api.conftest import Api
from world_aws.cli.main import main
from world_aws.testing.kit import KitRun, WorkflowKit

from . import typed_apps
from .typed_apps import Label, Order, Size

KitFactory = Callable[..., WorkflowKit]


def test_types_named_in_signatures_cross_the_log_without_registration(workflow_kit: KitFactory) -> None:
    run = workflow_kit(typed_apps.app).run(typed_apps.ship, Order("o-1", 500), Size.LARGE)
    assert run.result == [Label(to="customer of o-1", size=Size.LARGE)]
    assert run.step(typed_apps.label_for).args == (Order("o-1", 500), Size.LARGE)


def test_cli_json_arguments_become_the_annotated_types_and_the_result_comes_back_as_json() -> None:
    out = io.StringIO()
    argv = ["run", "tests.runtime.typed_apps:app", "ship", "--arg", '{"order_id": "o-2", "cents": 5}']
    code = main([*argv, "--kwarg", 'size="large"', "--world", "memory", "--json"], out=out, err=io.StringIO())
    assert code == 0
    assert json.loads(out.getvalue())["result"] == [{"to": "customer of o-2", "size": "large"}]


def test_a_cli_argument_that_does_not_fit_names_the_parameter_and_exits_2() -> None:
    err = io.StringIO()
    argv = [
        "run",
        "tests.runtime.typed_apps:app",
        "ship",
        "--arg",
        '{"order_id": "o-3"}',
        "--world",
        "memory",
    ]
    assert main(argv, out=io.StringIO(), err=err) == 2
    assert "argument 'order' of workflow 'ship' does not fit Order at cents: Field required" in err.getvalue()


def test_http_arguments_are_converted_and_a_mismatch_is_a_400_naming_the_parameter() -> None:
    with WorkflowKit(typed_apps.app) as kit:
        api = Api(kit.runtime, kit.world, kit.clock)
        body = {"workflow": "ship", "args": [{"order_id": "o-4", "cents": 1}, "huge"]}
        bad = api.call("POST", "/runs", body=body)
        assert bad.status == 400 and "argument 'size' of workflow 'ship'" in bad.message
        run_id = api.start("ship", {"order_id": "o-5", "cents": 1}, size="small")
        run = kit.finish(KitRun(kit, run_id))
        assert run.result == [Label(to="customer of o-5", size=Size.SMALL)]
        assert api.call("GET", f"/runs/{run_id}").body["result"] == [
            {"to": "customer of o-5", "size": "small"}
        ]
