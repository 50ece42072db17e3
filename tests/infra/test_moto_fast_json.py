"""moto_fast_json renders DynamoDB attribute values exactly as moto's own serializer does."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from moto.core.serialize import BaseJSONSerializer, JSONSerializer, XFormedAttributePicker
from moto.core.utils import get_service_model
from moto.dynamodb.models.utilities import dynamo_to_dict

from world_aws.local import moto_fast_json

# Every member of AttributeValue, nested in maps and lists, with the edge values.
ITEM: dict[str, Any] = {
    "pk": {"S": "run#wrun_1"},
    "empty": {"S": ""},
    "n": {"N": "12.50"},
    "b": {"B": b"\x00\xffbytes"},
    "ss": {"SS": ["a", "b"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02\x03"]},
    "null": {"NULL": True},
    "yes": {"BOOL": True},
    "no": {"BOOL": False},
    "m": {"M": {"inner": {"S": "x"}, "deeper": {"M": {"b": {"B": b"\x09"}}}, "none": {"M": {}}}},
    "l": {"L": [{"S": "x"}, {"N": "1"}, {"L": [{"BOOL": False}]}, {"M": {"k": {"NULL": True}}}]},
}


Structure = Callable[..., None]


@pytest.fixture
def moto_own() -> Iterator[Structure]:
    """moto's own structure serializer; the installed (fast) one is put back afterwards."""
    moto_fast_json.install()
    installed = BaseJSONSerializer._serialize_type_structure
    try:
        yield installed.__wrapped__  # type: ignore[attr-defined]
    finally:
        BaseJSONSerializer._serialize_type_structure = installed  # type: ignore[method-assign]


def _render(operation: str, result: dict[str, Any], structure: Structure) -> Any:
    BaseJSONSerializer._serialize_type_structure = structure  # type: ignore[method-assign]
    model = get_service_model("dynamodb").operation_model(operation)
    serializer = JSONSerializer(operation_model=model, value_picker=XFormedAttributePicker())
    return json.loads(serializer.serialize(dynamo_to_dict(result))["body"])


RESULTS = {
    "GetItem": {"Item": ITEM},
    "UpdateItem": {"Attributes": ITEM},
    "Query": {"Items": [ITEM, {"pk": {"S": "2"}}], "Count": 2, "ScannedCount": 2},
    "BatchGetItem": {"Responses": {"t": [ITEM]}, "UnprocessedKeys": {}},
}


@pytest.mark.parametrize("operation", sorted(RESULTS))
def test_fast_attribute_values_render_as_moto_renders_them(
    operation: str, moto_own: Structure, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _render(operation, RESULTS[operation], moto_own)
    rendered: list[dict[str, Any]] = []
    direct = moto_fast_json.attribute_value
    monkeypatch.setattr(moto_fast_json, "attribute_value", lambda v, b: rendered.append(v) or direct(v, b))
    fast = _render(operation, RESULTS[operation], moto_fast_json._fast_structure(moto_own))
    assert fast == expected
    assert "pk" in json.dumps(expected)  # a real rendering was compared, not two empty bodies
    assert {"S": "run#wrun_1"} in rendered  # ... and the values went the fast way


def test_install_is_idempotent_and_wraps_once() -> None:
    assert moto_fast_json.install() and moto_fast_json.install()
    installed = BaseJSONSerializer._serialize_type_structure
    assert getattr(installed, "_world_aws_fast_attribute_values", False)
    assert not getattr(installed.__wrapped__, "_world_aws_fast_attribute_values", False)  # type: ignore[attr-defined]
