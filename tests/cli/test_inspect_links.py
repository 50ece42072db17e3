"""``world-aws inspect`` and ``GET /runs/{run_id}``: a run's links to its parent, root, children and chain.

On every World: the example's runs are settled by the harness, then read over real HTTP.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import ExitStack

import pytest

from examples.children import app
from harness.harness import Harness, memory_harness
from world_aws.api.server import serve_api
from world_aws.cli.client import ApiClient
from world_aws.cli.main import main
from world_aws.contract.clock import ManualClock
from world_aws.contract.records import RunStatus


@pytest.fixture(params=["memory", "aws"])
def harness(request: pytest.FixtureRequest) -> Iterator[Harness]:
    with ExitStack() as stack:
        if request.param == "memory":
            built = stack.enter_context(memory_harness())
        else:
            from harness.sqs_pump import aws_harness

            built = stack.enter_context(aws_harness(ManualClock()))
            stack.callback(built.close)
        yield built


def inspect(url: str, run_id: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", run_id, "--api", url], out=out, err=err) == 0, err.getvalue()
    return out.getvalue()


def test_a_parent_and_its_children_link_to_each_other(harness: Harness) -> None:
    # GIVEN a parent that shipped two orders in child runs
    runtime = harness.runtime_for(app)
    handle = runtime.start("ship_orders", ["o-1", "o-2"])
    assert harness.settle(handle) is RunStatus.COMPLETED
    with serve_api(runtime, port=0) as server:
        client = ApiClient(server.url)
        # WHEN the parent is read, THEN it names its children, in the order started
        links = client.get_run(handle.run_id)["links"]
        assert links["root_run_id"] == handle.run_id and links["parent_run_id"] is None
        kids = links["children"]
        assert len(kids) == 2
        # AND each child names its parent and root
        for kid in kids:
            child = client.get_run(kid)
            assert child["status"] == "completed"
            assert child["links"]["parent_run_id"] == handle.run_id
            assert child["links"]["root_run_id"] == handle.run_id
        # AND inspect shows the same links
        shown = inspect(server.url, handle.run_id)
        assert all(f"child     {kid}" in shown for kid in kids)
        assert f"parent    {handle.run_id}" in inspect(server.url, kids[0])


def test_a_run_that_continued_as_new_links_to_the_next(harness: Harness) -> None:
    runtime = harness.runtime_for(app)
    handle = runtime.start("count_up", 4)
    harness.settle(handle)
    with serve_api(runtime, port=0) as server:
        client = ApiClient(server.url)
        first = client.get_run(handle.run_id)["links"]
        second = client.get_run(first["continued_as"])
        assert second["links"]["continued_from"] == handle.run_id
        assert second["links"]["root_run_id"] == handle.run_id
        assert f"continued {first['continued_as']}" in inspect(server.url, handle.run_id)
