"""``world-aws init``, ``build`` and ``deploy`` in-process: what each refuses, in one line with exit 2.

The wheel-installed path (a project's tests, a real bundle, a fake ``sam``) is in
``tests/distribution/test_project.py``; these are the refusals, which need no venv.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from world_aws.cli.main import main


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def test_build_outside_a_project_says_what_is_missing(tmp_path: Path) -> None:
    code, _, err = _cli("build", "--project", str(tmp_path))
    assert code == 2
    (line,) = err.splitlines()
    assert "no [tool.world-aws] table" in line and "world-aws init" in line


def test_build_with_a_bad_app_setting_names_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.world-aws]\napp = "noattr"\n', encoding="utf-8")
    code, _, err = _cli("build", "--project", str(tmp_path))
    assert code == 2 and "app must be MODULE:ATTR, not 'noattr'" in err


def test_build_with_a_missing_requirements_file_names_it(tmp_path: Path) -> None:
    assert _cli("init", "shop", "--dir", str(tmp_path))[0] == 0
    missing = tmp_path / "nope.txt"
    code, _, err = _cli("build", "--project", str(tmp_path / "shop"), "--requirements", str(missing))
    assert code == 2 and f"{missing}: no such file or directory" in err
    assert not (tmp_path / "shop" / "build").exists()  # refused before anything was built


def test_deploy_without_sam_on_path_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _cli("init", "shop", "--dir", str(tmp_path))[0] == 0
    bundle = tmp_path / "shop" / "build" / "lambda"
    bundle.mkdir(parents=True)
    (bundle / ".world-aws-lambda-build").write_text("")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _, err = _cli("deploy", "--project", str(tmp_path / "shop"), "--guided")
    assert code == 2 and "no `sam` on PATH" in err


def test_other_commands_still_refuse_unknown_options() -> None:
    code, _, err = _cli("ls", "--guided")
    assert code == 2 and "unrecognized arguments: --guided" in err
