"""Pin the development and local installs, and check the suite against the newest releases.

The README's two install commands and ``.ci/run`` install from two hashed locks, so a new
release of a dependency (moto 5.2.6 broke two tests on the day it came out) cannot change what
a fresh clone installs:

* ``requirements/dev.lock``: ``world-aws[dev]`` (the test suite and the checks);
* ``requirements/local.lock``: ``world-aws[local]`` plus the build backend (the embedded demo),
  pinned to the same versions as ``dev.lock``.

Usage::

    python scripts/lock.py            # re-pin both locks from pyproject.toml (needs the index)
    python scripts/lock.py --latest   # the suite on the newest releases, unpinned (a scratch venv)

``--latest`` installs ``world-aws[dev]`` with every dependency at its newest release into a
scratch virtual environment, prints each package whose version differs from ``dev.lock``, runs
``pytest`` there (extra arguments go to pytest) and exits with pytest's code. A red run names the
packages that moved, so a break like moto 5.2.6's shows up here first, not on a user's machine.

Locks are written by uv (``uv pip compile --universal --generate-hashes``), which records every
file's sha256 for each pinned version, for every platform; the script installs uv into a scratch
environment when it is not on the PATH.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEV_LOCK = REPO / "requirements" / "dev.lock"
LOCAL_LOCK = REPO / "requirements" / "local.lock"
# The oldest Python the project supports: the locks resolve for it and every newer one.
PYTHON_VERSION = "3.11"
# What an editable install with --no-build-isolation needs beside [local] (pyproject's build-system).
BUILD_REQUIREMENTS = ("setuptools>=68", "wheel")

_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;\\]+)")


def pins(lock_text: str) -> dict[str, str]:
    """The ``name -> version`` pins of a lock's text (names normalised as PEP 503 does).

    A package pinned twice under different markers keeps its first version.
    """
    found: dict[str, str] = {}
    for line in lock_text.splitlines():
        match = _PIN.match(line)
        if match:
            found.setdefault(normalise(match.group(1)), match.group(2))
    return found


def normalise(name: str) -> str:
    """A distribution name as PEP 503 compares it."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _uv() -> list[str]:
    """A command that runs uv: the one on the PATH, or one installed into a scratch venv."""
    found = shutil.which("uv")
    if found:
        return [found]
    venv = Path(tempfile.gettempdir()) / "world-aws-lock-uv"
    uv = venv / "bin" / "uv"
    if not uv.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "--quiet", "uv"], check=True)
    return [str(uv)]


def _compile(out: Path, *, extra: str, also: tuple[str, ...] = (), constraint: Path | None = None) -> None:
    command = [*_uv(), "pip", "compile", "pyproject.toml", "--extra", extra, "--universal"]
    command += ["--generate-hashes", "--python-version", PYTHON_VERSION, "--quiet", "--no-header"]
    command += ["-o", str(out)]
    extra_inputs = None
    if also:
        extra_inputs = Path(tempfile.mkdtemp()) / "build.in"
        extra_inputs.write_text("\n".join(also) + "\n", encoding="utf-8")
        command.append(str(extra_inputs))
    if constraint is not None:
        command += ["--constraint", str(constraint)]
    subprocess.run(command, check=True, cwd=REPO)
    how = "python scripts/lock.py"
    body = out.read_text(encoding="utf-8")
    out.write_text(f"# Written by `{how}` from pyproject.toml ([{extra}]): pinned and hashed.\n{body}")


def write_locks() -> None:
    """Re-pin ``dev.lock``, then ``local.lock`` at the same versions."""
    DEV_LOCK.parent.mkdir(exist_ok=True)
    _compile(DEV_LOCK, extra="dev")
    _compile(LOCAL_LOCK, extra="local", also=BUILD_REQUIREMENTS, constraint=DEV_LOCK)
    print(f"wrote {DEV_LOCK.relative_to(REPO)} and {LOCAL_LOCK.relative_to(REPO)}")


def moved(locked: dict[str, str], installed: dict[str, str]) -> list[str]:
    """One line per installed package whose version is not the locked one.

    Locked packages that are not installed are left out: the lock is universal, so it also pins
    what only another platform installs (``pywin32``, ``colorama``).
    """
    lines = []
    for name in sorted(installed):
        before, after = locked.get(name), installed[name]
        if before != after and name not in ("world-aws", "pip"):
            lines.append(f"{name} {before or '(not locked)'} -> {after}")
    return lines


def check_latest(pytest_args: list[str]) -> int:
    """Run the suite on the newest release of every dependency; see the module docstring."""
    with tempfile.TemporaryDirectory(prefix="world-aws-latest-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python = str(venv / "bin" / "python")
        install = [python, "-m", "pip", "install", "--quiet", "--upgrade", "--upgrade-strategy", "eager"]
        subprocess.run([*install, "-e", ".[dev]"], check=True, cwd=REPO)
        freeze = subprocess.run(
            [python, "-m", "pip", "freeze", "--all", "--exclude-editable"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        changes = moved(pins(DEV_LOCK.read_text(encoding="utf-8")), pins(freeze))
        print("newest releases that differ from requirements/dev.lock:")
        print("\n".join(f"  {line}" for line in changes) or "  (none)")
        env = {**os.environ, "VIRTUAL_ENV": str(venv), "PATH": f"{venv / 'bin'}:{os.environ['PATH']}"}
        code = subprocess.run([python, "-m", "pytest", *pytest_args], cwd=REPO, env=env).returncode
        if code != 0:
            failed = f"newest-versions check FAILED (pytest exit {code}); the packages that moved:"
            print(failed, file=sys.stderr)
            print("\n".join(f"  {line}" for line in changes) or "  (none)", file=sys.stderr)
        return code


def main(argv: list[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--latest", action="store_true", help="run the suite on the newest releases instead")
    args, pytest_args = parser.parse_known_args(argv)
    if args.latest:
        return check_latest(pytest_args)
    if pytest_args:
        parser.error(f"unrecognised arguments: {' '.join(pytest_args)}")
    write_locks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
