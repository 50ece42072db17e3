"""Refuse non-deterministic calls in workflow code: the clock, randomness, threads, sockets.

A workflow is replayed from its log, possibly in another process: a call whose
answer differs between replays (``time.time()``, ``random.random()``) takes the
replay down another path, and work done on a thread or over a socket is not
recorded at all. The replay loop arms a profile function (``sys.setprofile``,
this thread only, only while the loop runs workflow code; :func:`arm`) that
raises :class:`NonDeterminismError` naming the replacement when the user's code
calls one of them. Calls made by the standard library, installed
packages or world-aws itself (``logging`` reading the clock, a PRNG seeded per
run) pass: only the user's own frames are judged.

Cost: the profile function runs for every call and return while workflow code
runs, and does one set lookup each (ARCHITECTURE §4 has the measured figure).
Python 3.11 has no cheaper hook that sees C functions such as ``datetime.now``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import datetime
import os
import random
import socket
import sys
import sysconfig
import threading
import time
import types
import uuid
from collections.abc import Callable
from typing import Any, NoReturn, TypeVar

from world_aws.errors import NonDeterminismError

_T = TypeVar("_T")

_NOW = "use world_aws.now()"
_STEP = "do this in a step"
_RANDOM = "use world_aws.random()"

# C functions, matched by equality (a bound builtin method equals another binding of it).
_C_CALLS: dict[object, tuple[str, str]] = {
    time.time: ("time.time()", _NOW),
    time.time_ns: ("time.time_ns()", _NOW),
    time.monotonic: ("time.monotonic()", _NOW),
    time.monotonic_ns: ("time.monotonic_ns()", _NOW),
    time.perf_counter: ("time.perf_counter()", _NOW),
    time.perf_counter_ns: ("time.perf_counter_ns()", _NOW),
    time.sleep: ("time.sleep()", "use await world_aws.sleep(...): it is durable and does not block"),
    datetime.datetime.now: ("datetime.now()", _NOW),
    datetime.datetime.utcnow: ("datetime.utcnow()", _NOW),
    datetime.datetime.today: ("datetime.today()", _NOW),
    datetime.date.today: ("date.today()", "use world_aws.now().date()"),
    os.urandom: ("os.urandom()", f"{_RANDOM} or world_aws.uuid4(), or {_STEP}"),
    random.random: ("random.random()", _RANDOM),
    random.getrandbits: ("random.getrandbits()", _RANDOM),
}


def _python_calls() -> dict[types.CodeType, tuple[str, str]]:
    calls: dict[types.CodeType, tuple[str, str]] = {
        uuid.uuid4.__code__: ("uuid.uuid4()", "use world_aws.uuid4()"),
        uuid.uuid1.__code__: ("uuid.uuid1()", "use world_aws.uuid4()"),
        threading.Thread.start.__code__: ("threading.Thread.start()", _STEP),
        concurrent.futures.ThreadPoolExecutor.submit.__code__: ("ThreadPoolExecutor.submit()", _STEP),
        asyncio.to_thread.__code__: ("asyncio.to_thread()", _STEP),
        socket.socket.__init__.__code__: ("socket.socket()", _STEP),
        socket.create_connection.__code__: ("socket.create_connection()", _STEP),
        socket.getaddrinfo.__code__: ("socket.getaddrinfo()", _STEP),
    }
    for name, attr in vars(random.Random).items():
        if isinstance(attr, types.FunctionType) and not name.startswith("_"):
            calls[attr.__code__] = (f"random.{name}()", _RANDOM)
    return calls


_PY_CALLS = _python_calls()
_RANDOM_CODES = frozenset(c for c, (what, _) in _PY_CALLS.items() if what.startswith("random."))
_GLOBAL_RANDOM = random.random.__self__  # type: ignore[attr-defined]  # behind the module functions
# Frames in these directories are not the user's: the standard library and installed packages.
_LIBRARY_DIRS = tuple(
    {sysconfig.get_paths()[key] + os.sep for key in ("stdlib", "platstdlib", "purelib", "platlib")}
)
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def _users(frame: types.FrameType | None) -> bool:
    """Whether ``frame`` runs the user's code (not the standard library, a package or world-aws)."""
    if frame is None:
        return False
    filename = frame.f_code.co_filename
    return not filename.startswith(_LIBRARY_DIRS) and not filename.startswith(_OWN_DIR)


def refuse(what: str, instead: str) -> NoReturn:
    """Raise the error for a non-deterministic call in workflow code, naming what to use instead."""
    raise NonDeterminismError(
        f"{what} cannot be called in workflow code (a replay from the log would differ): {instead}"
    )


def _profile(frame: types.FrameType, event: str, arg: Any) -> None:
    if event == "c_call":
        found = _C_CALLS.get(arg) if type(arg) is types.BuiltinFunctionType else None
        if found is not None and _users(frame):
            refuse(*found)
    elif event == "call":
        code = frame.f_code
        found = _PY_CALLS.get(code)
        if found is None or not _users(frame.f_back):
            return
        if code in _RANDOM_CODES and frame.f_locals.get("self") is not _GLOBAL_RANDOM:
            return  # a Random the user seeded: deterministic
        refuse(*found)


def arm() -> bool:
    """Guard the workflow code this thread runs until :func:`disarm`; False if a profiler is installed.

    A profiler already installed on this thread (cProfile) is not replaced: the guard is off then.
    """
    if sys.getprofile() is not None:
        return False
    sys.setprofile(_profile)
    return True


def rearm() -> None:
    """Install the guard again if a refusal uninstalled it (Python drops a profile function that raised)."""
    if sys.getprofile() is None:
        sys.setprofile(_profile)


def disarm(armed: bool) -> None:
    """End what :func:`arm` began (nothing if it returned False)."""
    if armed:
        sys.setprofile(None)


def unguarded(fn: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
    """``fn(*args, **kwargs)`` with the guard off: world-aws's own work inside a workflow call.

    Encoding a step's arguments is most of the calls a replay step makes; the guard
    would judge each (and none is the user's).
    """
    previous = sys.getprofile()
    if previous is None:
        return fn(*args, **kwargs)
    sys.setprofile(None)
    try:
        return fn(*args, **kwargs)
    finally:
        sys.setprofile(previous)
