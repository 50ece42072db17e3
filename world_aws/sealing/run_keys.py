"""The runs' data keys: made and unwrapped by a key service (KMS), cached per container.

A run's key is made once, when the run is created (``GenerateDataKey``), and stored
wrapped in the run attribute ``$payload_key`` (base64), so on the run item and its
``run_created`` event as every attribute is. A container that meets a run it has
not seen reads that attribute (``runs.get`` without payloads: the run it replays is
read anyway) and unwraps it once (``Decrypt``); both stay cached, bounded by
:data:`CACHE_RUNS`. KMS is thus asked about once per run per container.
"""

from __future__ import annotations

import base64
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from world_aws.contract.records import ResolveData
from world_aws.contract.sealing import PAYLOAD_KEY_ATTRIBUTE
from world_aws.contract.world import RunStore
from world_aws.errors import BadInput, Misconfigured, NotFound
from world_aws.sealing.envelope import key_id

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
        runs: the World's run store (unsealed), to read a run's wrapped key.
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

    def new_run(self, run_id: str) -> tuple[bytes, bytes, str]:
        """A new key for a run being created: (key, key id, the attribute value to store)."""
        made = self.service.generate(run_id)
        kid = key_id(made.wrapped)
        self._remember(self._keys, kid, made.plaintext)
        return made.plaintext, kid, base64.b64encode(made.wrapped).decode()

    def adopt(self, run_id: str, attribute: str) -> tuple[bytes, bytes]:
        """The key and key id of the wrapped key ``attribute`` (a creation that carries one)."""
        wrapped = _decoded(run_id, attribute)
        kid = key_id(wrapped)
        return self._unwrapped(run_id, kid, wrapped), kid

    def note_run(self, run_id: str, attributes: Mapping[str, str], *, whole: bool = False) -> None:
        """Remember which key the run (as read or written) has; nothing is unwrapped now.

        ``whole``: ``attributes`` are all the run's (a read of its item), so a run without
        the key attribute is plain. A run returned by a write may be partial: only a key
        it shows is remembered.
        """
        attribute = attributes.get(PAYLOAD_KEY_ATTRIBUTE)
        if attribute is None and not whole:
            return
        wrapped = _PLAIN if attribute is None else _decoded(run_id, attribute)
        self._remember(self._wrapped, run_id, wrapped)

    def for_write(self, run_id: str) -> tuple[bytes, bytes] | None:
        """The key and key id to seal ``run_id``'s payloads with; None: write them plain.

        A run this container does not know is read only when encrypting: a container
        without a customer key writes plain to runs it has not seen sealed.
        """
        with self._lock:
            wrapped = self._wrapped.get(run_id)
        if wrapped is None:
            if not self.encrypting:
                return None
            wrapped = self._lookup(run_id)
        if wrapped is None or wrapped == _PLAIN:
            return None
        kid = key_id(wrapped)
        return self._unwrapped(run_id, kid, wrapped), kid

    def for_read(self, run_id: str, kid: bytes, attributes: Mapping[str, str] | None = None) -> bytes:
        """The key with id ``kid`` of ``run_id`` (read from the run when not cached).

        Raises:
            KeyDenied: the key service refuses to unwrap it.
            BadInput: the run has no key of that id (a payload moved from another run).
            Throttled, Transient: from the key service or the read.
        """
        with self._lock:
            key = self._keys.get(kid)
        if key is not None:
            return key
        if attributes is not None and PAYLOAD_KEY_ATTRIBUTE in attributes:
            self.note_run(run_id, attributes)
            wrapped: bytes | None = _decoded(run_id, attributes[PAYLOAD_KEY_ATTRIBUTE])
        else:
            wrapped = self._lookup(run_id)
        if not wrapped or key_id(wrapped) != kid:
            raise BadInput(f"a sealed payload of run {run_id} names a key the run does not have")
        return self._unwrapped(run_id, kid, wrapped)

    def _lookup(self, run_id: str) -> bytes | None:
        try:
            run = self._runs_store.get(run_id, resolve_data=ResolveData.NONE)
        except NotFound:
            return None
        self.note_run(run_id, run.attributes, whole=True)
        with self._lock:
            return self._wrapped.get(run_id)

    def _unwrapped(self, run_id: str, kid: bytes, wrapped: bytes) -> bytes:
        with self._lock:
            key = self._keys.get(kid)
        if key is None:
            key = self.service.unwrap(run_id, wrapped)
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


def _decoded(run_id: str, attribute: str) -> bytes:
    try:
        return base64.b64decode(attribute, validate=True)
    except ValueError:
        raise BadInput(f"run {run_id}'s {PAYLOAD_KEY_ATTRIBUTE} attribute is not base64") from None
