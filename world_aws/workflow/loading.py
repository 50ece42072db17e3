"""Finding the user's ``Workflows`` app from ``MODULE:ATTR`` (the uvicorn convention)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

from world_aws.errors import BadInput
from world_aws.workflow.registry import Workflows


def load_app(spec: str) -> Workflows:
    """Import ``MODULE:ATTR`` and return the ``Workflows`` instance it names.

    ``MODULE`` is an importable module name (the current directory is put on the
    import path) or a path to a ``.py`` file. ``ATTR`` defaults to ``app``.

    Raises:
        BadInput: naming what could not be found.
    """
    module_part, _, attr = spec.partition(":")
    attr = attr or "app"
    if not module_part:
        raise BadInput(f"expected MODULE:APP, got {spec!r}")
    module = _import(module_part)
    try:
        app = getattr(module, attr)
    except AttributeError:
        raise BadInput(f"module {module_part!r} has no attribute {attr!r}") from None
    if not isinstance(app, Workflows):
        raise BadInput(f"{module_part}:{attr} is a {type(app).__name__}, not a world_aws.Workflows")
    return app


def _import(module_part: str) -> object:
    cwd = str(Path.cwd())
    if cwd not in sys.path:
        sys.path.insert(0, cwd)
    if module_part.endswith(".py") or "/" in module_part:
        path = Path(module_part)
        if not path.is_file():
            raise BadInput(f"no such file: {module_part}")
        name = f"world_aws_user_{path.stem}"
        spec = importlib.util.spec_from_file_location(name, path)
        if spec is None or spec.loader is None:
            raise BadInput(f"cannot import {module_part}")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    try:
        return importlib.import_module(module_part)
    except ModuleNotFoundError as exc:
        if exc.name and module_part.startswith(exc.name):
            raise BadInput(
                f"no module named {module_part!r} (looked on the import path and in {cwd})"
            ) from None
        raise
