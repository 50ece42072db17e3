"""The web UI over a stack whose payloads are sealed (``world-aws dev --encrypt``), in headless Chromium.

With kms:Decrypt the run page shows the run's result and payloads as written; a server
whose KMS refuses Decrypt shows ``<encrypted>`` in their place, and the page still works.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError
from playwright.sync_api import expect

from tests.sealing.sealed_app import MARK, TOKEN, app, scan
from world_aws.api.server import ApiServer, serve_api
from world_aws.aws.config import AwsConfig
from world_aws.aws.local_clients import clients_for_endpoint
from world_aws.aws.world import create_aws_world
from world_aws.contract.sealing import ENCRYPTED_MARKER
from world_aws.errors import NotFound
from world_aws.local.dev import DevStack, start_dev_stack
from world_aws.runtime.runtime import Runtime


@pytest.fixture(scope="module")
def sealed_dev() -> Iterator[tuple[DevStack, str]]:
    dev = start_dev_stack(app, port=0, kind="embedded", encrypt=True)
    try:
        handle = dev.stack.runtime.start(scan, f"input {MARK}")
        deadline = time.monotonic() + 60
        while True:
            try:
                dev.stack.world.hooks.get_by_token(TOKEN)
                break
            except NotFound:
                assert time.monotonic() < deadline, "the run never created its hook"
                time.sleep(0.05)
        dev.stack.runtime.resume_hook(TOKEN, f"approved {MARK}")
        handle.result(timeout=120)
        yield dev, handle.run_id
    finally:
        dev.stop()


@pytest.fixture
def sealed_page(browser_context: Any) -> Iterator[Any]:
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        yield page
    finally:
        page.close()
    assert not errors, f"the page raised: {errors}"


@pytest.fixture
def no_decrypt_server(sealed_dev: tuple[DevStack, str]) -> Iterator[ApiServer]:
    """The API and UI of a process on the same stack whose KMS refuses Decrypt."""
    dev = sealed_dev[0]
    env = {k: v for k, v in dev.stack.env.items() if k != "WORKFLOW_KMS_KEY_ID"}
    config = AwsConfig.from_env(env)
    clients = clients_for_endpoint(dev.stack.endpoint_url or "", config.region)
    assert clients.make_kms is not None
    clients = dataclasses.replace(clients, kms=clients.make_kms())  # this reader's own KMS client

    def refuse(**_: Any) -> None:
        error = {"Code": "AccessDeniedException", "Message": "not authorized to perform: kms:Decrypt"}
        raise ClientError({"Error": error}, "Decrypt")

    clients.kms.meta.events.register("before-call.kms.Decrypt", refuse)
    world = create_aws_world(config, clients=clients)
    runtime = Runtime(world, app)
    try:
        with serve_api(runtime, port=0) as server:
            yield server
    finally:
        runtime.close()
        world.close()
        clients.close()


def test_the_run_page_shows_the_sealed_runs_values(
    sealed_page: Any, sealed_dev: tuple[DevStack, str]
) -> None:
    dev, run_id = sealed_dev
    sealed_page.goto(f"{dev.url}/ui/#/runs/{run_id}")
    expect(sealed_page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    result = sealed_page.get_by_test_id("result")
    expect(result).to_contain_text(f"output {MARK} of input {MARK}")
    expect(result).to_contain_text(f"approved {MARK}")
    received = sealed_page.locator("[data-testid=event-row][data-type=hook_received]")
    expect(received.get_by_test_id("event-payload")).to_contain_text(f"approved {MARK}")


def test_without_kms_decrypt_the_run_page_shows_encrypted(
    sealed_page: Any, sealed_dev: tuple[DevStack, str], no_decrypt_server: ApiServer
) -> None:
    run_id = sealed_dev[1]
    sealed_page.goto(f"{no_decrypt_server.url}/ui/#/runs/{run_id}")
    expect(sealed_page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(sealed_page.get_by_test_id("result")).to_contain_text(ENCRYPTED_MARKER)
    received = sealed_page.locator("[data-testid=event-row][data-type=hook_received]")
    expect(received.get_by_test_id("event-payload")).to_contain_text(ENCRYPTED_MARKER)
    expect(sealed_page.locator("body")).not_to_contain_text(MARK)
