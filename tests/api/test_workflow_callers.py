"""``GET /workflows`` names, for each workflow, the workflows whose code calls it as a child."""

from __future__ import annotations

from examples.children import app as children_app
from world_aws.api.views import workflow_views
from world_aws.api.workflow_calls import callers


def test_a_workflow_called_from_a_nested_function_is_a_child_of_its_caller() -> None:
    # ship_orders calls ship_one inside a nested helper run through asyncio.gather
    found = callers(children_app)
    assert found["ship_one"] == ["ship_orders"]
    assert found["ship_orders"] == [] and found["count_up"] == []  # count_up continues as new, not a child


def test_the_workflow_list_carries_called_by() -> None:
    views = {view.name: view for view in workflow_views(children_app)}
    assert views["ship_one"].called_by == ["ship_orders"]
    assert views["ship_orders"].model_dump()["called_by"] == []
