"""The hashed locks the README's installs use: complete, consistent, and within moto's tested range."""

from __future__ import annotations

import logging
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from scripts import lock
from world_aws.local import moto_range

REPO = Path(__file__).resolve().parents[2]


def _pyproject() -> dict[str, object]:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]  # type: ignore[no-any-return]


def _requirements(*extras: str) -> list[Requirement]:
    project = _pyproject()
    found = [Requirement(r) for r in project["dependencies"]]  # type: ignore[attr-defined]
    for extra in extras:
        found += [Requirement(r) for r in project["optional-dependencies"][extra]]  # type: ignore[index]
    return found


@pytest.mark.parametrize(("path", "extras"), [(lock.DEV_LOCK, ("dev",)), (lock.LOCAL_LOCK, ("local",))])
def test_every_requirement_is_pinned_at_a_version_it_allows(path: Path, extras: tuple[str, ...]) -> None:
    pinned = lock.pins(path.read_text(encoding="utf-8"))
    for requirement in _requirements(*extras):
        name = lock.normalise(requirement.name)
        assert name in pinned, f"{path.name} does not pin {name}"
        assert Version(pinned[name]) in requirement.specifier, f"{path.name}: {name}=={pinned[name]}"


@pytest.mark.parametrize("path", [lock.DEV_LOCK, lock.LOCAL_LOCK])
def test_every_pin_carries_a_hash(path: Path) -> None:
    # pip's hash-checking mode needs every requirement hashed: one unhashed line fails the install.
    entries = path.read_text(encoding="utf-8").split("\n")
    blocks: list[str] = []
    for line in entries:
        if lock._PIN.match(line):
            blocks.append(line)
        elif blocks and line.startswith(" "):
            blocks[-1] += line
    assert blocks
    assert all("--hash=sha256:" in block for block in blocks), [b for b in blocks if "--hash" not in b]


def test_the_local_lock_pins_what_the_dev_lock_pins() -> None:
    dev = lock.pins(lock.DEV_LOCK.read_text(encoding="utf-8"))
    local = lock.pins(lock.LOCAL_LOCK.read_text(encoding="utf-8"))
    assert {name: version for name, version in local.items() if dev.get(name) != version} == {}
    # The editable install builds without isolation: the build backend is in both locks.
    assert {"setuptools", "wheel"} <= set(local) & set(dev)


@pytest.mark.parametrize("path", [lock.DEV_LOCK, lock.LOCAL_LOCK])
def test_the_locked_moto_is_inside_the_tested_range(path: Path) -> None:
    version = lock.pins(path.read_text(encoding="utf-8"))["moto"]
    assert moto_range.outside_tested_range(version) is None


def test_the_readme_commands_and_ci_install_from_the_locks() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    fence = readme.index("```bash")
    first, second = readme[fence + 1], readme[fence + 2]
    assert "-r requirements/local.lock" in first and first.endswith("world-aws demo")
    assert "-r requirements/dev.lock" in second and second.endswith("python -m pytest")
    assert all("--no-deps" in command for command in (first, second))
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert second in ci


def test_a_moto_outside_the_range_gets_one_line_naming_the_range() -> None:
    low, high = moto_range.TESTED_MOTO
    line = moto_range.outside_tested_range("5.3.0")
    assert line is not None and "\n" not in line
    assert f"{low} to {high}" in line and "moto 5.3.0" in line
    assert moto_range.outside_tested_range("5.1.9") is not None
    assert moto_range.outside_tested_range(high) is None
    assert moto_range.outside_tested_range(f"{high}.post1") is None


def test_the_warning_is_logged_for_an_untested_moto(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(moto_range.metadata, "version", lambda name: "9.0.0")
    caplog.set_level(logging.WARNING, logger=moto_range.__name__)
    line = moto_range.warn_if_untested.__wrapped__()
    assert line is not None
    assert [r.getMessage() for r in caplog.records] == [line]


def test_the_newest_versions_check_names_the_packages_that_moved() -> None:
    locked = lock.pins(
        "moto==5.2.6 \\\n    --hash=sha256:aa\nboto3==1.44.18 \\\n    --hash=sha256:bb\npywin32==312\n"
    )
    newest = lock.pins("moto==5.2.7\nboto3==1.44.18\nnewthing==1.0\n-e /work/main\n")
    assert lock.moved(locked, newest) == ["moto 5.2.6 -> 5.2.7", "newthing (not locked) -> 1.0"]
