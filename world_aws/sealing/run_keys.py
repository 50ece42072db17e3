"""The runs' data keys: made and unwrapped by a key service (KMS), cached per container.

A run's key is made once, when the run is created (``GenerateDataKey``), and stored
wrapped inside the sealed envelope of the run's input (``envelope``, v2): in its
``run_created`` event, and in its first message. A container that meets a run it has
not seen reads the run with its input (``runs.get``) and unwraps the key once
(``Decrypt``); both stay cached, bounded by :data:`CACHE_RUNS`. KMS is thus asked
about once per run per container.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Protocol

from world_aws.contract.records import ResolveData
from world_aws.contract.sealing import is_sealed
from world_aws.contract.world import RunStore
from world_aws.errors import BadInput, Misconfigured, NotFound, Transient
from world_aws.sealing.envelope import carried_key, key_id

LOG = logging.getLogger("world_aws.sealing")
# A refused unwrap is not asked again for this long: a reader without kms:Decrypt showing a
# run of a thousand events would otherwise ask KMS (and be refused) a thousand times.
DENIED_SECONDS = 60.0
# A Lambda container serves a few hundred live runs at most; 32 bytes of key and ~200 of
# wrapped key each.
CACHE_RUNS = 4096


@dataclass(frozen=True, slots=True)
class DataKey:
    """A run's data key: the AES-256 key and its form wrapped by the customer key."""

    plaintext: bytes
    wrapped: bytes


class KeyDenied(Misconfigured):
    """The key service refused to unwrap a run's key (no ``kms:Decrypt``): its payloads stay sealed."""


class KeyService(Protocol):
    def generate(self, run_id: str) -> DataKey:
        """A new data key for ``run_id`` (bound to it: the service's encryption context).

        Raises:
            Throttled, Transient: try again later.
            Misconfigured: no key configured, or no ``kms:GenerateDataKey`` on it.
        """
        ...

    def unwrap(self, run_id: str, wrapped: bytes) -> bytes:
        """The plaintext of ``run_id``'s wrapped data key.

        Raises:
            Throttled, Transient: try again later.
            KeyDenied: no ``kms:Decrypt`` on the key.
        """
        ...


_PLAIN = b""  # the wrapped key of a run created without one: its payloads are not sealed


class RunKeys:
    """Which data key each run has, and the keys themselves, cached.

    Args:
        service: the key service.
        runs: the World's run store (unsealed), to read a run's input, which carries its key.
        encrypting: whether new runs get a key (a customer key is configured). Without,
            this container still opens sealed payloads, and seals for runs it knows sealed.
    """

    def __init__(self, service: KeyService, runs: RunStore, *, encrypting: bool) -> None:
        self.service = service
        self.encrypting = encrypting
        self._runs_store = runs
        self._lock = threading.Lock()
        self._wrapped: OrderedDict[str, bytes] = OrderedDict()  # run id -> wrapped key (_PLAIN: none)
        self._keys: OrderedDict[bytes, bytes] = OrderedDict()  # key id -> data key
        self._denied: dict[bytes, tuple[float, KeyDenied]] = {}  # key id -> (until, the refusal)

    def new_run(self, run_id: str) -> DataKey:
        """A new key for a run being created (cached by its id; the run is noted once it exists)."""
        made = self.service.generate(run_id)
        self._remember(self._keys, key_id(made.wrapped), made.plaintext)
        return made

    def unwrapped(self, run_id: str, wrapped: bytes) -> bytes:
        """The data key of ``wrapped`` (a creation that carries one), unwrapped once."""
        return self._unwrapped(run_id, key_id(wrapped), wrapped)

    def note_run(self, run_id: str, stored_input: bytes | None) -> None:
        """Remember which key the run has from its input as stored (None: not read, nothing known)."""
        if stored_input is None:
            return
        wrapped = carried_key(stored_input) if is_sealed(stored_input) else None
        self._remember(self._wrapped, run_id, wrapped or _PLAIN)

    def for_write(self, run_id: str) -> bytes | None:
        """The key to seal ``run_id``'s payloads with; None: write them plain.

        A run this container does not know is read only when encrypting: a container
        without a customer key writes plain to runs it has not seen sealed.
        """
        with self._lock:
            wrapped = self._wrapped.get(run_id)
        if wrapped is None:
            if not self.encrypting:
                return None
            wrapped = self._lookup(run_id)
        if not wrapped:
            return None
        return self._unwrapped(run_id, key_id(wrapped), wrapped)

    def for_read(self, run_id: str, carried: bytes | None = None) -> bytes:
        """The key a payload of ``run_id`` opens with: the one its envelope carries, else the run's.

        Raises:
            KeyDenied: the key service refuses to unwrap it.
            BadInput: the run has no key (a payload moved from another run).
            Throttled, Transient: from the key service or the run's read.
        """
        wrapped = carried
        if wrapped is None:
            with self._lock:
                wrapped = self._wrapped.get(run_id)
            if wrapped is None:
                wrapped = self._lookup(run_id)
        if not wrapped:
            raise BadInput(
                f"run {run_id} has a sealed payload but no data key: it was moved from another run"
            )
        return self._unwrapped(run_id, key_id(wrapped), wrapped)

    def _lookup(self, run_id: str) -> bytes | None:
        """The run's wrapped key from its stored input (_PLAIN: none); None: no such run."""
        try:
            run = self._runs_store.get(run_id, resolve_data=ResolveData.ALL)
        except NotFound:
            return None
        if run.input is None:  # a read with payloads always has it: never guess "plain"
            raise Transient(f"run {run_id} was read without its input: cannot tell its data key")
        self.note_run(run_id, run.input)
        with self._lock:
            return self._wrapped.get(run_id)

    def _unwrapped(self, run_id: str, kid: bytes, wrapped: bytes) -> bytes:
        with self._lock:
            key = self._keys.get(kid)
            denied = self._denied.get(kid)
        if key is not None:
            return key
        if denied is not None and time.monotonic() < denied[0]:
            raise denied[1]
        try:
            key = self.service.unwrap(run_id, wrapped)
        except KeyDenied as refusal:
            LOG.warning("run %s's payloads stay encrypted here: %s", run_id, refusal)
            with self._lock:
                if len(self._denied) >= CACHE_RUNS:
                    self._denied.clear()
                self._denied[kid] = (time.monotonic() + DENIED_SECONDS, refusal)
            raise
        self._remember(self._keys, kid, key)
        return key

    def _remember(
        self, cache: OrderedDict[bytes, bytes] | OrderedDict[str, bytes], k: object, v: bytes
    ) -> None:
        with self._lock:
            cache[k] = v  # type: ignore[index]
            cache.move_to_end(k)  # type: ignore[arg-type]
            while len(cache) > CACHE_RUNS:
                cache.popitem(last=False)
