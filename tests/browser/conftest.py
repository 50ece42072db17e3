"""Browser tests: Debian's headless Chromium driven by Playwright against a real ``world-aws dev`` stack.

One dev stack (the in-memory World, its consumer threads, the HTTP API and the UI
on a free loopback port) and one browser serve the whole session; each test opens
its own page. Chromium is ``/usr/bin/chromium`` (``.ci/run`` installs it); the
tests skip, saying so, only where it is absent. No ``playwright install``: the
browser is the system's, started offline with a fresh profile.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from world_aws.local.dev import DevStack, start_dev_stack

from .apps import app, release_all

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
OUT = Path(__file__).resolve().parents[2] / "bench" / "out"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    absent = not CHROMIUM.exists()
    skip = pytest.mark.skip(reason=f"no Chromium at {CHROMIUM} (apt-get install -y chromium; .ci/run does)")
    for item in items:
        if item.path.is_relative_to(here):
            item.add_marker(pytest.mark.browser)
            if absent:
                item.add_marker(skip)


@pytest.fixture(scope="module")
def dev() -> Iterator[DevStack]:
    stack = start_dev_stack(app, port=0, kind="memory")
    try:
        yield stack
    finally:
        release_all()  # no step body may hold a consumer thread while the stack stops
        stack.stop()


# Module-scoped, not session-scoped: Playwright's sync API keeps an asyncio loop running on
# this thread while it is open, and a later test's asyncio.run() on the same worker fails.
@pytest.fixture(scope="module")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")),  # a fresh user-data-dir
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport={"width": 1280, "height": 900},
        )
        context.set_default_timeout(15_000)
        try:
            yield context
        finally:
            context.close()


def _csp_violation(message: Any, errors: list[str]) -> None:
    if "Content Security Policy" in message.text:
        errors.append(message.text)


@pytest.fixture
def page(browser_context: Any, dev: DevStack) -> Iterator[Any]:
    page = browser_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    # The UI must run under its own Content-Security-Policy: a refused script or style is a failure.
    page.on("console", lambda msg: _csp_violation(msg, errors))
    try:
        yield page
    finally:
        page.close()
    assert not errors, f"the page raised: {errors}"
