"""Reading ``template.yaml``: the one source of truth for world-aws's AWS resources.

CloudFormation YAML uses short-form tags (``!Ref``, ``!GetAtt``, ``!Sub`` ...) that a
plain YAML loader rejects. ``load_template`` turns each into the long form
(``{"Ref": ...}``, ``{"Fn::GetAtt": [...]}``, ``{"Fn::Sub": ...}``), exactly as
CloudFormation itself reads them, so that ``world_aws.aws.infra.provision`` can resolve them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

# template.yaml ships in this package (a link to the repository root's copy, followed by the wheel build).
DEFAULT_TEMPLATE = Path(__file__).resolve().parent / "template.yaml"

# Short-form tag -> long-form key. GetAtt and Condition are special-cased below.
_FUNCTION_TAGS = {
    "Ref": "Ref",
    "Sub": "Fn::Sub",
    "Join": "Fn::Join",
    "Select": "Fn::Select",
    "Split": "Fn::Split",
    "If": "Fn::If",
    "Equals": "Fn::Equals",
    "And": "Fn::And",
    "Or": "Fn::Or",
    "Not": "Fn::Not",
    "FindInMap": "Fn::FindInMap",
    "Base64": "Fn::Base64",
    "Cidr": "Fn::Cidr",
    "GetAZs": "Fn::GetAZs",
    "ImportValue": "Fn::ImportValue",
    "Transform": "Fn::Transform",
    "Length": "Fn::Length",
    "ToJsonString": "Fn::ToJsonString",
    "Condition": "Condition",
}


class TemplateError(ValueError):
    """The template cannot be read, or uses something the reader does not understand."""


# libyaml's parser when PyYAML has it (the template parses ~10x faster: it is read on every
# `world-aws run`), else the pure-Python one. The constructors and resolvers are the same.
if TYPE_CHECKING or not yaml.__with_libyaml__:  # noqa: SIM108 (a ternary is no base-class alias to mypy)
    _SafeLoader = yaml.SafeLoader
else:
    _SafeLoader = yaml.CSafeLoader


class CloudFormationLoader(_SafeLoader):
    """A safe YAML loader that also accepts CloudFormation short-form tags.

    Dates are left as strings (``Version: 2012-10-17`` must stay text, as in
    CloudFormation), so the timestamp resolver is removed.
    """

    yaml_implicit_resolvers = {
        first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }


def _construct_node(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    raise TemplateError(f"unsupported YAML node {node!r}")


def _construct_short_form(loader: yaml.SafeLoader, tag_suffix: str, node: yaml.Node) -> dict[str, Any]:
    value = _construct_node(loader, node)
    if tag_suffix == "GetAtt":
        # "!GetAtt Resource.Attribute" splits at the first dot; the list form is kept.
        if isinstance(value, str):
            resource, _, attribute = value.partition(".")
            if not attribute:
                raise TemplateError(f"!GetAtt {value!r} needs Resource.Attribute")
            return {"Fn::GetAtt": [resource, attribute]}
        return {"Fn::GetAtt": list(value)}
    key = _FUNCTION_TAGS.get(tag_suffix)
    if key is None:
        raise TemplateError(f"unknown CloudFormation tag !{tag_suffix}")
    return {key: value}


CloudFormationLoader.add_multi_constructor("!", _construct_short_form)


def load_template(path: Path | str = DEFAULT_TEMPLATE) -> dict[str, Any]:
    """Parse a CloudFormation/SAM template into plain dicts with long-form intrinsics.

    Args:
        path: the template file.

    Returns:
        The template as a dict.

    Raises:
        TemplateError: the file is not a YAML mapping with a ``Resources`` section.
    """
    text = Path(path).read_text(encoding="utf-8")
    document = yaml.load(text, Loader=CloudFormationLoader)  # a SafeLoader subclass: no arbitrary objects
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise TemplateError(f"{path}: not a CloudFormation template (no Resources mapping)")
    return document


@dataclass(frozen=True, slots=True)
class Resource:
    """One resource declaration: its logical id, type and (unresolved) properties."""

    logical_id: str
    type: str
    properties: Mapping[str, Any] = field(default_factory=dict)
    depends_on: tuple[str, ...] = ()


def resources(template: Mapping[str, Any], *types: str) -> dict[str, Resource]:
    """The template's resources by logical id, optionally only those of the given types."""
    found: dict[str, Resource] = {}
    for logical_id, body in template["Resources"].items():
        if types and body.get("Type") not in types:
            continue
        depends = body.get("DependsOn", ())
        found[logical_id] = Resource(
            logical_id=logical_id,
            type=str(body["Type"]),
            properties=dict(body.get("Properties") or {}),
            depends_on=(depends,) if isinstance(depends, str) else tuple(depends),
        )
    return found


def parameter_defaults(template: Mapping[str, Any]) -> dict[str, str]:
    """Each parameter's default value as a string (parameters without one are left out)."""
    return {
        name: str(spec["Default"])
        for name, spec in (template.get("Parameters") or {}).items()
        if "Default" in spec
    }


def outputs(template: Mapping[str, Any]) -> dict[str, Any]:
    """Each output's (unresolved) ``Value`` by output name."""
    return {name: spec["Value"] for name, spec in (template.get("Outputs") or {}).items()}


def references(value: Any) -> set[str]:
    """Every logical id or parameter name that ``value`` refers to (Ref, GetAtt, Sub)."""
    found: set[str] = set()
    if isinstance(value, dict):
        if "Ref" in value and len(value) == 1:
            found.add(str(value["Ref"]))
        elif "Fn::GetAtt" in value and len(value) == 1:
            found.add(str(value["Fn::GetAtt"][0]))
        elif "Fn::Sub" in value and len(value) == 1:
            found |= _sub_references(value["Fn::Sub"])
        else:
            for item in value.values():
                found |= references(item)
    elif isinstance(value, list):
        for item in value:
            found |= references(item)
    return found


def _sub_references(argument: Any) -> set[str]:
    text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])
    names = {name.split(".", 1)[0] for name in sub_variables(text) if name not in variables}
    for value in variables.values():
        names |= references(value)
    return names


def sub_variables(text: str) -> list[str]:
    """The ``${Name}`` / ``${Name.Attr}`` variables of an Fn::Sub string (``${!x}`` is a literal)."""
    names: list[str] = []
    start = text.find("${")
    while start != -1:
        end = text.find("}", start)
        if end == -1:
            raise TemplateError(f"unterminated ${{ in Fn::Sub string {text!r}")
        name = text[start + 2 : end]
        if not name.startswith("!"):
            names.append(name)
        start = text.find("${", end)
    return names
