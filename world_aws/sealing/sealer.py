"""Seals the payloads of what a World is given and opens those of what it returns.

One payload is sealed for its run and its field's name (``envelope``); the records
carrying payloads are event data (each payload field, and a creation's input), runs,
steps, hooks and stream chunks. The sealer is also the World's ``payloads``
(``contract.sealing.PayloadSeal``), the seam the runtime uses for what it sends
outside the stores.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, TypeVar

from world_aws.contract.records import (
    Event,
    EventData,
    EventResult,
    Hook,
    Run,
    RunCreation,
    Step,
    creation_of,
    payload_fields,
)
from world_aws.contract.sealing import is_sealed
from world_aws.sealing import envelope
from world_aws.sealing.run_keys import KeyDenied, RunKeys

D = TypeVar("D", bound=EventData)
# The field a run's input is sealed for: not "input", a step's, so neither opens in the other's place.
RUN_INPUT = "run_input"


class Sealer:
    """Seals and opens the payloads of one World's records with the runs' data keys."""

    def __init__(self, keys: RunKeys) -> None:
        self.keys = keys

    # --- contract.sealing.PayloadSeal

    def seal(self, run_id: str, field: str, data: bytes) -> bytes:
        """``data`` sealed for ``field`` of ``run_id``; as it is when the run is plain.

        A payload already sealed (a step input re-ensured from its message) is checked
        to open for this run and field, and kept.
        """
        if is_sealed(data):
            self.open(run_id, field, data, strict=True)
            return data
        key = self.keys.for_write(run_id)
        if key is None:
            return data
        return envelope.seal(key, run_id, field, data)

    def creation(self, run_id: str, creation: RunCreation) -> RunCreation:
        """``creation`` with its input sealed under a new data key for the run, which it carries.

        A creation already sealed (the first message's, re-ensured by its consumer) is checked
        to open for the run, and kept; a plain one stays plain when this World does not encrypt.
        """
        if is_sealed(creation.input):
            self.open(run_id, RUN_INPUT, creation.input, strict=True)
            return creation
        if not self.keys.encrypting or not isinstance(creation.input, bytes):
            return creation  # a wrong type: the World's shape check names it (contract.shapes)
        made = self.keys.new_run(run_id)
        sealed = envelope.seal(made.plaintext, run_id, RUN_INPUT, creation.input, carry=made.wrapped)
        return replace(creation, input=sealed)

    # --- opening

    def open(
        self,
        run_id: str,
        field: str,
        data: bytes | None,
        *,
        strict: bool = False,
    ) -> bytes | None:
        """The plaintext of a payload; a plain one as it is.

        A payload whose key the key service refuses to unwrap stays sealed (unless
        ``strict``): readers show it as encrypted (``contract.sealing``).

        Raises:
            BadInput: it does not open for this run and field.
            KeyDenied: ``strict`` and the key service refused.
            Throttled, Transient: the key service or the run's read failed for now.
        """
        if data is None or not is_sealed(data):
            return data
        try:
            key = self.keys.for_read(run_id, envelope.carried_key(data))
        except KeyDenied:
            if strict:
                raise
            return bytes(data)
        return envelope.open_sealed(key, run_id, field, data)

    # --- records

    def seal_data(self, run_id: str, data: D) -> D:
        """Event data with its payloads sealed (a creation gets the run's key)."""
        changes: dict[str, Any] = {}
        creation = creation_of(data)
        if isinstance(creation, RunCreation):
            changes["creation"] = self.creation(run_id, creation)
        for name in payload_fields(type(data)):  # type: ignore[arg-type]
            value = getattr(data, name)
            if isinstance(value, bytes):  # else the World's shape check names it
                changes[name] = self.seal(run_id, name, value)
        return replace(data, **changes) if changes else data

    def open_data(self, run_id: str, data: D) -> D:
        changes: dict[str, Any] = {}
        creation = creation_of(data)
        if creation is not None and is_sealed(creation.input):
            changes["creation"] = replace(creation, input=self.open(run_id, RUN_INPUT, creation.input) or b"")
        for name in payload_fields(type(data)):  # type: ignore[arg-type]
            value = getattr(data, name)
            if is_sealed(value):
                changes[name] = self.open(run_id, name, value)
        return replace(data, **changes) if changes else data

    def open_event(self, event: Event) -> Event:
        opened = self.open_data(event.run_id, event.data)
        return event if opened is event.data else replace(event, data=opened)

    def open_run(self, run: Run) -> Run:
        self.keys.note_run(run.run_id, run.input)
        changes: dict[str, Any] = {
            "input" if name == RUN_INPUT else name: self.open(run.run_id, name, value)
            for name, value in ((RUN_INPUT, run.input), ("output", run.output), ("error", run.error))
            if is_sealed(value)
        }
        return replace(run, **changes) if changes else run

    def open_step(self, step: Step) -> Step:
        changes: dict[str, Any] = {
            name: self.open(step.run_id, name, value)
            for name, value in (("input", step.input), ("output", step.output), ("error", step.error))
            if is_sealed(value)
        }
        return replace(step, **changes) if changes else step

    def open_hook(self, hook: Hook) -> Hook:
        if not is_sealed(hook.metadata):
            return hook
        return replace(hook, metadata=self.open(hook.run_id, "metadata", hook.metadata))

    def open_result(self, run_id: str, result: EventResult) -> EventResult:
        return replace(
            result,
            event=self.open_event(result.event) if result.event is not None else None,
            run=self.open_run(result.run) if result.run is not None else None,
            step=self.open_step(result.step) if result.step is not None else None,
            hook=self.open_hook(result.hook) if result.hook is not None else None,
        )
