"""``world-aws deploy``: the two sam commands on a project's bundle (``sam build``, then ``sam deploy``).

``sam build`` copies ``build/lambda/`` (made by ``world-aws build``) into ``.aws-sam/`` for each
function through the bundle's Makefile; ``sam deploy`` then deploys with the project's
``samconfig.toml`` (stack name, capabilities, the template's parameters) and any extra
arguments given (``--guided`` the first time).
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from world_aws.deploy.bundle import MARKER


class DeployError(Exception):
    """The project cannot be deployed as it is (no bundle, no template, no sam on PATH)."""


def sam_commands(root: Path, extra: Sequence[str] = ()) -> list[list[str]]:
    """The sam commands ``deploy`` runs in ``root``, in order.

    Raises:
        DeployError: no bundle (``world-aws build`` first), no template.yaml, or no ``sam`` on PATH.
    """
    if not (root / "template.yaml").is_file():
        raise DeployError(f"{root}: no template.yaml (a project made by `world-aws init` has one)")
    if not (root / "build" / "lambda" / MARKER).is_file():
        raise DeployError(f"{root / 'build' / 'lambda'}: no bundle; run `world-aws build` first")
    sam = shutil.which("sam")
    if sam is None:
        raise DeployError("no `sam` on PATH: install the AWS SAM CLI (in its own virtualenv)")
    return [
        [sam, "build", "--template-file", "template.yaml"],
        [sam, "deploy", *extra],
    ]


def deploy(root: Path, extra: Sequence[str] = ()) -> int:
    """Run ``sam build`` then ``sam deploy`` in ``root``; the exit code of the first that fails, or 0."""
    for command in sam_commands(root, extra):
        code = subprocess.run(command, cwd=root, check=False).returncode
        if code != 0:
            return code
    return 0
