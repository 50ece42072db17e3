"""A page on another origin cannot drive the dev server or the ``ui`` signing proxy; the UI itself still can.

The other origin is a plain HTTP server on another loopback port (the same site,
another origin: the case a CORS-less check of "localhost" would miss). From it the
page tries every way a browser offers to start, cancel and resume: simple
``no-cors`` POSTs (no preflight), JSON POSTs (a preflight), and a form submission.
What the servers did is read back from the runtime: no run started, the run still
running, its hook not resumed. Then the UI's own buttons, served by the same
server, do all three under the Content-Security-Policy.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from playwright.sync_api import expect

from world_aws.api.server import serve_backend
from world_aws.cli.client import ApiClient
from world_aws.cli.ui import proxy_backend
from world_aws.engine import ids
from world_aws.errors import NotFound
from world_aws.local.dev import DevStack

from .apps import release

OTHER_PAGE = b"<!doctype html><title>another site</title><p>nothing to see here</p>"

# Run in the other origin's page: each attempt's fate, as the page saw it.
ATTACK = """
async ({target, runId, token, key}) => {
  const seen = {};
  const json = (value) => JSON.stringify(value);
  const attempt = async (name, path, init) => {
    try {
      const answer = await fetch(target + path, init);
      seen[name] = `answered ${answer.status}`;  // 0: an opaque (no-cors) answer
    } catch (error) {
      seen[name] = "blocked";
    }
  };
  const start = {workflow: "three_gates", args: ["attack"], idempotency_key: key};
  for (const [kind, headers, mode] of [
    ["simple", {"content-type": "text/plain"}, "no-cors"],
    ["json", {"content-type": "application/json"}, "cors"],
  ]) {
    await attempt(`start ${kind}`, "/runs", {method: "POST", mode, headers, body: json(start)});
    await attempt(`cancel ${kind}`, `/runs/${runId}/cancel`,
      {method: "POST", mode, headers, body: json({reason: "another site"})});
    await attempt(`resume ${kind}`, `/hooks/${encodeURIComponent(token)}/resume`,
      {method: "POST", mode, headers, body: json({payload: {approved: true, by: "another site"}})});
  }
  await attempt("bodiless cancel", `/runs/${runId}/cancel`, {method: "POST", mode: "no-cors"});
  await attempt("read", "/runs", {});
  return seen;
}
"""

FORM_POST = """
({action, body}) => {
  const form = document.createElement("form");
  form.method = "POST";
  form.enctype = "text/plain";
  form.action = action;
  const field = document.createElement("input");
  field.name = body.slice(0, 1);
  field.value = body.slice(1);
  form.append(field);
  document.body.append(form);
  form.submit();
}
"""


class _OtherSite(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("content-type", "text/html; charset=utf-8")
        self.send_header("content-length", str(len(OTHER_PAGE)))
        self.end_headers()
        self.wfile.write(OTHER_PAGE)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def other_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OtherSite)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join()
        server.server_close()


@pytest.fixture(params=["dev", "ui proxy"])
def front(request: pytest.FixtureRequest, dev: DevStack) -> Iterator[str]:
    """The URL a developer's browser talks to: the dev server itself, or ``world-aws ui`` in front of it."""
    if request.param == "dev":
        yield dev.url
        return
    with serve_backend(proxy_backend(ApiClient(dev.url, sign=False)), port=0) as proxy:
        yield proxy.url


def _status(dev: DevStack, run_id: str) -> str:
    return dev.stack.runtime.get_run(run_id).status().value


def test_another_origin_cannot_start_cancel_or_resume_but_the_ui_can(
    page: Any, browser_context: Any, dev: DevStack, front: str, other_site: str
) -> None:
    order = f"o-{uuid.uuid4().hex[:8]}"
    token = f"approve:{order}"
    run_id = dev.stack.runtime.start("approval", order).run_id
    page.goto(f"{front}/ui/#/runs/{run_id}")
    own_form = page.locator(f"[data-testid=resume-form][data-token='{token}']")
    expect(own_form).to_be_visible()  # the run waits on its hook: a resume now would complete it

    key = f"attack-{uuid.uuid4().hex}"
    other = browser_context.new_page()
    try:
        other.goto(f"{other_site}/")
        seen = other.evaluate(ATTACK, {"target": front, "runId": run_id, "token": token, "key": key})
        # Preflighted requests never leave the browser; simple ones reach the server and are refused.
        assert seen["start json"] == seen["cancel json"] == seen["resume json"] == "blocked", seen
        assert seen["read"] == "blocked", seen
        with other.expect_navigation():
            other.evaluate(FORM_POST, {"action": f"{front}/runs/{run_id}/cancel", "body": json.dumps({})})
        refused = json.loads(other.locator("body").inner_text())
        assert (
            refused["error"]["kind"] == "Forbidden"
            and "Sec-Fetch-Site: same-site" in refused["error"]["message"]
        )
    finally:
        other.close()

    with pytest.raises(NotFound):
        dev.stack.world.runs.get(ids.run_id_for_key(key))  # no run was started
    assert _status(dev, run_id) == "running"  # neither cancelled nor resumed

    # The UI of the same origin: resume, start and cancel through its own buttons.
    own_form.get_by_test_id("resume-payload").fill(json.dumps({"approved": True, "by": "ada"}))
    own_form.get_by_role("button", name="Resume").click()
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("completed")
    expect(page.get_by_test_id("result")).to_contain_text('"by": "ada"')

    gate = uuid.uuid4().hex[:8]
    page.goto(f"{front}/ui/")
    form = page.get_by_test_id("start-form")
    form.get_by_test_id("start-workflow").select_option("three_gates")
    form.get_by_test_id("start-args").fill(json.dumps([gate]))
    form.get_by_role("button", name="Start").click()
    expect(page).to_have_url(re.compile(r"/ui/#/runs/wrun_\w+$"))
    expect(page.get_by_test_id("cancel")).to_be_visible()
    started = page.url.rsplit("/", 1)[1]
    page.get_by_test_id("cancel-reason").fill("changed my mind")
    page.get_by_test_id("cancel").click()
    expect(page.get_by_test_id("run-meta").get_by_test_id("status")).to_have_text("cancelled")
    release(f"{gate}:0")
    assert _status(dev, started) == "cancelled"
