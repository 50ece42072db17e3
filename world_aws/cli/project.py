"""``world-aws init NAME``, ``build`` and ``deploy``: a project of one's own, without the repository.

``init`` writes a new project (:mod:`world_aws.deploy.project`) whose tests pass at once.
``build`` makes its Lambda bundle in ``build/lambda/`` from the installed package, the
project's app and its pinned requirements (:mod:`world_aws.deploy.bundle`). ``deploy``
runs ``sam build`` and ``sam deploy`` on it (:mod:`world_aws.deploy.sam`). Exit codes:
0 done, 2 bad input (named in one line), else the failing tool's.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path
from typing import Any, TextIO

from world_aws.deploy import bundle, project, sam


def add_commands(sub: Any) -> None:
    """Add ``init``, ``build`` and ``deploy`` to the ``world-aws`` parser's subparsers."""
    init = sub.add_parser("init", help="make a new project: an app, its test, CI, README and the template")
    init.add_argument("name", help="the project's name: its directory, module and stack name")
    init.add_argument("--dir", type=Path, default=Path("."), help="where to make it (default: here)")
    init.set_defaults(func=run_init)
    build = sub.add_parser("build", help="build the project's Lambda bundle into build/lambda/")
    build.add_argument(
        "--requirements",
        type=Path,
        metavar="FILE",
        help="the app's pinned dependencies (default: [tool.world-aws] requirements of pyproject.toml)",
    )
    build.add_argument("--project", type=Path, default=Path("."), help="the project (default: here)")
    build.add_argument("--native", action="store_true", help="dependencies for this machine's Python")
    build.set_defaults(func=run_build)
    deploy = sub.add_parser("deploy", help="sam build, then sam deploy, of the bundle `build` made")
    deploy.add_argument("--project", type=Path, default=Path("."), help="the project (default: here)")
    deploy.add_argument("sam_args", nargs=argparse.REMAINDER, help="passed on to sam deploy (e.g. --guided)")
    deploy.set_defaults(func=run_deploy)


def run_init(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        root = project.init(ns.name, ns.dir)
    except project.ProjectError as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    out.write(f"made {root}: cd {root} && pytest\n")
    return 0


def run_build(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        settings = project.read_settings(ns.project)
        requirements = ns.requirements if ns.requirements is not None else settings.requirements
        if requirements is not None and requirements.exists() and not project.has_requirements(requirements):
            requirements = None  # only comments: nothing to add (a missing file is refused by the build)
        built = bundle.build(
            ns.project / "build" / "lambda",
            includes=settings.includes,
            requirements=requirements,
            native=ns.native,
        )
    except (project.ProjectError, bundle.BuildError) as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    except subprocess.CalledProcessError as exc:
        err.write(f"world-aws: error: pip failed (exit {exc.returncode}); its output is above\n")
        return 1
    out.write(f"built {built} (app {settings.app})\n")
    return 0


def run_deploy(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    extra = [arg for arg in ns.sam_args if arg != "--"]
    try:
        sam.sam_commands(ns.project, extra)
    except sam.DeployError as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    return sam.deploy(ns.project, extra)
