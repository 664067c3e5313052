"""The two kinds of model every result is made of.

* :class:`Frozen`: a block the benchmark computes or writes (``run.json`` too); unknown keys are
  refused, so a misspelt or forgotten field fails where it is made, not in a reader.
* :class:`Log`: a block a run fills in as it goes (a backend's search under the target, its traffic, its open
  loop): each value checked where it is set.
* :class:`Sparse`: a mixin for blocks whose optional keys are written only when they were given
  (a distribution keeps its ``values`` only when asked to, ``run.json`` keys only when present), so
  a file keeps exactly the keys it had.
"""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import (BaseModel, ConfigDict, SerializationInfo, SerializerFunctionWrapHandler, ValidationError,
                      model_serializer)

Interval = tuple[float, float]
"""A 95% interval ``[low, high]``."""

BackendKindName = Literal["openai", "neuron", "bedrock", "bedrock-mantle", "sagemaker"]
"""The backend kinds a result may name: one per descriptor of ``agent/kinds.py`` (``tests/test_kinds.py`` checks)."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    def but(self, **changes: Any) -> Self:
        """This block with ``changes``, checked as it is made (the keys it was given stay given, the changed ones
        are given)."""
        return type(self).model_validate({**{k: getattr(self, k) for k in self.model_fields_set}, **changes})


class Log(BaseModel):
    """A block a run fills in as it goes (``run.json``'s logs, and ``run.json`` itself while the run writes it):
    unknown keys are refused, and each value is checked where it is set, not when the file is written."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, use_attribute_docstrings=True)


class Sparse(BaseModel):
    """Writes a field that has a default only when it was given."""

    @model_serializer(mode="wrap")
    def _given_keys_only(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> dict[str, Any]:
        data = handler(self)
        given = self.model_fields_set
        fields = type(self).model_fields
        return {k: v for k, v in data.items() if k in given or (k in fields and fields[k].is_required())}


def path_of(loc: tuple[int | str, ...]) -> str:
    """A pydantic error's location as a reader writes it: ``models[2].source``, ``devices.nvidia-l4``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else f".{part}" if out else str(part)
    return out


def problems(exc: ValidationError) -> list[str]:
    """Every problem of a validation, each with its path: ``devices.nvidia-l4: missing source``,
    ``models[0].scope: Input should be 'chip' or 'core'``, ``instances.g6.: unknown key``."""
    out = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == "missing" and loc:
            out.append(f"{path_of(loc[:-1])}: missing {loc[-1]}" if len(loc) > 1 else f"missing {loc[0]}")
        elif error["type"] == "extra_forbidden":
            out.append(f"{path_of(loc)}: unknown key")
        else:
            message = error["msg"].removeprefix("Value error, ")
            out.append(f"{path_of(loc)}: {message}" if loc else message)
    return out
