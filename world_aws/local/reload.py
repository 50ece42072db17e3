"""``world-aws dev --reload``: a change to the app's files deploys the new code beside the old.

:class:`AppReloader` watches the app's source files (the module's file, or every
``.py`` file of its package's directory) by their modification times and sizes, on
a daemon thread, and on a change imports the app afresh and calls
``stack.deploy(app)`` (``local/stack.py``): new runs start on the new code, runs in
flight keep replaying on the code that started them. The fresh import is a new
module object (the old one is taken out of ``sys.modules`` first, with the
package's other modules): the old deployment's functions keep their own globals,
which ``importlib.reload`` would overwrite in place. A change that does not import
(a syntax error, a missing name) is reported and the running deployments stay.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from world_aws.workflow.loading import load_app
from world_aws.workflow.registry import Workflows

LOG = logging.getLogger("world_aws.reload")
POLL_SECONDS = 0.5

Snapshot = dict[Path, tuple[int, int]]


def watched_files(spec: str) -> list[Path]:
    """The source files of the app ``spec`` names (it must be imported): its module, or its package's."""
    module = _module_of(spec)
    origin = getattr(module, "__file__", None) if module is not None else None
    if origin is None:
        path = Path(spec.partition(":")[0])
        return [path.resolve()] if path.is_file() else []
    source = Path(origin).resolve()
    package = getattr(module, "__package__", None)
    if package:  # a module of a package: the package's directory, all of it
        top = sys.modules.get(package.split(".")[0])
        top_file = getattr(top, "__file__", None)
        if top_file is not None:
            return sorted(Path(top_file).resolve().parent.rglob("*.py"))
    return [source]


def snapshot(files: list[Path]) -> Snapshot:
    """Each file's modification time and size (a missing file is left out)."""
    seen: Snapshot = {}
    for path in files:
        try:
            stat = path.stat()
        except OSError:
            continue
        seen[path] = (stat.st_mtime_ns, stat.st_size)
    return seen


def fresh_app(spec: str, files: list[Path]) -> Workflows:
    """Import the app ``spec`` names anew: a new module object for every watched file's module.

    Raises:
        BadInput, Exception: what the import raises.
    """
    watched = {str(path) for path in files}
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if origin is not None and str(Path(origin).resolve()) in watched:
            del sys.modules[name]
    return load_app(spec)


class AppReloader:
    """Deploys the app ``spec`` names again each time its files change, until stopped."""

    def __init__(
        self,
        spec: str,
        deploy: Callable[[Workflows], str],
        *,
        on_deploy: Callable[[str], None] | None = None,
        on_error: Callable[[BaseException], None] | None = None,
        poll_seconds: float = POLL_SECONDS,
    ) -> None:
        self._spec = spec
        self._deploy = deploy
        self._on_deploy = on_deploy
        self._on_error = on_error
        self._poll = poll_seconds
        self._files = watched_files(spec)
        self._seen = snapshot(self._files)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="world-aws-reload", daemon=True)

    @property
    def files(self) -> list[Path]:
        return list(self._files)

    def start(self) -> AppReloader:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def check(self) -> str | None:
        """Deploy if a watched file changed since the last look; the new deployment's id, else None."""
        now = snapshot(self._files)
        if now == self._seen:
            return None
        self._seen = now
        try:
            app = fresh_app(self._spec, self._files)
        except Exception as exc:  # the code being edited: say why, keep serving the old
            LOG.warning("the changed app does not import; the running deployments stay: %s", exc)
            if self._on_error is not None:
                self._on_error(exc)
            return None
        deployment_id = self._deploy(app)
        self._files = watched_files(self._spec)  # a new file of the package is watched from now on
        self._seen = snapshot(self._files)
        if self._on_deploy is not None:
            self._on_deploy(deployment_id)
        return deployment_id

    def _run(self) -> None:
        while not self._stopping.wait(self._poll):
            try:
                self.check()
            except Exception:
                LOG.exception("reload failed; the running deployments stay")


def _module_of(spec: str) -> ModuleType | None:
    module_part = spec.partition(":")[0]
    if module_part.endswith(".py") or "/" in module_part:
        return sys.modules.get(f"world_aws_user_{Path(module_part).stem}")
    return sys.modules.get(module_part)
