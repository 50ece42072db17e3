"""``world-aws dev --state DIR``: the embedded stack's state kept on disk across restarts.

``locked_state(directory)`` takes the directory's lock (one ``world-aws dev`` per
directory) and reads its snapshot, before moto starts; ``keep_state(aws, state)`` wraps
the life of the embedded stack: on entry, if there was a snapshot, it writes it into the
freshly provisioned stack through the AWS APIs, before anything consumes the queues: the
table's items (runs, events, hooks, schedules' state), the bucket's objects (payloads) and
the queues' messages. While the stack runs, a thread
saves a snapshot every ``period`` seconds if moto served a request since the last one; on
exit (after the consumers have stopped, before moto does) it saves the last one.

A snapshot is read under moto's serving lock (``moto_state``), so it is of one instant,
and written atomically (a temporary file, fsync, rename): a crash leaves the previous
snapshot whole. What a ``kill -9`` loses is what happened after the last periodic save;
the decision record ``docs/decisions/2026-12-07-dev-state.md`` says what that means for runs.
"""

from __future__ import annotations

import base64
import fcntl
import json
import logging
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from world_aws.aws.clients import AwsClients
from world_aws.aws.infra.provision import ProvisionedResources
from world_aws.errors import BadInput
from world_aws.local.embedded import EmbeddedAws
from world_aws.local.moto_state import MotoState, QueuedMessage, queue_urls, read_state

LOG = logging.getLogger(__name__)

DEFAULT_STATE_DIR = ".world-aws"
SNAPSHOT_FILE = "state.json"
LOCK_FILE = "lock"
FORMAT_VERSION = 1
# How often a running stack's state is saved, when it changed (WORLD_AWS_DEV_SAVE_SECONDS).
DEFAULT_SAVE_SECONDS = 2.0
# DynamoDB BatchWriteItem takes 25 puts, SQS SendMessageBatch 10 messages.
_ITEMS_PER_BATCH = 25
_MESSAGES_PER_BATCH = 10


def save_period(environ: dict[str, str] | None = None) -> float:
    """The seconds between two saves: ``WORLD_AWS_DEV_SAVE_SECONDS``, default 2.

    Raises:
        BadInput: not a positive number.
    """
    raw = (os.environ if environ is None else environ).get("WORLD_AWS_DEV_SAVE_SECONDS", "").strip()
    if not raw:
        return DEFAULT_SAVE_SECONDS
    try:
        period = float(raw)
    except ValueError:
        period = -1.0
    if not period > 0:
        raise BadInput(f"WORLD_AWS_DEV_SAVE_SECONDS must be a positive number of seconds, not {raw!r}")
    return period


class StateDir:
    """A state directory, locked for this process. Use :meth:`open`; :meth:`close` unlocks it."""

    def __init__(self, path: Path, lock: IO[str]) -> None:
        self.path = path
        self._lock = lock
        self.saved: MotoState | None = None  # the snapshot to restore, read by locked_state

    @classmethod
    def open(cls, path: Path) -> StateDir:
        """Create ``path`` if needed and lock it.

        Raises:
            BadInput: it is not a directory, or another process holds its lock.
        """
        try:
            path.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            raise BadInput(f"--state {path}: not a directory") from None
        lock = (path / LOCK_FILE).open("a+", encoding="utf-8")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise BadInput(
                f"--state {path}: another `world-aws dev` uses this state; stop it first"
            ) from None
        return cls(path, lock)

    def load(self) -> MotoState | None:
        """The saved snapshot, or None if there is none.

        Raises:
            BadInput: the file is not a snapshot this version reads (it is left as it is).
        """
        file = self.path / SNAPSHOT_FILE
        try:
            document = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise BadInput(
                f"{file}: not a world-aws dev snapshot ({exc}); move it away to start empty"
            ) from None
        if not isinstance(document, dict) or document.get("format") != FORMAT_VERSION:
            raise BadInput(f"{file}: not a snapshot of format {FORMAT_VERSION}; move it away to start empty")
        return MotoState(
            items=list(document["items"]),
            objects={key: base64.b64decode(value) for key, value in document["objects"].items()},
            messages={
                role: [QueuedMessage(**message) for message in messages]
                for role, messages in document["messages"].items()
            },
        )

    def save(self, state: MotoState) -> None:
        """Write ``state`` atomically: the previous snapshot stays whole until the new one is on disk."""
        document = {
            "format": FORMAT_VERSION,
            "items": state.items,
            "objects": {key: base64.b64encode(value).decode("ascii") for key, value in state.objects.items()},
            "messages": {
                role: [vars(message) for message in messages] for role, messages in state.messages.items()
            },
        }
        temporary = self.path / f".{SNAPSHOT_FILE}.tmp"
        with temporary.open("w", encoding="utf-8") as f:
            json.dump(document, f, separators=(",", ":"))
            f.flush()
            os.fsync(f.fileno())
        os.replace(temporary, self.path / SNAPSHOT_FILE)
        directory = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(directory)  # the rename itself
        finally:
            os.close(directory)

    def close(self) -> None:
        self._lock.close()  # closing the file releases the lock


def restore(clients: AwsClients, resources: ProvisionedResources, state: MotoState) -> None:
    """Write ``state`` into a stack freshly provisioned (empty), through the AWS APIs."""
    for start in range(0, len(state.items), _ITEMS_PER_BATCH):
        batch = [
            {"PutRequest": {"Item": _boto_item(item)}}
            for item in state.items[start : start + _ITEMS_PER_BATCH]
        ]
        pending: Any = {resources.table_name: batch}
        while pending:  # moto processes every put; a real table may hand some back
            pending = clients.dynamodb.batch_write_item(RequestItems=pending).get("UnprocessedItems")
    for key, body in state.objects.items():
        clients.s3.put_object(Bucket=resources.bucket_name, Key=key, Body=body)
    urls = queue_urls(resources)
    for role, messages in state.messages.items():
        for start in range(0, len(messages), _MESSAGES_PER_BATCH):
            entries: list[Any] = [
                _entry(str(index), message)
                for index, message in enumerate(messages[start : start + _MESSAGES_PER_BATCH])
            ]
            answer = clients.sqs.send_message_batch(QueueUrl=urls[role], Entries=entries)
            if answer.get("Failed"):
                raise RuntimeError(f"restoring the {role} queue failed: {answer['Failed']}")


@contextmanager
def locked_state(directory: Path) -> Iterator[StateDir]:
    """``directory`` locked for this process, its snapshot read (before moto starts: a refusal costs nothing).

    Raises:
        BadInput: another process uses it, or its snapshot cannot be read.
    """
    state_dir = StateDir.open(directory)
    try:
        state_dir.saved = state_dir.load()
        yield state_dir
    finally:
        state_dir.close()


@contextmanager
def keep_state(aws: EmbeddedAws, state_dir: StateDir, *, period: float | None = None) -> Iterator[None]:
    """Restore ``aws``'s state from ``state_dir``, save it while it runs and when the block exits."""
    if state_dir.saved is not None:
        restore(aws.clients, aws.resources, state_dir.saved)
        state_dir.saved = None
    saver = _Saver(aws, state_dir, save_period() if period is None else period)
    saver.start()
    try:
        yield
    finally:
        saver.stop()
        state_dir.save(read_state(aws.app, aws.resources, aws.region))


class _Saver:
    """Saves a snapshot every ``period`` seconds if moto served a request since the last one."""

    def __init__(self, aws: EmbeddedAws, state_dir: StateDir, period: float) -> None:
        self._aws = aws
        self._state_dir = state_dir
        self._period = period
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="world-aws-dev-state", daemon=True)
        self._seen = aws.app.served

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _loop(self) -> None:
        while not self._stop.wait(self._period):
            served = self._aws.app.served
            if served == self._seen:
                continue
            try:
                self._state_dir.save(read_state(self._aws.app, self._aws.resources, self._aws.region))
                self._seen = served
            except Exception:  # a full disk: keep serving; the next save tries again
                LOG.exception("world-aws dev could not save its state to %s", self._state_dir.path)


def _boto_item(item: dict[str, Any]) -> dict[str, Any]:
    return {name: _boto_value(value) for name, value in item.items()}


def _boto_value(value: dict[str, Any]) -> Any:
    """A DynamoDB JSON value as boto3's client takes it: binaries as bytes (the wire has base64)."""
    ((kind, inner),) = value.items()
    if kind == "B":
        return {"B": base64.b64decode(inner)}
    if kind == "BS":
        return {"BS": [base64.b64decode(member) for member in inner]}
    if kind == "M":
        return {"M": {name: _boto_value(member) for name, member in inner.items()}}
    if kind == "L":
        return {"L": [_boto_value(member) for member in inner]}
    return {kind: inner}


def _entry(entry_id: str, message: QueuedMessage) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "Id": entry_id,
        "MessageBody": message.body,
        "DelaySeconds": message.delay_seconds,
    }
    attributes = {name: _boto_attribute(value) for name, value in message.attributes.items()}
    if attributes:
        entry["MessageAttributes"] = attributes
    return entry


def _boto_attribute(value: dict[str, Any]) -> dict[str, Any]:
    """A message attribute as the snapshot holds it (binaries base64) as boto3 takes it."""
    out = {key: member for key, member in value.items() if key in ("DataType", "StringValue")}
    if value.get("BinaryValue") is not None:
        out["BinaryValue"] = base64.b64decode(value["BinaryValue"])
    return out
