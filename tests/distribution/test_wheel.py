"""The wheel works on its own: built, installed in a fresh venv, run from a directory outside the repository.

The fresh venv has no pip and no copy of the repository; its dependencies come from
this test's environment through a ``.pth`` line (a path on ``sys.path``, so this
environment's editable world-aws finder is not activated there), and the wheel is
installed into it with ``pip --python``, offline (``--no-index --no-deps``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import sysconfig
import urllib.request
import venv
import zipfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

import pytest

from tests.cli.test_dev_command import FAKE_AWS_ENV, dev_process

REPO = Path(__file__).resolve().parents[2]
SHOP = """\
from world_aws import Workflows

app = Workflows()


@app.step
def greet(name: str) -> str:
    return f"hello {name}"


@app.workflow
async def hello(name: str) -> str:
    return await greet(name)
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out)]
    if _can_build_here():
        command += ["--no-build-isolation", "--no-index"]  # this environment's setuptools: offline, ~3 s
    subprocess.run([*command, str(REPO)], check=True, cwd=out, capture_output=True)
    (built,) = out.glob("world_aws-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv with the wheel installed; yields its ``bin`` directory."""
    root = tmp_path_factory.mktemp("venv")
    venv.create(root, with_pip=False)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    (purelib / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    python = root / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    subprocess.run(
        [*pip, "--no-index", "--no-deps", str(wheel)],
        check=True,
        capture_output=True,
        env=_env(),  # no PYTHONPATH: a checkout on it would look installed already
    )
    yield root / "bin"


@pytest.fixture(scope="module")
def plain(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel but no moto (``pip install world-aws``, no ``[local]``); its ``bin``.

    This environment's packages are on its path as in ``installed``, so moto is hidden the way
    a missing package fails: a finder first on ``sys.meta_path`` (from a ``.pth`` line) refuses it.
    """
    root = tmp_path_factory.mktemp("plain")
    venv.create(root, with_pip=False)
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(root), "platbase": str(root)}))
    (purelib / "deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    (purelib / "no_moto.py").write_text(NO_MOTO)
    (purelib / "zz_no_moto.pth").write_text("import no_moto\n")
    pip = [sys.executable, "-m", "pip", "--python", str(root / "bin" / "python"), "install", "--quiet"]
    subprocess.run([*pip, "--no-index", "--no-deps", str(wheel)], check=True, capture_output=True, env=_env())
    return root / "bin"


NO_MOTO = """\
import sys


class _NoMoto:
    def find_spec(self, name, path=None, target=None):
        if name == "moto" or name.startswith("moto."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


sys.meta_path.insert(0, _NoMoto())
"""


def _can_build_here() -> bool:
    """Whether this environment has the build backend pyproject.toml asks for (setuptools>=68, wheel)."""
    try:
        setuptools, _ = metadata.version("setuptools"), metadata.version("wheel")
    except metadata.PackageNotFoundError:
        return False
    return int(setuptools.split(".")[0]) >= 68


def _in(directory: Path, *command: str) -> subprocess.CompletedProcess[str]:
    """``command`` run in ``directory`` with fake AWS credentials; its output as text."""
    return subprocess.run(command, cwd=directory, env=_env(), capture_output=True, text=True, timeout=180)


def _env() -> dict[str, str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "WORLD_AWS_", "PYTHON"))}
    return keep | FAKE_AWS_ENV


def test_the_wheel_installs_only_world_aws_with_the_template(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert {n.split("/")[0] for n in names} == {"world_aws", f"{wheel.name.split('-py3')[0]}.dist-info"}
    assert "world_aws/aws/infra/template.yaml" in names
    assert b"AWS::DynamoDB::Table" in zipfile.ZipFile(wheel).read("world_aws/aws/infra/template.yaml")


def test_the_wheel_ships_the_test_kit_and_conformance_suite_but_not_the_internal_harness(
    wheel: Path,
) -> None:
    # GIVEN the built wheel's files
    names = set(zipfile.ZipFile(wheel).namelist())
    testing = {n.removeprefix("world_aws/testing/") for n in names if n.startswith("world_aws/testing/")}
    # THEN the users' kit and the conformance suite ship ...
    assert {"kit.py", "kit_runs.py", "plugin.py", "factories.py", "conformance/__init__.py"} <= testing
    # ... and the project's own harness (spies, fault plans, faulty Worlds, pumps) does not
    internal = {"spy.py", "harness.py", "sqs_pump.py", "faulty_world.py", "fault_plan.py", "fake_time.py"}
    assert not internal & testing
    assert not any(n.startswith("harness/") for n in names)


def test_the_wheel_ships_the_web_ui(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    static = REPO / "world_aws" / "api" / "static"
    shipped = {f"world_aws/api/static/{path.name}" for path in static.iterdir()}
    assert shipped >= {"world_aws/api/static/index.html", "world_aws/api/static/app.js"}
    assert shipped <= names


def test_the_installed_wheel_runs_the_demo_from_another_directory(installed: Path, tmp_path: Path) -> None:
    done = _in(tmp_path, str(installed / "world-aws"), "demo", "--json")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["status"] == "completed"
    # the world_aws it ran is the installed one, not this checkout
    where = _in(tmp_path, str(installed / "python"), "-c", "import world_aws; print(world_aws.__file__)")
    assert not where.stdout.startswith(str(REPO)) and str(installed.parent) in where.stdout


def test_the_installed_wheel_runs_a_user_module_and_serves_dev(installed: Path, tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(SHOP)
    done = _in(tmp_path, str(installed / "world-aws"), "run", "shop:app", "hello", "--arg", '"ada"', "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "hello ada"
    python = str(installed / "python")
    with dev_process("shop:app", "--port", "0", python=python, cwd=tmp_path) as (proc, lines):
        (ui,) = [line.split()[-1] for line in lines if line.strip().startswith("web UI")]
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: no proxy
        with opener.open(ui + "app.js", timeout=10) as answer:  # the installed package's file
            assert b"/timeline" in answer.read()
        proc.send_signal(signal.SIGINT)
    assert proc.returncode == 0, lines
    assert any(line.startswith("export WORLD_AWS_API=http://127.0.0.1:") for line in lines), lines


@pytest.mark.parametrize("argv", [["demo"], ["run", "shop:app", "hello", "--arg", '"ada"'], ["dev"]])
def test_the_plain_wheel_names_the_local_extra_in_one_line(
    plain: Path, tmp_path: Path, argv: list[str]
) -> None:
    (tmp_path / "shop.py").write_text(SHOP)
    assert _in(tmp_path, str(plain / "python"), "-c", "import moto").returncode != 0  # moto is hidden
    done = _in(tmp_path, str(plain / "world-aws"), *argv)
    assert done.returncode == 2, done.stderr
    assert done.stdout == "" or "Traceback" not in done.stdout
    (line,) = done.stderr.splitlines()
    assert "pip install 'world-aws[local]'" in line and "--world memory" in line


def test_the_plain_wheel_runs_on_the_memory_world(plain: Path, tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(SHOP)
    done = _in(
        tmp_path,
        str(plain / "world-aws"),
        "run",
        "shop:app",
        "hello",
        "--arg",
        '"ada"',
        "--world",
        "memory",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["result"] == "hello ada"
