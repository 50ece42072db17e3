"""Build the code bundle of the Lambda functions: the directory ``template.yaml``'s CodeUri names.

Usage (from the repository root)::

    python scripts/build_lambda.py                        # build/lambda/ for arm64 + CPython 3.12
    python scripts/build_lambda.py --include shop.py      # ship your Workflows too (AppModule=shop:app)
    python scripts/build_lambda.py --native --out DIR     # for this machine's Python (the tests)
    python scripts/build_lambda.py --lock                 # re-pin requirements-lambda.lock

What goes in, flat at the top of the directory (Lambda puts it first on ``sys.path``):

* the runtime dependencies, exactly as pinned in ``requirements-lambda.lock``: every
  package (transitive ones included) at one version with the sha256 of each wheel file
  it may use, installed with ``pip install --require-hashes --no-deps``, so a changed or
  substituted wheel on the index fails the build instead of shipping. ``--lock`` re-pins
  it from ``pyproject.toml``'s ``[project] dependencies`` (``pip download`` for the Lambda
  platform and for this machine's interpreter, then sha256 of every file). The wheels are
  binary wheels for the Lambda platform
  (manylinux aarch64, CPython 3.12, matching ``Runtime`` and ``Architectures``): pydantic-core,
  cbor2 and PyYAML are compiled extensions, so this machine's wheels would not load there.
  boto3 is shipped too rather than taken from the Lambda runtime: the code needs a
  botocore recent enough for S3 conditional writes, and the version is then the one tested;
* the packages ``world_aws`` and ``functions`` of this checkout;
* each ``--include`` path (a module file or a package directory), default ``examples/``
  (the template's default app, the demo ``world_aws.demo:app``, ships inside ``world_aws``).

``sam build`` must then ship the directory as it is. Its Python builder would not: it drops
every ``*.so`` when it copies a source directory (aws-lambda-builders ``python_pip``
``EXCLUDED_FILES``), which removes the compiled half of pydantic-core, cbor2 and PyYAML. So the
functions declare ``Metadata: BuildMethod: makefile`` and this script writes a ``Makefile`` into
the bundle whose ``build-<Function>`` targets copy it into SAM's artifacts directory unchanged.
Standard library only: it runs before anything is installed.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "build" / "lambda"
LOCK_FILE = REPO / "requirements-lambda.lock"
PROJECT_PACKAGES = ("world_aws", "functions")
DEFAULT_INCLUDES = ("examples",)
# What template.yaml declares (Globals.Function Runtime python3.12, Architectures arm64).
LAMBDA_PYTHON_VERSION = "3.12"
# Lambda's python3.12 runs on Amazon Linux 2023 (glibc 2.34). pip does not widen an explicit
# manylinux tag to older ones, so the two tags wheels of our dependencies carry are both named.
LAMBDA_PLATFORMS = ("manylinux2014_aarch64", "manylinux_2_28_aarch64")
# Marks a directory this script built, so that a rebuild may delete it.
MARKER = ".world-aws-lambda-build"
# sam build (BuildMethod: makefile) runs `make build-<LogicalId>` in a copy of CodeUri with
# ARTIFACTS_DIR set; one pattern rule serves every function. The marker and the Makefile stay out.
MAKEFILE = """\
# Written by scripts/build_lambda.py. sam build (BuildMethod: makefile) copies the bundle as it is.
build-%:
\tcp -R $(filter-out Makefile,$(wildcard *)) "$(ARTIFACTS_DIR)"
"""
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "*.pyo")


def runtime_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The ``[project] dependencies`` of ``pyproject.toml``, as pip requirement strings."""
    with pyproject.open("rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def _platform_options(native: bool) -> list[str]:
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
    return [*command, *_platform_options(native), "-r", str(lock)]


def write_lock(lock: Path = LOCK_FILE) -> Path:
    """Pin every runtime dependency with the sha256 of each wheel the build may install.

    Downloads the dependencies of ``pyproject.toml`` twice, for Lambda and for this
    interpreter (the tests build with ``--native``), and writes one line per package:
    ``name==version --hash=sha256:...`` with the hashes of both downloads.
    """
    hashes: dict[tuple[str, str], set[str]] = {}
    for native in (False, True):
        with tempfile.TemporaryDirectory() as tmp:
            command = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", tmp]
            subprocess.run([*command, *_platform_options(native), *runtime_requirements()], check=True)
            for wheel in sorted(Path(tmp).glob("*.whl")):
                name, version = wheel.name.split("-")[:2]
                key = (re.sub(r"[-_.]+", "-", name).lower(), version)
                hashes.setdefault(key, set()).add(hashlib.sha256(wheel.read_bytes()).hexdigest())
    lines = ["# Written by scripts/build_lambda.py --lock: the Lambda bundle's dependencies, pinned, hashed."]
    for (name, version), digests in sorted(hashes.items()):
        lines.append(f"{name}=={version} " + " ".join(f"--hash=sha256:{d}" for d in sorted(digests)))
    lock.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return lock


def build(out: Path = DEFAULT_OUT, *, includes: Sequence[Path] = (), native: bool = False) -> Path:
    """Build the bundle into ``out`` (replacing an earlier build there).

    Args:
        out: the directory to build; must not exist, be empty, or be an earlier build.
        includes: module files or package directories to copy in as top-level modules.
        native: install dependencies for the running interpreter instead of Lambda's.

    Returns:
        ``out``.

    Raises:
        SystemExit: ``out`` is a directory this script did not build, or an include is missing.
        subprocess.CalledProcessError: pip failed.
    """
    _prepare(out)
    subprocess.run(pip_command(out, native=native), check=True)
    # Console scripts of the dependencies, with this machine's interpreter in their shebang.
    shutil.rmtree(out / "bin", ignore_errors=True)
    for package in PROJECT_PACKAGES:
        shutil.copytree(REPO / package, out / package, ignore=_SKIPPED)
    for path in includes:
        if not path.exists():
            raise SystemExit(f"--include {path}: no such file or directory")
        if path.is_dir():
            shutil.copytree(path, out / path.name, ignore=_SKIPPED)
        else:
            shutil.copy2(path, out / path.name)
    (out / "Makefile").write_text(MAKEFILE, encoding="utf-8")
    return out


def _prepare(out: Path) -> None:
    if out.exists():
        if any(out.iterdir()) and not (out / MARKER).exists():
            raise SystemExit(f"{out} exists and was not built by this script: refusing to delete it")
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("scripts/build_lambda.py built this (and may delete it)\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="default: build/lambda/ (CodeUri)")
    parser.add_argument(
        "--include",
        type=Path,
        action="append",
        help="a module file or package directory to ship (repeatable; default: examples/)",
    )
    parser.add_argument("--native", action="store_true", help="dependencies for this machine's Python")
    parser.add_argument("--lock", action="store_true", help=f"re-pin {LOCK_FILE.name} and exit")
    args = parser.parse_args(argv)
    if args.lock:
        print(f"wrote {write_lock()}")
        return
    includes = args.include if args.include else [REPO / name for name in DEFAULT_INCLUDES]
    out = build(args.out, includes=includes, native=args.native)
    print(f"built {out}")


if __name__ == "__main__":
    main()
