"""How the files users edit under ``rigs/`` are checked: frozen pydantic models, and every error they find
as one line with its field path.

The models forbid unknown keys and are validated once. A check that compares fields runs as a field
validator where the field it reads comes first (so it is reported beside every other field's problem), or
raises :func:`located` problems at the fields it names. :func:`problems` turns a ``ValidationError`` into
the project's wording: ``rigs.g6.port: must be int, got '8000'``; the union tags pydantic puts into a
location (a rig's ``kind``, an EC2 rig's ``runtime``) are dropped from the path.
"""

from __future__ import annotations

import collections.abc
import types
from dataclasses import dataclass
from typing import Annotated, Any, Callable, Iterable, Mapping, Union, get_args, get_origin

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

PROBLEM = "problem"
"""The error type of a problem the project words itself (its message is the whole message)."""
ABOUT_KEY = "about_key"
"""A problem worded about its key, shown at the entry that holds it (``prices.yaml``'s numbers)."""


class Frozen(BaseModel):
    """A model of a file users edit: immutable, and an unknown key is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True, use_attribute_docstrings=True)


def located(title: str, found: Iterable[tuple[tuple[str | int, ...], str]]) -> None:
    """Raise every ``(location, message)`` in ``found`` at once (locations relative to the model checking);
    nothing when ``found`` is empty."""
    errors = [InitErrorDetails(type=PydanticCustomError(PROBLEM, message), loc=loc, input=None)
              for loc, message in found]
    if errors:
        raise ValidationError.from_exception_data(title, errors)


def checked(base: Any, check: Callable[[Any], str | None], **schema: Any) -> Any:
    """``base`` with ``check`` run on the value (a message is a problem), and ``schema`` added to its JSON
    Schema (``minimum``, ``pattern``, ...) so an editor sees the same rule."""

    def run(value: Any) -> Any:
        message = check(value)
        if message:
            raise PydanticCustomError(PROBLEM, message)
        return value

    return Annotated[base, AfterValidator(run), Field(json_schema_extra=schema or None)]


def between(base: Any, low: float, high: float, message: str, *, above: bool = False) -> Any:
    """A number from ``low`` (or above it, when ``above``) to ``high``, else ``message``."""
    bound = {"exclusiveMinimum": low} if above else {"minimum": low}
    return checked(base, lambda v: None if (low < v if above else low <= v) and v <= high else message,
                   **bound, maximum=high)


def _string_list(value: Any) -> Any:
    if isinstance(value, list):
        bad = [v for v in value if not isinstance(v, str)]
        if bad:
            raise PydanticCustomError(PROBLEM, f"every entry must be a string (quote numbers), got {bad!r}")
    return value


Strings = Annotated[tuple[str, ...], BeforeValidator(_string_list)]
"""A list of strings, one problem naming the entries that are not (an unquoted number)."""


def _quoted(value: Any) -> Any:
    if not isinstance(value, str):
        raise PydanticCustomError(PROBLEM, f"must be a string (quote it), got {value!r}")
    return value


Quoted = Annotated[str, BeforeValidator(_quoted)]
"""A string value of a mapping (an environment variable): an unquoted number or flag is a problem."""


# --- pydantic's errors in the project's wording ------------------------------------------------------


@dataclass(frozen=True)
class Problem:
    """One problem: where (keys and list indexes, union tags dropped), what, and pydantic's error type."""

    where: tuple[str | int, ...]
    message: str
    type: str

    def path(self, root: str) -> str:
        """``rigs.g6.port``, ``ec2_on_demand[0].as_of``; ``root`` for the document itself."""
        text = ""
        for part in self.where:
            text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
        return text or root


_TYPE_NAMES = {"int_type": "int", "string_type": "str", "bool_type": "bool", "float_type": "int or float",
               "list_type": "list", "tuple_type": "list"}
_MAPPING_TYPES = ("dict_type", "model_type", "model_attributes_type")
_UNIONS = (Union, types.UnionType)


def problems(error: ValidationError, root: type[BaseModel]) -> list[Problem]:
    """Every error of ``error`` (raised validating ``root``) as a :class:`Problem`."""
    return [_problem(e, root) for e in error.errors(include_url=False)]


def _problem(error: Mapping[str, Any], root: type[BaseModel]) -> Problem:
    kind, ctx, value = error["type"], error.get("ctx") or {}, error.get("input")
    where, owner = _walk(root, tuple(error["loc"]))
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        where += (ctx["discriminator"].strip("'"),)
    if kind == "missing" or kind == "union_tag_not_found":
        message = "missing required field"
    elif kind == "extra_forbidden":
        allowed = sorted(f.alias or name for name, f in owner.model_fields.items()) if owner else []
        message = f"unknown key (allowed: {', '.join(allowed)})"
    elif kind in _TYPE_NAMES:
        message = f"must be {_TYPE_NAMES[kind]}, got {value!r}"
    elif kind in _MAPPING_TYPES:
        message = f"must be a mapping, got {type(value).__name__}"
    elif kind == "literal_error":
        expected = ctx["expected"].replace("'", "")
        message = f"must be {'one of ' if ' or ' in expected else ''}{expected.replace(' or ', ', ')}, got {value!r}"
    elif kind == "union_tag_invalid":
        message = f"must be one of {ctx['expected_tags'].replace(chr(39), '')}, got {ctx['tag']!r}"
    else:
        message = str(ctx["error"]) if kind == "value_error" else error["msg"]
    return Problem(where, message, kind)


def _strip(tp: Any, discriminator: str | None) -> tuple[Any, str | None]:
    """``tp`` without ``Annotated`` and ``None``, and the discriminator of the union it is, if any."""
    while True:
        if get_origin(tp) is Annotated:
            tp, *metadata = get_args(tp)
            discriminator = next((m.discriminator for m in metadata if getattr(m, "discriminator", None)),
                                 discriminator)
            continue
        members = [a for a in get_args(tp) if a is not type(None)] if get_origin(tp) in _UNIONS else []
        if discriminator is None and len(members) == 1:
            tp = members[0]
            continue
        return tp, discriminator


def _tags(member: Any, discriminator: str) -> tuple[Any, ...]:
    """The values of ``discriminator`` that choose ``member`` of a union (a model, or a union of models)."""
    tp, _ = _strip(member, None)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return get_args(tp.model_fields[discriminator].annotation)
    return tuple(tag for inner in get_args(tp) for tag in _tags(inner, discriminator))


def _walk(root: type[BaseModel], loc: tuple[str | int, ...]) -> tuple[tuple[str | int, ...], type[BaseModel] | None]:
    """``loc`` without union tags and dict-key markers, and the model whose key its last part is."""
    tp: Any = root
    discriminator: str | None = None
    where: list[str | int] = []
    owner: type[BaseModel] | None = None
    for step in loc:
        tp, discriminator = _strip(tp, discriminator)
        if discriminator is not None and get_origin(tp) in _UNIONS:
            member = next((m for m in get_args(tp) if step in _tags(m, discriminator)), None)
            tp, discriminator = member, None
            if member is not None:
                continue
        if step == "[key]":
            break
        where.append(step)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            owner = tp
            field = next((f for name, f in tp.model_fields.items() if (f.alias or name) == step), None)
            tp, discriminator = (field.annotation, field.discriminator) if field else (None, None)
        elif get_origin(tp) in (dict, collections.abc.Mapping, tuple, list):
            tp = get_args(tp)[-1 if get_origin(tp) in (dict, collections.abc.Mapping) else 0]
        else:
            tp = None
    return tuple(where), owner
