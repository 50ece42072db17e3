"""Build the code bundle of the Lambda functions from this checkout: ``world_aws/deploy/bundle.py``.

Usage (from the repository root)::

    python scripts/build_lambda.py                        # build/lambda/ for arm64 + CPython 3.12
    python scripts/build_lambda.py --include shop.py      # ship your Workflows too (AppModule=shop:app)
    python scripts/build_lambda.py --native --out DIR     # for this machine's Python (the tests)
    python scripts/build_lambda.py --lock                 # re-pin requirements-lambda.lock

The build itself is the installed package's (``world-aws build`` in a project of one's own,
README "Your own project"); this script runs it on the checkout, with ``examples/`` as the
default include (the template's default app, the demo ``world_aws.demo:app``, ships inside
``world_aws``), and re-pins the lock from ``pyproject.toml``. Standard library only: it runs
before anything is installed, so it loads the bundle module by its path.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import re
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parent.parent
DEFAULT_OUT = REPO / "build" / "lambda"
LOCK_FILE = REPO / "requirements-lambda.lock"
DEFAULT_INCLUDES = ("examples",)


def _load_bundle() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_world_aws_bundle", REPO / "world_aws/deploy/bundle.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses and annotations look their module up
    spec.loader.exec_module(module)
    return module


bundle = _load_bundle()
LAMBDA_PYTHON_VERSION: str = bundle.LAMBDA_PYTHON_VERSION
LAMBDA_PLATFORMS: tuple[str, ...] = bundle.LAMBDA_PLATFORMS
MARKER: str = bundle.MARKER


def runtime_requirements(pyproject: Path = REPO / "pyproject.toml") -> list[str]:
    """The ``[project] dependencies`` of ``pyproject.toml``, as pip requirement strings."""
    with pyproject.open("rb") as f:
        return list(tomllib.load(f)["project"]["dependencies"])


def pip_command(out: Path, lock: Path = LOCK_FILE, *, native: bool) -> list[str]:
    """The pip invocation that installs the pinned, hashed requirements of ``lock`` into ``out``."""
    return list(bundle.pip_command(out, lock, native=native))


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
            options = bundle.platform_options(native)
            subprocess.run([*command, *options, *runtime_requirements()], check=True)
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
    """Build the bundle into ``out`` (replacing an earlier build there); see ``bundle.build``.

    Raises:
        SystemExit: ``out`` is a directory no build made, or an include is missing.
        subprocess.CalledProcessError: pip failed.
    """
    try:
        return Path(bundle.build(out, includes=includes, native=native))
    except bundle.BuildError as exc:
        raise SystemExit(str(exc)) from exc


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
