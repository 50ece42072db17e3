"""The README's first workflow as written: ``shop.py`` passes the README's own ``ruff check``, and the
"From Python" block (``run_shop.py``) runs it to completion on the embedded default from another directory.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from pathlib import Path

from .readme import named_blocks, section

REPO = Path(__file__).resolve().parents[2]
FAKE_AWS_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


def _write_blocks(directory: Path) -> None:
    blocks = named_blocks(section("Your first workflow"))
    assert sorted(blocks) == ["run_shop.py", "shop.py"]
    for name, code in blocks.items():
        (directory / name).write_text(code)


def test_shop_passes_the_readmes_ruff_check(tmp_path: Path) -> None:
    # as in a user's project: this repository's rules, the user's files first-party
    _write_blocks(tmp_path)
    with (REPO / "pyproject.toml").open("rb") as f:
        lint = tomllib.load(f)["tool"]["ruff"]
    rules = ["--select", ",".join(lint["lint"]["select"]), "--ignore", ",".join(lint["lint"]["ignore"])]
    checked = subprocess.run(
        [
            sys.executable,
            "-m",
            "ruff",
            "check",
            "--isolated",
            "--no-cache",
            "--line-length",
            "110",
            *rules,
            ".",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_the_from_python_block_runs_as_written(tmp_path: Path) -> None:
    _write_blocks(tmp_path)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORLD_AWS_"))} | FAKE_AWS_ENV
    done = subprocess.run(
        [sys.executable, "run_shop.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == str(
        {"receipt": "receipt-order-1-500", "boxes": ["order-1/box-0", "order-1/box-1", "order-1/box-2"]}
    )
    assert lines[-1].split()[1] == "run_completed"
