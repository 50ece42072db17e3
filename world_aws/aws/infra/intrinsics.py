"""Resolving CloudFormation intrinsic functions against locally created resources.

Only what a data-plane template needs is supported (``Ref``, ``Fn::GetAtt``,
``Fn::Sub``, ``Fn::Join``, ``Fn::Select`` and a few pseudo parameters); anything
else is a ``TemplateError`` rather than a silently wrong value.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from world_aws.aws.infra.template import TemplateError, sub_variables


class Resolver:
    """Resolves intrinsics with parameter values and the attributes of created resources.

    Args:
        parameters: parameter and pseudo-parameter values by name.
        attributes: per created logical id, its attributes; the ``Ref`` value
            is stored under the key ``"Ref"``.
    """

    def __init__(self, parameters: Mapping[str, str], attributes: Mapping[str, Mapping[str, str]]) -> None:
        self._parameters = parameters
        self._attributes = attributes

    def resolve(self, value: Any) -> Any:
        """``value`` with every intrinsic function replaced by its value."""
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        if not isinstance(value, dict):
            return value
        if len(value) == 1:
            ((key, argument),) = value.items()
            if key == "Ref":
                return self._ref(str(argument))
            if key == "Fn::GetAtt":
                return self._get_att(str(argument[0]), str(argument[1]))
            if key == "Fn::Sub":
                return self._sub(argument)
            if key == "Fn::Join":
                separator, items = argument
                return str(separator).join(str(item) for item in self.resolve(items))
            if key == "Fn::Select":
                index, items = argument
                return self.resolve(items)[int(self.resolve(index))]
            if key.startswith("Fn::") or key == "Condition":
                raise TemplateError(f"intrinsic {key} is not supported by local provisioning")
        return {key: self.resolve(item) for key, item in value.items()}

    def _ref(self, name: str) -> str:
        if name in self._parameters:
            return self._parameters[name]
        if name in self._attributes:
            return self._attributes[name]["Ref"]
        raise TemplateError(f"Ref {name!r}: no such parameter or provisioned resource")

    def _get_att(self, logical_id: str, attribute: str) -> str:
        try:
            return self._attributes[logical_id][attribute]
        except KeyError:
            raise TemplateError(f"GetAtt {logical_id}.{attribute}: not available locally") from None

    def _sub(self, argument: Any) -> str:
        text, variables = (argument, {}) if isinstance(argument, str) else (argument[0], argument[1])
        values = {name: str(self.resolve(item)) for name, item in variables.items()}
        for name in sub_variables(text):
            if name in values:
                replacement = values[name]
            elif "." in name:
                logical_id, attribute = name.split(".", 1)
                replacement = self._get_att(logical_id, attribute)
            else:
                replacement = self._ref(name)
            text = text.replace("${" + name + "}", replacement)
        return text.replace("${!", "${")
