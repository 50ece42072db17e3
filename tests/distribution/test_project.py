"""A project of one's own from the plain wheel: ``world-aws init``, its tests, ``build`` and ``deploy``.

The wheel is installed into a fresh venv as in ``test_wheel`` (its fixtures), with no
checkout on the path. ``init`` makes a project whose tests pass at once; ``build`` makes
its Lambda bundle (``--native``: for this interpreter) with the app and an own dependency,
a local package built into a wheel here, so nothing comes from an index for it; a fresh
interpreter that sees only the bundle builds the functions' container (which loads the app,
which imports the dependency). ``deploy`` runs a fake ``sam`` that records its arguments.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.distribution.test_wheel import REPO, _env, _in, installed, plain, wheel  # noqa: F401 (fixtures)

DEPENDENCY = """\
def exclaim(text: str) -> str:
    return text + "!"
"""
DEPENDENCY_PYPROJECT = """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "{name}"
version = "{version}"
"""
# Runs in an interpreter started with -I -S: the bundle is all it has beyond the standard library.
DRIVER = """
import json, sys

bundle = sys.argv[1]
sys.path.insert(0, bundle)
from functions._container import PROCESS

container = PROCESS.built()  # WORKFLOW_APP=demoapp:app: the app and what it imports
import demoapp, exclaimer, world_aws

print(json.dumps({
    "workflows": container.runtime.app.workflow_names,
    "dependency": exclaimer.__file__,
    "world_aws": world_aws.__file__,
    "shout": demoapp.shout("ada"),  # outside a workflow, the step runs as its function
}))
"""
FAKE_SAM = """\
#!{python}
import json, os, sys
with open(os.environ["FAKE_SAM_LOG"], "a") as f:
    f.write(json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd()}}) + "\\n")
"""


def test_the_wheel_ships_the_handlers_the_lock_and_the_project_files(wheel: Path) -> None:  # noqa: F811
    names = set(zipfile.ZipFile(wheel).namelist())
    handlers = REPO / "functions"
    assert {f"world_aws/deploy/lambda-functions/{path.name}" for path in handlers.glob("*.py")} <= names
    assert "world_aws/deploy/requirements-lambda.lock" in names
    assert "world_aws/deploy/project-files/app.py.tmpl" in names
    # the handlers are data: no second top-level package, no importable world_aws.deploy.lambda_functions
    assert not any(name.startswith("functions/") for name in names)


def _local_wheel(tmp_path: Path, wheels: Path, name: str, version: str, code: str) -> str:
    """A wheel of a one-module package ``name``, built here offline; its file name."""
    source = tmp_path / f"{name}-{version}-src"
    (source / name).mkdir(parents=True)
    (source / name / "__init__.py").write_text(code)
    (source / "pyproject.toml").write_text(DEPENDENCY_PYPROJECT.format(name=name, version=version))
    offline = ["--no-deps", "--no-build-isolation", "--no-index"]
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "-q", *offline]
    subprocess.run([*pip_wheel, "-w", str(wheels), str(source)], check=True, capture_output=True)
    (built,) = wheels.glob(f"{name}-{version}-*.whl")
    return built.name


def _init(installed: Path, where: Path) -> Path:  # noqa: F811
    made = _in(where, str(installed / "world-aws"), "init", "demoapp")
    assert made.returncode == 0, made.stderr
    return where / "demoapp"


@pytest.mark.parametrize("venv", ["installed", "plain"])
def test_init_makes_a_project_whose_tests_pass(
    venv: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    # WHEN a project is made from the installed wheel (with the [local] extra's moto, and without)
    bin_dir = request.getfixturevalue(venv)
    root = _init(bin_dir, tmp_path)
    # THEN it holds the app, its test, the README, CI, the template and its parameters
    names = {str(path.relative_to(root)) for path in root.rglob("*") if path.is_file()}
    assert {
        "demoapp.py",
        "test_demoapp.py",
        "README.md",
        "pyproject.toml",
        "requirements.txt",
        "samconfig.toml",
        "template.yaml",
        ".github/workflows/tests.yml",
    } <= names
    assert 'parameter_overrides = "AppModule=demoapp:app"' in (root / "samconfig.toml").read_text()
    # AND its tests pass at once (the kit's fixture comes from the installed package)
    tested = _in(root, str(bin_dir / "python"), "-m", "pytest", "-p", "no:cacheprovider")
    assert tested.returncode == 0, tested.stdout + tested.stderr
    assert "1 passed" in tested.stdout
    # AND a second init of the same name refuses in one line, exit 2
    again = _in(tmp_path, str(bin_dir / "world-aws"), "init", "demoapp")
    assert again.returncode == 2 and "exists already" in again.stderr


@pytest.mark.parametrize(
    ("name", "why"),
    [("9lives", "starting with a letter"), ("json", "would hide"), ("world-aws", "would hide")],
)
def test_init_refuses_a_name_that_is_no_module_of_its_own(
    installed: Path,  # noqa: F811
    tmp_path: Path,
    name: str,
    why: str,
) -> None:
    refused = _in(tmp_path, str(installed / "world-aws"), "init", name)
    assert refused.returncode == 2
    (line,) = refused.stderr.splitlines()
    assert name in line and why in line
    assert not (tmp_path / name).exists()


@pytest.mark.slow
def test_build_bundles_the_app_with_its_own_dependency(installed: Path, tmp_path: Path) -> None:  # noqa: F811
    # GIVEN a project whose app imports a dependency of its own, pinned in requirements.txt
    root = _init(installed, tmp_path)
    wheels = root / "wheels"
    exclaimer = _local_wheel(tmp_path, wheels, "exclaimer", "1.0", DEPENDENCY)
    # (a package world-aws pins, at another version, is refused in one line, exit 2)
    moved = _local_wheel(tmp_path, wheels, "cbor2", "0.0.1", "")
    (root / "requirements.txt").write_text(f"./wheels/{exclaimer}\n./wheels/{moved}\n")
    refused = _in(root, str(installed / "world-aws"), "build", "--native")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cbor2 0.0.1 (world-aws pins 6." in refused.stderr.splitlines()[-1], refused.stderr
    (root / "requirements.txt").write_text(f"./wheels/{exclaimer}\n")
    app = (root / "demoapp.py").read_text()
    app = app.replace("from world_aws import", "from exclaimer import exclaim\nfrom world_aws import")
    app = app.replace("return name.upper()", "return exclaim(name.upper())")
    (root / "demoapp.py").write_text(app)
    # WHEN world-aws build makes the bundle (for this interpreter)
    built = _in(root, str(installed / "world-aws"), "build", "--native")
    assert built.returncode == 0, built.stdout + built.stderr
    bundle = root / "build" / "lambda"
    top = {path.name for path in bundle.iterdir()}
    assert {"world_aws", "functions", "demoapp.py", "exclaimer", "boto3", "pydantic", "Makefile"} <= top
    assert not top & {"moto", "pytest", "lambda-functions", "requirements-lambda.lock"}
    # THEN a fresh interpreter seeing only the bundle loads the functions' app and its dependency
    (tmp_path / "driver.py").write_text(DRIVER)
    env = {
        "PATH": os.defpath,
        "HOME": str(tmp_path),
        "AWS_REGION": "us-east-1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "WORKFLOW_APP": "demoapp:app",
        "WORKFLOW_TABLE_NAME": "t",
        "WORKFLOW_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/w",
        "STEP_QUEUE_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/s",
        "WORKFLOW_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/wd",
        "STEP_DLQ_URL": "https://sqs.us-east-1.amazonaws.com/123456789012/sd",
        "WORKFLOW_PAYLOAD_BUCKET": "b",
        "POWERTOOLS_SERVICE_NAME": "world_aws",
    }
    ran = subprocess.run(
        [sys.executable, "-I", "-S", "-B", str(tmp_path / "driver.py"), str(bundle)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-4000:]
    seen = json.loads(ran.stdout.splitlines()[-1])
    assert seen["dependency"].startswith(str(bundle))
    assert seen["world_aws"].startswith(str(bundle))
    assert seen["workflows"] == ["greet"]
    assert seen["shout"] == "ADA!"


def test_deploy_runs_sam_build_then_sam_deploy_on_the_bundle(installed: Path, tmp_path: Path) -> None:  # noqa: F811
    root = _init(installed, tmp_path)
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    (fake_bin / "sam").write_text(FAKE_SAM.format(python=sys.executable))
    (fake_bin / "sam").chmod(0o755)
    log = tmp_path / "sam.log"
    env = {**_env(), "PATH": f"{fake_bin}{os.pathsep}{os.environ['PATH']}", "FAKE_SAM_LOG": str(log)}
    command = [str(installed / "world-aws"), "deploy", "--guided"]
    # GIVEN no bundle yet: deploy says to build first, and runs no sam
    refused = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "world-aws build" in refused.stderr
    assert not log.exists()
    # WHEN the bundle is there (a marked build directory)
    (root / "build" / "lambda").mkdir(parents=True)
    (root / "build" / "lambda" / ".world-aws-lambda-build").write_text("")
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True, timeout=60)
    # THEN sam build on the project's template, then sam deploy with the extra arguments, in the project
    assert done.returncode == 0, done.stderr
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert [call["argv"] for call in calls] == [
        ["build", "--template-file", "template.yaml"],
        ["deploy", "--guided"],
    ]
    assert {call["cwd"] for call in calls} == {str(root)}
