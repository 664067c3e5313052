"""Grade one BFCL case from its record, with BFCL's own AST checker.

The rules are BFCL's for function-calling models:

* ``simple``, ``multiple``, ``parallel``, ``parallel_multiple``: the calls the backend made (its
  tool interface, not its text) are decoded, every call's arguments as a JSON object, and handed
  to ``bfcl_eval``'s ``ast_checker`` with the case's function documents and possible answers. No
  call, or a call whose arguments do not decode, is wrong.
* ``irrelevance``: right when no call was made. As in BFCL, a call whose arguments do not decode
  counts as no call.

Beside the grade, each case says whether the answer wrote a call as text instead of making it
(the same detector as the counting grade, :mod:`agent.bench.grading.text_calls`), which is what a
broken tool parser looks like from outside.

The checker runs with what this project installs: ``bfcl_eval``'s checker module imports
``bfcl_eval.constants.model_config`` only to ask whether a model's tool names had their dots
replaced, and that module imports every model handler BFCL ships (``anthropic``, ``cohere`` ...),
which ``--no-deps`` leaves out. A small module registered under that name before the import
answers the one question: yes, dots became underscores (see :mod:`agent.bench.tasks.bfcl_tools`).
"""

from __future__ import annotations

import json
import sys
import types
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable, Final, Mapping, Sequence

from ..tasks.bfcl_cases import SETUP_HINT, BfclUnavailableError
from ..tasks.bfcl_tools import tool_name
from .text_calls import find_text_calls

CHECKER_MODEL: Final = "aws-inference"
"""The model name handed to BFCL's checker; mapped to "tool names had '.' replaced by '_'"."""
_MODEL_CONFIG: Final = "bfcl_eval.constants.model_config"

OUTCOMES: Final = ("correct", "wrong_call", "missed_call", "spurious_call", "error")


class DecodeError(ValueError):
    """A call's arguments are not a JSON object."""


@dataclass(frozen=True, slots=True)
class Grade:
    """The verdict on one case.

    Attributes:
        outcome: ``correct``, ``wrong_call`` (a call was made, the checker refused it),
            ``missed_call`` (no call where one was due), ``spurious_call`` (a call on an
            irrelevance case), ``error`` (the request failed: not graded) or ``not_offered`` (the case needs what
            the backend's endpoint does not offer, so it was not sent: not graded, not a failure).
        correct: Whether the answer is right; None for an error or a case not offered.
        reason: The checker's reason for a wrong answer, or a note.
        text_call: A snippet of a call written as text instead of made (None when none).
        calls: The decoded calls (``[{name: {param: value}}]``), None when they did not decode.
    """

    outcome: str
    correct: bool | None
    reason: str | None = None
    text_call: str | None = None
    calls: list[dict[str, Any]] | None = None


@lru_cache(maxsize=1)
def checker() -> Callable[..., dict[str, Any]]:
    """BFCL's ``ast_checker``, bound to this project's model name and to Python.

    Raises:
        BfclUnavailableError: ``bfcl-eval`` is not installed.
    """
    if _MODEL_CONFIG not in sys.modules:
        shim = types.ModuleType(_MODEL_CONFIG, "Stands in for BFCL's model registry: only the checker's "
                                               "dot-to-underscore question is answered.")
        shim.MODEL_CONFIG_MAPPING = {}  # type: ignore[attr-defined]
        sys.modules[_MODEL_CONFIG] = shim
    try:
        from bfcl_eval.constants.enums import Language
        from bfcl_eval.eval_checker.ast_eval import ast_checker as module
    except ImportError as exc:
        raise BfclUnavailableError(f"BFCL's checker cannot be imported ({exc}); {SETUP_HINT}") from None
    module.MODEL_CONFIG_MAPPING.setdefault(CHECKER_MODEL, types.SimpleNamespace(underscore_to_dot=True))

    def check(functions: Sequence[Mapping[str, Any]], calls: list[dict[str, Any]],
              ground_truth: Sequence[Mapping[str, Any]], category: str) -> dict[str, Any]:
        return module.ast_checker(list(functions), calls, list(ground_truth), Language.PYTHON, category, CHECKER_MODEL)

    return check


def decode_calls(calls: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``[{"name", "arguments"}]`` as made into BFCL's ``[{name: {param: value}}]``.

    Arguments arrive as a JSON string (OpenAI) or an object (Bedrock, the constrained mode).

    Raises:
        DecodeError: a call's arguments are not a JSON object.
    """
    out = []
    for call in calls:
        args = call.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError:
                raise DecodeError(f"arguments of {call.get('name')!r} are not JSON: {args[:80]!r}") from None
        if not isinstance(args, dict):
            raise DecodeError(f"arguments of {call.get('name')!r} are not a JSON object: {str(args)[:80]!r}")
        out.append({str(call.get("name")): args})
    return out


def text_call(text: str | None, functions: Sequence[Mapping[str, Any]]) -> str | None:
    """A snippet of a tool call written in ``text`` instead of made, or None (the one detector,
    :func:`agent.bench.grading.text_calls.find_text_calls`)."""
    if not text:
        return None
    names = sorted({n for f in functions for n in (f["name"], tool_name(f["name"]))})
    found = find_text_calls([text], [], names)
    return found[0].snippet if found else None


def grade(record: Mapping[str, Any]) -> Grade:
    """Grade one ``part: bfcl`` record (a pure function of the record)."""
    if record.get("not_offered"):
        return Grade("not_offered", None, str(record["not_offered"]))
    if record.get("error"):
        return Grade("error", None, str(record["error"]))
    category = record["category"]
    functions = record.get("functions") or []
    made = record.get("calls") or []
    written = None if record.get("constrained") or made else text_call(record.get("text"), functions)
    try:
        calls = decode_calls(made)
    except DecodeError as exc:
        if category == "irrelevance":
            return Grade("correct", True, f"a call was made but did not decode, which BFCL counts as no call: {exc}")
        return Grade("wrong_call", False, str(exc))
    if category == "irrelevance":
        if calls:
            return Grade("spurious_call", False, "a call was made where no function fits", calls=calls)
        return Grade("correct", True, text_call=written, calls=calls)
    if not calls:
        return Grade("missed_call", False, "no call was made", text_call=written, calls=calls)
    try:
        result = checker()(functions, calls, record.get("ground_truth") or [], category)
    except BfclUnavailableError:
        raise
    except Exception as exc:  # noqa: BLE001 - an answer the checker cannot read is a wrong answer, not a crash
        return Grade("wrong_call", False, f"the checker could not read the calls ({type(exc).__name__}: {exc})"[:300],
                     calls=calls)  # fmt: skip
    if result.get("valid"):
        return Grade("correct", True, calls=calls)
    return Grade("wrong_call", False, _reason(result), calls=calls)


def _reason(result: Mapping[str, Any]) -> str:
    """The checker's first error, and for an unmatched parallel call the first reason it gave."""
    errors = result.get("error") or []
    first = errors[0] if errors else result.get("error_type", "refused")
    text = first if isinstance(first, str) else json.dumps(first, default=str)
    detail = next(iter(errors[1].values()), {}) if len(errors) > 1 and isinstance(errors[1], dict) else {}
    if isinstance(detail, dict) and detail.get("sub_error"):
        text += f" ({detail['sub_error'][0]})"
    kind = result.get("error_type")
    return (f"{kind}: {text}" if kind else text)[:300]
