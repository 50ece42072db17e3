"""``@app.step`` keeps the step's result type for ``await step(...)`` (checked with mypy --strict)."""

from __future__ import annotations

from pathlib import Path

import pytest

mypy_api = pytest.importorskip("mypy.api")

ROOT = Path(__file__).resolve().parents[2]

SNIPPET = """
from world_aws import Workflows

app = Workflows()

@app.step
async def render(x: int) -> str:
    return str(x)

@app.step(max_retries=2)
def halve(x: int) -> float:
    return x / 2

@app.step(name="wrap")
async def wrap(x: int) -> list[int]:
    return [x]

@app.workflow
async def flow(n: int) -> int:
    reveal_type(await render(n))
    reveal_type(await halve(n))
    reveal_type(await wrap(n))
    return n
"""


def test_awaiting_a_step_has_the_steps_result_type(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # GIVEN a user module with an async step, a sync step with options and a named async step
    module = tmp_path / "user_flows.py"
    module.write_text(SNIPPET)
    monkeypatch.setenv("MYPYPATH", str(ROOT))
    # WHEN mypy --strict checks it
    stdout, stderr, status = mypy_api.run(
        ["--strict", "--no-incremental", "--config-file", str(ROOT / "pyproject.toml"), str(module)]
    )
    # THEN it is clean, and each awaited step has its function's result type
    revealed = [line.split("Revealed type is ")[1] for line in stdout.splitlines() if "Revealed type" in line]
    assert revealed == ['"str"', '"float"', '"list[int]"'], stdout + stderr
    assert status == 0 and "Success: no issues found" in stdout, stdout
