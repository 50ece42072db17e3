"""The README's test example works after the README's own install (``[local]``), in the clone.

``[local]`` brings pytest, and the repository's ``addopts`` (``-n auto``) does not break a pytest
without pytest-xdist: the README's ``test_shop.py`` is run by a pytest subprocess in the clone
with xdist blocked (``-p no:xdist``), as a ``[local]`` install has no xdist.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import uuid
from pathlib import Path

from packaging.requirements import Requirement

from .readme import named_blocks, section

REPO = Path(__file__).resolve().parents[2]


def test_the_local_extra_installs_pytest() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    local = {Requirement(line).name for line in project["optional-dependencies"]["local"]}
    assert {"moto", "pytest"} <= local


def test_pytest_without_xdist_runs_the_readme_test_in_the_clone() -> None:
    # GIVEN the README's shop.py and test_shop.py in a directory of the clone (build/ is ignored by git)
    where = REPO / "build" / f"readme-{uuid.uuid4().hex[:8]}"
    where.mkdir(parents=True)
    try:
        (where / "shop.py").write_text(named_blocks(section("Your first workflow"))["shop.py"])
        (where / "test_shop.py").write_text(named_blocks(section("Testing your workflows"))["test_shop.py"])
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}

        # WHEN pytest runs it from the clone's root, xdist unavailable
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:xdist", "-p", "no:cacheprovider", str(where)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        shutil.rmtree(where, ignore_errors=True)

    # THEN the repository's addopts do not refuse it, and its tests pass
    assert "unrecognized arguments" not in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout, done.stdout
