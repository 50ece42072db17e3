"""Build the Lambda bundle: the directory ``template.yaml``'s ``CodeUri`` names (``build/lambda/``).

What goes in, flat at the top of the directory (Lambda puts it first on ``sys.path``):

* the runtime dependencies of world-aws, exactly as pinned in ``requirements-lambda.lock``
  (shipped beside this module): every package at one version with the sha256 of each wheel
  it may use, installed with ``pip install --require-hashes --no-deps``, so a changed or
  substituted wheel on the index fails the build instead of shipping. The wheels are binary
  wheels for the Lambda platform (manylinux aarch64, CPython 3.12, matching ``Runtime`` and
  ``Architectures``): pydantic-core, cbor2 and PyYAML are compiled extensions, so this
  machine's wheels would not load there. boto3 is shipped rather than taken from the Lambda
  runtime: S3 conditional writes need a recent botocore, and the version is then the one tested;
* the app's own dependencies (``requirements``): a pinned list of every package the app needs
  beyond world-aws (``pip freeze`` or ``pip-compile`` output), installed the same way with
  ``--no-deps``; one that the lock pins at another version is refused;
* the package ``world_aws`` this module belongs to (the installed one, or a checkout's), and
  the Lambda handlers as the top-level package ``functions`` (``functions.step_handler.handler``
  in the template): in a checkout ``lambda-functions`` is a link to ``functions/``; the wheel
  holds the files;
* each include (a module file or a package directory): the app.

``sam build`` must then ship the directory as it is. Its Python builder would not: it drops
every ``*.so`` when it copies a source directory (aws-lambda-builders ``python_pip``
``EXCLUDED_FILES``), which removes the compiled half of pydantic-core, cbor2 and PyYAML. So the
functions declare ``Metadata: BuildMethod: makefile`` and the bundle holds a ``Makefile`` whose
``build-<Function>`` targets copy it into SAM's artifacts directory unchanged.
Standard library only, and it does not import ``world_aws``: ``scripts/build_lambda.py`` loads
it by path in a clone where nothing is installed yet.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The package to ship: the installed world_aws this module is part of (or a checkout's).
PACKAGE = HERE.parent
HANDLERS = HERE / "lambda-functions"
LOCK_FILE = HERE / "requirements-lambda.lock"
HANDLER_PACKAGE = "functions"
# What template.yaml declares (Globals.Function Runtime python3.12, Architectures arm64).
LAMBDA_PYTHON_VERSION = "3.12"
# Lambda's python3.12 runs on Amazon Linux 2023 (glibc 2.34). pip does not widen an explicit
# manylinux tag to older ones, so the two tags wheels of our dependencies carry are both named.
LAMBDA_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
# Marks a directory a build made, so that a rebuild may delete it.
MARKER = ".world-aws-lambda-build"
# sam build (BuildMethod: makefile) runs `make build-<LogicalId>` in a copy of CodeUri with
# ARTIFACTS_DIR set; one pattern rule serves every function. The marker and the Makefile stay out.
MAKEFILE = """\
# Written by world-aws build. sam build (BuildMethod: makefile) copies the bundle as it is.
build-%:
\tcp -R $(filter-out Makefile,$(wildcard *)) "$(ARTIFACTS_DIR)"
"""
# Bytecode, and the files only a build reads (the handlers go in as `functions`, the lock is pip's).
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")
_NOT_SHIPPED_IN_PACKAGE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", "*.pyo", HANDLERS.name, LOCK_FILE.name
)


class BuildError(Exception):
    """The bundle cannot be built as asked (a missing include or requirements file, a foreign ``out``)."""


def platform_options(native: bool) -> list[str]:
    """pip's options selecting Lambda's wheels; none with ``native`` (this interpreter's)."""
    if native:
        return []
    options = ["--implementation", "cp", "--python-version", LAMBDA_PYTHON_VERSION]
    for platform in LAMBDA_PLATFORMS:
        options += ["--platform", platform]
    return options


def pip_command(out: Path, lock: Path = LOCK_FILE, *, native: bool) -> list[str]:
    """The pip invocation that installs the pinned, hashed requirements of ``lock`` into ``out``."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(out)]
    # Wheels only: an sdist would be built for this machine, not for Lambda. The lock lists
    # every package, so pip resolves nothing: --no-deps, and every file must match a hash.
    command += ["--only-binary=:all:", "--no-warn-conflicts", "--require-hashes", "--no-deps"]
    return [*command, *platform_options(native), "-r", str(lock)]


def app_pip_command(out: Path, requirements: Path, *, native: bool) -> list[str]:
    """The pip invocation that adds the app's pinned ``requirements`` to the bundle in ``out``.

    ``--no-deps``: the file pins every package the app needs (pip resolves nothing). Hashes
    are checked when the file has them.
    A path or a pure-Python sdist in the file is built here; for Lambda, the platform options
    take binary wheels for the rest.
    """
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-compile", "--target", str(out)]
    command += ["--no-warn-conflicts", "--no-deps"]
    return [*command, *platform_options(native), "-r", str(requirements)]


def pinned_versions(lock: Path = LOCK_FILE) -> dict[str, str]:
    """The ``name==version`` pins of ``lock``, by normalised name (PEP 503)."""
    pins: dict[str, str] = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        requirement = line.split("#", 1)[0].split()
        if requirement and "==" in requirement[0]:
            name, version = requirement[0].split("==", 1)
            pins[_normalised(name)] = version
    return pins


def add_app_requirements(out: Path, requirements: Path, *, native: bool) -> None:
    """Install ``requirements`` beside the pinned dependencies in ``out``, refusing to move a pin.

    They are installed into a directory of their own first; a distribution there that the lock
    pins at another version is refused (the bundle would no longer be the tested one), and the
    rest is merged into ``out``.

    Raises:
        BuildError: the requirements hold a package world-aws pins, at another version.
        subprocess.CalledProcessError: pip failed.
    """
    pins = pinned_versions()
    with tempfile.TemporaryDirectory(prefix="world-aws-app-deps-") as scratch:
        staged = Path(scratch)
        # Paths inside the file are the user's, relative to the file (as where they wrote it).
        command = app_pip_command(staged, requirements, native=native)
        subprocess.run(command, check=True, cwd=requirements.parent)
        conflicts = []
        for info in staged.glob("*.dist-info"):
            name, _, version = info.name.removesuffix(".dist-info").rpartition("-")
            pinned = pins.get(_normalised(name))
            if pinned is not None and pinned != version:
                conflicts.append(f"{name} {version} (world-aws pins {pinned})")
        if conflicts:
            raise BuildError(
                f"{requirements}: world-aws's own dependencies are pinned and tested; "
                f"use their versions or leave them out: {', '.join(sorted(conflicts))}"
            )
        for entry in staged.iterdir():
            if entry.is_dir():
                shutil.copytree(entry, out / entry.name, dirs_exist_ok=True)  # namespace packages merge
            else:
                shutil.copy2(entry, out / entry.name)


def _normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def build(
    out: Path,
    *,
    includes: Sequence[Path] = (),
    requirements: Path | None = None,
    native: bool = False,
) -> Path:
    """Build the bundle into ``out`` (replacing an earlier build there).

    Args:
        out: the directory to build; must not exist, be empty, or be an earlier build.
        includes: module files or package directories to copy in as top-level modules.
        requirements: the app's pinned dependencies (a pip requirements file), or none.
        native: install dependencies for the running interpreter instead of Lambda's.

    Returns:
        ``out``.

    Raises:
        BuildError: ``out`` is a directory no build made, an include or ``requirements`` is
            missing, or ``requirements`` moves a package world-aws pins.
        subprocess.CalledProcessError: pip failed.
    """
    for path in [*includes, *([requirements] if requirements is not None else [])]:
        if not path.exists():
            raise BuildError(f"{path}: no such file or directory")
    _prepare(out)
    subprocess.run(pip_command(out, native=native), check=True)
    if requirements is not None:
        add_app_requirements(out, requirements.resolve(), native=native)
    # Console scripts of the dependencies, with this machine's interpreter in their shebang.
    shutil.rmtree(out / "bin", ignore_errors=True)
    shutil.copytree(PACKAGE, out / PACKAGE.name, ignore=_NOT_SHIPPED_IN_PACKAGE)
    shutil.copytree(HANDLERS, out / HANDLER_PACKAGE, ignore=_SKIPPED)
    for path in includes:
        if path.is_dir():
            shutil.copytree(path, out / path.name, ignore=_SKIPPED)
        else:
            shutil.copy2(path, out / path.name)
    (out / "Makefile").write_text(MAKEFILE, encoding="utf-8")
    return out


def _prepare(out: Path) -> None:
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise BuildError(f"{out} exists and was not built by world-aws build: refusing to delete it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("world-aws build made this directory (and may delete it)\n", encoding="utf-8")
