"""The CLI's HTTP client: SigV4 signing for IAM-authorized APIs, and answers that are not the API's."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from world_aws.aws.sigv4 import execute_api_region, sigv4_headers
from world_aws.cli.client import signs_by_default
from world_aws.cli.main import main
from world_aws.errors import BadInput

API_GATEWAY_URL = "https://abc123def4.execute-api.eu-west-1.amazonaws.com"


@pytest.fixture
def aws_credentials(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Fake credentials in the environment, and nothing else the default chain could find."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-token")
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_PROFILE", raising=False)


class _Recorder:
    """A local HTTP server answering every request with one canned reply, recording the headers."""

    def __init__(self, status: int, body: bytes) -> None:
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                recorder.headers.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(status)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.headers: list[dict[str, str]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder() -> Iterator[Any]:
    made: list[_Recorder] = []

    def make(status: int, body: bytes) -> _Recorder:
        made.append(_Recorder(status, body))
        return made[-1]

    yield make
    for server in made:
        server.close()


def test_api_gateway_default_endpoints_are_signed_by_default() -> None:
    assert signs_by_default(API_GATEWAY_URL)
    assert signs_by_default("https://x1.execute-api.cn-north-1.amazonaws.com.cn/prod")
    assert not signs_by_default("http://127.0.0.1:8787")
    assert not signs_by_default("https://workflows.example.com")
    assert execute_api_region(API_GATEWAY_URL + "/runs") == "eu-west-1"
    assert execute_api_region("https://workflows.example.com") is None


@pytest.mark.usefixtures("aws_credentials")
def test_sigv4_headers_sign_for_execute_api_in_the_region_of_the_host() -> None:
    headers = sigv4_headers("GET", API_GATEWAY_URL + "/runs?limit=5", headers={"accept": "application/json"})
    authorization = headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "SignedHeaders=accept;host;x-amz-date;x-amz-security-token" in authorization
    assert headers["X-Amz-Security-Token"] == "session-token"
    assert headers["accept"] == "application/json"


def test_signing_without_credentials_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", raising=False)
    monkeypatch.delenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", raising=False)
    with pytest.raises(BadInput, match="no AWS credentials found to sign the request"):
        sigv4_headers("GET", API_GATEWAY_URL + "/runs")


@pytest.mark.usefixtures("aws_credentials")
def test_sign_makes_the_cli_send_a_signature(recorder: Any) -> None:
    server = recorder(200, json.dumps({"runs": [], "cursor": None}).encode())
    out, err = io.StringIO(), io.StringIO()
    assert main(["ls", "--api", server.url, "--sign"], out=out, err=err) == 0, err.getvalue()
    sent = server.headers[-1]
    assert sent["authorization"].startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/us-east-1/execute-api/aws4_request" in sent["authorization"]
    # without --sign, a loopback API gets no signature
    assert main(["ls", "--api", server.url], out=out, err=err) == 0
    assert "authorization" not in server.headers[-1]


def test_a_403_from_api_gateway_suggests_signing(recorder: Any) -> None:
    server = recorder(403, b'{"message":"Forbidden"}')
    out, err = io.StringIO(), io.StringIO()
    assert main(["inspect", "wrun_1", "--api", server.url], out=out, err=err) == 2
    assert err.getvalue() == (
        f"world-aws: {server.url} answered 403 Forbidden: Forbidden "
        "(an IAM-authorized API needs signed requests: pass --sign)\n"
    )


def test_an_answer_that_is_not_json_is_a_one_line_error(recorder: Any) -> None:
    server = recorder(200, b"<html>hello</html>")
    out, err = io.StringIO(), io.StringIO()
    assert main(["ls", "--api", server.url], out=out, err=err) == 2
    assert err.getvalue() == f"world-aws: {server.url} answered 200 with a body that is not JSON\n"
