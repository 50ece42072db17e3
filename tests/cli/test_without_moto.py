"""The plain wheel (no ``[local]``, so no moto): the embedded default says how to get it, in one line.

Each command runs in a fresh interpreter whose import system refuses ``moto`` (a finder first
on ``sys.meta_path`` raising ``ModuleNotFoundError``, as a missing package does), through the
console command's entry point, so the fork of the embedded stack's child is covered too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
# The entry point, with moto (and anything under it) unimportable.
WITHOUT_MOTO = """
import sys

class NoMoto:
    def find_spec(self, name, path=None, target=None):
        if name == "moto" or name.startswith("moto."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoMoto())
sys.argv = ["world-aws", *sys.argv[1:]]
from world_aws._entry import main
main()
"""


def _without_moto(*argv: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", WITHOUT_MOTO, *argv]
    return subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "argv",
    [
        ["demo"],
        ["demo", "--json"],
        ["run", "tests.cli.three_steps:app", "three"],
        ["dev", "--port", "0"],
        ["dev", "tests.cli.three_steps:app", "--world", "embedded"],
    ],
)
def test_the_embedded_default_without_moto_names_the_extra_and_exits_2(argv: list[str]) -> None:
    done = _without_moto(*argv)
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr  # one line, no traceback
    assert "pip install 'world-aws[local]'" in lines[0] and "--world memory" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr


def test_the_memory_world_runs_without_moto() -> None:
    done = _without_moto("demo", "--world", "memory", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["status"] == "completed"
