"""Hypothesis strategies for hostile input: raw CBOR items (any tag), envelopes, HTTP events."""

from __future__ import annotations

import base64
from typing import Any

import cbor2
from hypothesis import strategies as st

from world_aws.contract.payload import InvokePayload
from world_aws.contract.transport import SEMANTIC_TAGS, encode_payload
from world_aws.serde.tags import Tag

# Every standard tag cbor2 decodes itself, every world-aws tag, and a few unknown ones.
TAGS = sorted({*SEMANTIC_TAGS, *(int(t) for t in Tag), 6, 4242, 2**32 + 1})

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=20),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=8), children, max_size=4),
        st.dictionaries(st.integers(-3, 3), children, max_size=2),
        st.builds(cbor2.CBORTag, st.sampled_from(TAGS), children),
    )


# Any CBOR item tree (what cbor2 can write), tags in any place.
cbor_items = st.recursive(scalars, _containers, max_leaves=12)


@st.composite
def cbor_bytes(draw: st.DrawFn) -> bytes:
    """Bytes of one CBOR item, sometimes cut or extended, or just random bytes."""
    kind = draw(st.sampled_from(["item", "item", "cut", "extra", "random"]))
    if kind == "random":
        return draw(st.binary(max_size=64))
    data = cbor2.dumps(draw(cbor_items))
    if kind == "cut":
        return data[: draw(st.integers(0, max(0, len(data) - 1)))]
    if kind == "extra":
        return data + draw(st.binary(min_size=1, max_size=4))
    return data


@st.composite
def message_maps(draw: st.DrawFn) -> bytes:
    """CBOR of a map that looks like an invoke payload, with hostile values in its fields."""
    fields = draw(
        st.dictionaries(
            st.sampled_from(
                ["run_id", "step_id", "step_name", "step_input", "run_input", "hook_input", "requested_at"]
            ),
            cbor_items,
            max_size=4,
        )
    )
    return cbor2.dumps({"run_id": "wrun_fuzz", **fields})


VALID_BODY = base64.b64encode(encode_payload(InvokePayload(run_id="wrun_fuzz_ok"))).decode()

bodies = st.one_of(
    st.just(VALID_BODY),
    st.text(max_size=40),
    st.builds(lambda b: base64.b64encode(b).decode(), st.one_of(cbor_bytes(), message_maps())),
    st.binary(max_size=8),
    st.none(),
    st.integers(),
)
attribute_values = st.one_of(
    st.fixed_dictionaries(
        {"stringValue": st.one_of(st.text(max_size=30), st.integers().map(str), st.none(), st.integers())}
    ),
    st.text(max_size=5),
    st.lists(st.integers(), max_size=2),
    st.none(),
)
attributes = st.one_of(
    st.dictionaries(st.sampled_from(["wf_due_at", "wf_origin_id", "other"]), attribute_values, max_size=3),
    st.lists(st.text(max_size=3), max_size=2),
    st.text(max_size=3),
    st.none(),
)
HTTP_PATHS = ["/runs", "/runs/wrun_1", "/runs/wrun_1/events", "/runs/wrun_1/cancel", "/hooks/t/resume", "/"]
