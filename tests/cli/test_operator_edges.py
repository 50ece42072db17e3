"""Operator commands at their edges: an API URL that cannot be read, a host name too long, a missing profile.

Each is one line on stderr and exit 2, before any request is sent.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from world_aws.cli.main import main


@pytest.mark.parametrize(
    ("api", "says"),
    [
        ("http://[::1", "the API URL 'http://[::1' cannot be read: Invalid IPv6 URL"),
        ("http://127.0.0.1:99999", "cannot be read: Port out of range 0-65535"),
        (
            "http://" + "a" * 300 + ".com",
            "the API URL's host is not a valid name (labels of 1-63 characters)",
        ),
    ],
    ids=["unclosed IPv6", "port out of range", "300-character host"],
)
def test_an_api_url_that_cannot_be_used_is_one_line_and_exit_2(
    api: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ls", "--api", api]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err


def test_sign_with_a_profile_that_does_not_exist_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_PROFILE", "no-such-profile")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    assert main(["ls", "--api", "https://abc123.execute-api.us-east-1.amazonaws.com", "--sign"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("world-aws: error: cannot sign the request: The config profile (no-such-profile)")
