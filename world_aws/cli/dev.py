"""``world-aws dev [MODULE:APP]``: the embedded stack as a local server, until Ctrl-C.

moto on 127.0.0.1 with the template's resources, the local event source
consuming both queues, the reconciler ticking on a background thread
(``WORKFLOW_RECONCILE_*``), and the HTTP API on ``127.0.0.1:--port``. It prints the
API URL, the moto endpoint and the variables to export in another shell so the
operator commands (``world-aws start``, ``ls``, ``inspect``, ``cancel``,
``resume``) and AWS tools reach it, and the web UI (``/ui/``, :mod:`world_aws.api.assets`) on
the same port. SIGINT or SIGTERM stops the HTTP server, the
consumers and moto, in that order. ``--state DIR`` (by default ``.world-aws/`` in a
project made by ``world-aws init``) keeps the stack's state across restarts
(:mod:`world_aws.local.dev_state`).
"""

from __future__ import annotations

import argparse
import errno
import logging
import shlex
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from world_aws.client.schedule_view import describe_schedules
from world_aws.deploy.project import is_project, project_app
from world_aws.errors import BadInput
from world_aws.workflow.loading import load_app

if TYPE_CHECKING:
    from world_aws.local.dev import DevStack
    from world_aws.local.reload import AppReloader

DEV_DEFAULT_APP = "world_aws.demo:app"
WORLD_HELP = "embedded (default): moto on 127.0.0.1; memory: the in-memory World (no AWS variables to export)"
ENCRYPT_HELP = "seal every payload under a moto KMS key made for the stack (embedded only)"
DEV_DEFAULT_PORT = 8787
DEFAULT_STATE_DIR = ".world-aws"  # world_aws.local.dev_state's, without importing moto's side here


def port(raw: str) -> int:
    """A TCP port, 0-65535 (argparse turns the ValueError into a one-line usage error, exit 2)."""
    port = int(raw)
    if not 0 <= port <= 65535:
        raise ValueError(raw)
    return port


def add_command(sub: Any) -> None:
    """Add ``dev`` to the ``world-aws`` parser's subparsers."""
    dev = sub.add_parser("dev", help="serve an app with its HTTP API on 127.0.0.1 until Ctrl-C")
    dev.add_argument(
        "app",
        nargs="?",
        help="MODULE:APP to serve (default: a project's [tool.world-aws] app, else the demo "
        f"{DEV_DEFAULT_APP})",
    )
    dev.add_argument(
        "--port",
        type=port,
        default=DEV_DEFAULT_PORT,
        help=f"the API's port on 127.0.0.1 (default {DEV_DEFAULT_PORT}; 0 picks a free one)",
    )
    dev.add_argument("--world", choices=["embedded", "memory"], default="embedded", help=WORLD_HELP)
    dev.add_argument("--encrypt", action="store_true", help=ENCRYPT_HELP)
    dev.add_argument(
        "--reload",
        action="store_true",
        help="deploy the app again when its files change: new runs start on the new code, "
        "runs in flight keep the code that started them",
    )
    state = dev.add_mutually_exclusive_group()
    state.add_argument(
        "--state",
        type=Path,
        metavar="DIR",
        help="keep runs, events, payloads and schedules in DIR across restarts (default: "
        f"{DEFAULT_STATE_DIR}/ in a project made by `world-aws init`, else nothing is kept)",
    )
    state.add_argument("--no-state", action="store_true", help="keep nothing, even in a project")
    dev.set_defaults(func=run)


def state_dir(ns: argparse.Namespace, cwd: Path | None = None) -> Path | None:
    """Where ``dev`` keeps its state: ``--state``, else ``.world-aws/`` in a project, else nowhere."""
    if ns.no_state or (ns.world != "embedded" and ns.state is None):
        return None
    if ns.state is not None:
        return Path(ns.state)
    root = Path.cwd() if cwd is None else cwd
    return root / DEFAULT_STATE_DIR if is_project(root) else None


def run(ns: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    """Serve until SIGINT/SIGTERM. Must run on the main thread (it installs signal handlers)."""
    from world_aws.local.dev import start_dev_stack

    if ns.app is None:
        ns.app = project_app(Path.cwd()) or DEV_DEFAULT_APP
    try:
        app = load_app(ns.app)
    except BadInput as exc:
        err.write(f"world-aws: error: {exc}\n")
        return 2
    stop = threading.Event()
    with stop_on_signals(stop), _access_log(out):
        where = "moto" if ns.world == "embedded" else "the in-memory World"
        out.write(f"world-aws dev: starting {ns.app} on {where}...\n")
        out.flush()
        try:
            dev = start_dev_stack(
                app, port=ns.port, kind=ns.world, state_dir=state_dir(ns), encrypt=ns.encrypt
            )
        except BadInput as exc:
            err.write(f"world-aws: error: {exc}\n")
            return 2
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise
            err.write(
                f"world-aws: port {ns.port} on 127.0.0.1 is in use (another `world-aws dev`?); "
                "choose one with --port\n"
            )
            return 2
        try:
            out.write(f"\n  HTTP API   {dev.url}\n")
            out.write(f"  web UI     {dev.url}/ui/\n")
            if dev.endpoint_url:
                out.write(f"  moto       {dev.endpoint_url}\n")
            out.write(f"  workflows  {', '.join(app.workflow_names)}\n")
            kept = state_dir(ns)
            out.write(
                f"  state      {kept} (kept across restarts)\n"
                if kept is not None
                else "  state      not kept (--state DIR keeps it)\n"
            )
            for info in describe_schedules(app, datetime.now(UTC), dev.stack.world.schedules):
                out.write(
                    f"  schedule   {info.name}: {info.expression}, next tick {info.next_tick or 'never'}\n"
                )
            reconciler = dev.stack.reconciler.config
            out.write(
                f"  reconciler every {reconciler.period_seconds:g} s, wakes runs silent for "
                f"{reconciler.after_seconds} s\n"
            )
            out.write("\nIn another shell:\n\n")
            for name, value in dev.env().items():
                out.write(f"export {name}={shlex.quote(value)}\n")
            reloader = _reloader(ns, dev, out) if ns.reload else None
            out.write("\nPress Ctrl-C to stop.\n")
            out.flush()
            try:
                while not stop.wait(0.2):
                    pass
            finally:
                if reloader is not None:
                    reloader.stop()
            out.write("world-aws dev: stopping...\n")
            out.flush()
        finally:
            dev.stop()
        out.write("world-aws dev: stopped\n")
    return 0


def _reloader(ns: argparse.Namespace, dev: DevStack, out: TextIO) -> AppReloader:
    """Watch the app's files and deploy it again on a change (``local/reload.py``)."""
    from world_aws.local.reload import AppReloader

    def deployed(deployment_id: str) -> None:
        out.write(
            f"world-aws dev: {ns.app} changed: deployed as {deployment_id}; "
            "runs in flight keep the code that started them\n"
        )
        out.flush()

    def failed(exc: BaseException) -> None:
        out.write(
            f"world-aws dev: {ns.app} changed but does not import ({exc}); still serving the last code\n"
        )
        out.flush()

    reloader = AppReloader(ns.app, dev.stack.deploy, on_deploy=deployed, on_error=failed)
    out.write(f"  reload     watching {len(reloader.files)} file(s) of {ns.app}\n")
    return reloader.start()


@contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Set ``stop`` on SIGINT/SIGTERM; a second signal falls back to the default (e.g. KeyboardInterrupt)."""
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum: int, _frame: object) -> None:
        stop.set()
        signal.signal(signum, previous[signal.Signals(signum)])

    for sig in previous:
        signal.signal(sig, handler)
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


@contextmanager
def _access_log(out: TextIO) -> Iterator[None]:
    """Show the API's access log and errors, and each failed attempt (``world_aws.failures``), on ``out``."""
    loggers = [logging.getLogger("world_aws.api"), logging.getLogger("world_aws.failures")]
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("  %(message)s"))
    old_levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
    try:
        yield
    finally:
        for logger, level in zip(loggers, old_levels, strict=True):
            logger.removeHandler(handler)
            logger.setLevel(level)
