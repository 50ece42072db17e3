"""Issue 14: by default the functions' logs carry ids, types and tracebacks, not user values."""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator

import pytest

from functions._container import LambdaProcess


def log_a_failure(process: LambdaProcess) -> None:
    """Log, through the runtime's stdlib logger, what a malformed message and a failed step look like."""
    runtime_log = logging.getLogger("world_aws.test")
    try:
        raise ValueError("card number '4111-1111' was declined")
    except ValueError:
        runtime_log.exception(
            "step %s of run 'wrun_01ABC' raised on token %r",
            "charge",
            "approve:secret-order",
            extra={"reason": "message attribute wf_due_at must be an integer, got 'x=1'"},
        )
    del process  # created for its effect on the "world_aws" loggers


def records(out: str) -> list[dict[str, object]]:
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


@pytest.fixture
def service() -> Iterator[str]:
    # LambdaProcess.create points every existing "world_aws" logger at its handler: restore them after.
    loggers = [
        logger
        for name, logger in logging.Logger.manager.loggerDict.items()
        if isinstance(logger, logging.Logger) and name.split(".")[0] == "world_aws"
    ]
    saved = [(logger, list(logger.handlers), logger.propagate, logger.level) for logger in loggers]
    yield f"svc-{uuid.uuid4().hex[:8]}"
    for logger, handlers, propagate, level in saved:
        logger.handlers, logger.propagate, logger.level = handlers, propagate, level


def test_by_default_quoted_values_and_exception_messages_are_withheld(
    capsys: pytest.CaptureFixture[str], service: str
) -> None:
    process = LambdaProcess.create({"POWERTOOLS_SERVICE_NAME": service})
    log_a_failure(process)
    [record] = [r for r in records(capsys.readouterr().out) if r.get("service") == service or "reason" in r]
    text = json.dumps(record)
    # THEN no user value is in the record, but the ids, the type and the frames are
    for secret in ("4111-1111", "approve:secret-order", "x=1", "declined"):
        assert secret not in text, secret
    assert "'wrun_01ABC'" in str(record["message"]) and "charge" in str(record["message"])
    assert record["exception_name"] == "ValueError"
    assert "log_a_failure" in str(record["exception"]) and "<message withheld" in str(record["exception"])


def test_the_setting_keeps_user_values(capsys: pytest.CaptureFixture[str], service: str) -> None:
    process = LambdaProcess.create({"POWERTOOLS_SERVICE_NAME": service, "WORKFLOW_LOG_USER_VALUES": "1"})
    log_a_failure(process)
    text = capsys.readouterr().out
    assert "approve:secret-order" in text and "4111-1111" in text and "x=1" in text
