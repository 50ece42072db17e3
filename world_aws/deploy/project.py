"""A project of one's own: ``world-aws init NAME`` writes it, ``world-aws build`` reads its settings.

A new project holds an app module, its test (the test kit), a README, a CI workflow, the
app's requirements file, ``pyproject.toml`` with ``[tool.world-aws]`` (what the build ships),
the stack's ``template.yaml`` (the one this package ships) and ``samconfig.toml`` with the
template's parameters. The files are ``string.Template`` texts in ``project-files/``. Its
tests pass as written: the app and its test are one example of a workflow with a step
and a sleep.
"""

from __future__ import annotations

import re
import shutil
import string
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
FILES = HERE / "project-files"
TEMPLATE = HERE.parent / "aws" / "infra" / "template.yaml"
SETTINGS_FILE = "pyproject.toml"
# A project name: a directory, a Python module (dashes become underscores) and a stack name
# (CloudFormation: letters, digits and dashes, starting with a letter).
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")
# Top-level modules the bundle or the tests import: an app module of that name would hide them.
_TAKEN = frozenset({"world_aws", "functions", "boto3", "botocore", "pydantic", "pytest", "moto", "conftest"})


class ProjectError(Exception):
    """A project cannot be made or read as asked (a bad name, an existing directory, bad settings)."""


@dataclass(frozen=True)
class ProjectSettings:
    """``[tool.world-aws]`` of a project's ``pyproject.toml``, paths resolved against the project."""

    root: Path
    app: str
    includes: tuple[Path, ...]
    requirements: Path | None


def init(name: str, parent: Path) -> Path:
    """Write a new project ``name`` into ``parent / name``; returns its directory.

    Raises:
        ProjectError: ``name`` is not a valid project name, its module would hide a standard or
            bundled one, or ``parent / name`` exists.
    """
    if not _NAME.match(name):
        raise ProjectError(
            f"project name {name!r}: letters, digits, '-' and '_', starting with a letter (at most 64)"
        )
    module = name.replace("-", "_").lower()
    if module in sys.stdlib_module_names or module in _TAKEN:
        raise ProjectError(f"project name {name!r}: its module {module}.py would hide the package {module!r}")
    root = parent / name
    if root.exists():
        raise ProjectError(f"{root} exists already: choose another name or directory")
    values = {"name": name, "module": module, "stack": name.replace("_", "-")}
    files = {
        f"{module}.py": "app.py.tmpl",
        f"test_{module}.py": "test_app.py.tmpl",
        "README.md": "README.md.tmpl",
        "pyproject.toml": "pyproject.toml.tmpl",
        "requirements.txt": "requirements.txt.tmpl",
        "samconfig.toml": "samconfig.toml.tmpl",
        ".github/workflows/tests.yml": "ci.yml.tmpl",
    }
    for target, source in files.items():
        text = string.Template((FILES / source).read_text(encoding="utf-8")).substitute(values)
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    shutil.copyfile(TEMPLATE, root / "template.yaml")
    (root / ".gitignore").write_text("build/\n.aws-sam/\n.world-aws/\n__pycache__/\n", encoding="utf-8")
    return root


def read_settings(root: Path) -> ProjectSettings:
    """The ``[tool.world-aws]`` settings of the project in ``root``.

    Raises:
        ProjectError: no ``pyproject.toml`` with a ``[tool.world-aws]`` table, or a field of the wrong type.
    """
    path = root / SETTINGS_FILE
    try:
        with path.open("rb") as f:
            table = tomllib.load(f).get("tool", {}).get("world-aws")
    except FileNotFoundError:
        table = None
    except tomllib.TOMLDecodeError as exc:
        raise ProjectError(f"{path}: {exc}") from exc
    if not isinstance(table, dict):
        raise ProjectError(f"{path}: no [tool.world-aws] table (a project made by `world-aws init` has one)")
    app, include, requirements = table.get("app"), table.get("include", []), table.get("requirements")
    if not isinstance(app, str) or ":" not in app:
        raise ProjectError(f"{path}: [tool.world-aws] app must be MODULE:ATTR, not {app!r}")
    if not isinstance(include, list) or not all(isinstance(item, str) for item in include):
        raise ProjectError(f"{path}: [tool.world-aws] include must be a list of paths, not {include!r}")
    if requirements is not None and not isinstance(requirements, str):
        raise ProjectError(f"{path}: [tool.world-aws] requirements must be a path, not {requirements!r}")
    return ProjectSettings(
        root=root,
        app=app,
        includes=tuple(root / item for item in include),
        requirements=root / requirements if requirements else None,
    )


def is_project(root: Path) -> bool:
    """Whether ``root`` is a world-aws project (its ``pyproject.toml`` has ``[tool.world-aws]``)."""
    try:
        read_settings(root)
    except ProjectError:
        return False
    return True


def project_app(root: Path) -> str | None:
    """The app (``MODULE:ATTR``) of the project in ``root``, or None if ``root`` is no project."""
    try:
        return read_settings(root).app
    except ProjectError:
        return None


def has_requirements(path: Path) -> bool:
    """Whether the requirements file at ``path`` names anything (not only comments and blank lines)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return any(lines)
