"""Tool calls written as plain text instead of being made.

A model without a working tool parser writes its call into the reply (``count_ids(op=">=",
value=10)``, ``{"name": "count_ids", "arguments": {...}}``, ``<tool_call>...</tool_call>``,
Gemma 4's ``<|tool_call>call:count_ids{op:<|"|>>=<|"|>,value:10}<tool_call|>`` (or, with the
special tokens skipped, ``call:count_ids{...}``), ``[TOOL_CALLS]``, ``<|python_tag|>``, a
``tool_code`` block, Llama's ``<function=...>``, an OpenAI-style ``"tool_calls": [...]`` written out).
This is the one detector: the counting grade and the BFCL grade both use it. :func:`find_text_calls` finds each
such call once, however many of these marks it carries (one JSON call has a name key and an
argument object: it is one call), and tells a call written *instead of* being made from a
description of a call that *was* made ("I called count_ids(op='>=', value=10) and got 8"):
a text call whose tool was called for real with the same arguments, or whose arguments cannot
be read, describes that call and is not charged.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


@dataclass(frozen=True, slots=True)
class TextCall:
    """One tool call found in the model's text.

    Attributes:
        snippet: The call as written (trimmed to 200 characters).
        name: The tool it names (None when the marks name none).
        arguments: Its arguments when they could be read, else None.
        charged: True when it was written instead of being made; False when it describes a call
            that was made.
    """

    snippet: str
    name: str | None
    arguments: Any
    charged: bool


def _patterns(
    tool_names: Sequence[str], positional: Mapping[str, Sequence[str]]
) -> tuple[re.Pattern[str], list[re.Pattern[str]]]:
    """``name(`` for each tool; a JSON name key; a bare arguments object (its first two keys)."""
    names = "|".join(re.escape(n) for n in sorted(tool_names, key=len, reverse=True)) or r"(?!x)x"
    paren = re.compile(rf"(?<![A-Za-z0-9_.])({names})\s*\(")
    keyed = [re.compile(rf"\"(?:name|function|tool|tool_name)\"\s*:\s*\"({names})\"")]
    keyed.append(re.compile(rf"(?<![A-Za-z0-9_])call:({names})\s*\{{"))
    for params in positional.values():
        if len(params) >= 2:
            a, b = (re.escape(p) for p in params[:2])
            keyed.append(re.compile(rf"\"{a}\"\s*:\s*(?:\"[^\"]*\"|[^,{{}}]+)\s*,\s*\"{b}\""))
    return paren, keyed


_GEMMA_CALL = re.compile(rf"(?<![A-Za-z0-9_])call:({_NAME})\s*(\{{)")
_GEMMA_QUOTE = '<|"|>'
_MARKERS = [
    re.compile(r"<\|tool_call>"),
    re.compile(r"<\s*tool_call\s*>"),
    re.compile(r"\[TOOL_CALLS\]"),
    re.compile(r"<\|python_tag\|>"),
    re.compile(r"```\s*tool_code\b"),
    re.compile(r"<function="),
    re.compile(r"\"tool_calls\"\s*:"),
]
_CLOSERS = {"<|": re.compile(r"<tool_call\|>"), "<f": re.compile(r"</function>"),
            "<": re.compile(r"<\s*/\s*tool_call\s*>"), "`": re.compile(r"```")}


def _balanced(text: str, start: int, open_ch: str, close_ch: str) -> int:
    """End (exclusive) of the bracket group opening at ``start``; the text's end if unclosed."""
    depth, quote, i = 0, "", start
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
        elif ch == open_ch:
            depth += 1
        elif ch == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return len(text)


def _enclosing_object(text: str, pos: int) -> tuple[int, int] | None:
    """The outermost ``{...}`` around ``pos`` (within 400 characters), or None."""
    best = None
    i = pos
    while i >= max(0, pos - 400):
        if text[i] == "{":
            end = _balanced(text, i, "{", "}")
            if end > pos:
                best = (i, end)
        i -= 1
    return best


def _spans(text: str, paren: re.Pattern[str], keyed: list[re.Pattern[str]]) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for m in paren.finditer(text):
        spans.append((m.start(), _balanced(text, m.end() - 1, "(", ")")))
    for pattern in keyed:
        for m in pattern.finditer(text):
            if m.group(0).startswith("call:"):  # Gemma 4: the object follows the name
                spans.append((m.start(), _balanced(text, m.end() - 1, "{", "}")))
            else:
                spans.append(_enclosing_object(text, m.start()) or (m.start(), m.end()))
    for marker in _MARKERS:
        for m in marker.finditer(text):
            opening = m.group(0).lstrip()
            closer = _CLOSERS.get(opening[:2]) or _CLOSERS.get(opening[0])
            close = closer.search(text, m.end()) if closer else None
            if close:
                spans.append((m.start(), close.end()))
            else:
                rest = re.match(r"\s*([\[{])", text[m.end() :])
                if rest:
                    bracket = m.end() + rest.start(1)
                    pair = {"[": "]", "{": "}"}[rest.group(1)]
                    spans.append((m.start(), _balanced(text, bracket, rest.group(1), pair)))
                else:
                    line_end = text.find("\n", m.end())
                    spans.append((m.start(), len(text) if line_end < 0 else line_end))
    # a closing tag alone (the opening one lost) is still one call
    for m in re.finditer(r"<\s*/\s*tool_call\s*>", text):
        spans.append((m.start(), m.end()))
    return _merge(spans)


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _literal(token: str) -> Any:
    token = token.strip()
    try:
        return json.loads(token)
    except ValueError:
        pass
    if len(token) >= 2 and token[0] == token[-1] and token[0] in "'\"":
        return token[1:-1]
    return token


def _paren_arguments(inner: str, positional: Sequence[str]) -> dict[str, Any] | None:
    parts = [p for p in re.split(r",(?=(?:[^\"']|\"[^\"]*\"|'[^']*')*$)", inner) if p.strip()]
    args: dict[str, Any] = {}
    for i, part in enumerate(parts):
        m = re.match(rf"\s*({_NAME})\s*[=:]\s*(.+)$", part, re.DOTALL)
        if m:
            args[m.group(1)] = _literal(m.group(2))
        elif i < len(positional):
            args[positional[i]] = _literal(part)
        else:
            return None
    return args


def _gemma_arguments(body: str) -> dict[str, Any] | None:
    """``{op:<|"|>>=<|"|>,value:10}`` as a dict (Gemma 4 quotes strings with ``<|"|>`` and leaves
    keys bare), or None when it does not read as one."""
    text = body.replace(_GEMMA_QUOTE, '"')
    text = re.sub(r'([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:', r'\1"\2":', text)
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _json_call(snippet: str, names: set[str]) -> tuple[str | None, Any]:
    start = snippet.find("{")
    if start < 0:
        return None, None
    try:
        obj = json.loads(snippet[start : _balanced(snippet, start, "{", "}")])
    except ValueError:
        return None, None
    if not isinstance(obj, dict):
        return None, None
    name = next((obj[k] for k in ("name", "function", "tool", "tool_name") if isinstance(obj.get(k), str)), None)
    args = next((obj[k] for k in ("arguments", "parameters", "input", "args") if k in obj), None)
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            args = None
    if name is None and args is None:
        return None, obj  # a bare arguments object: {"op": ">=", "value": 10}
    return name, args


def _read(text: str, span: tuple[int, int], paren: re.Pattern[str], names: set[str],
          positional: Mapping[str, Sequence[str]]) -> tuple[str | None, Any]:
    snippet = text[span[0] : span[1]]
    g = _GEMMA_CALL.search(snippet)
    if g:
        end = _balanced(snippet, g.start(2), "{", "}")
        return g.group(1), _gemma_arguments(snippet[g.start(2) : end])
    m = paren.search(snippet)
    if m:
        end = _balanced(snippet, m.end() - 1, "(", ")")
        inner = snippet[m.end() : end - 1] if snippet[end - 1 : end] == ")" else None
        args = None if inner is None else _paren_arguments(inner, positional.get(m.group(1), ()))
        return m.group(1), args
    name, args = _json_call(snippet, names)
    if name is None:
        before = text[max(0, span[0] - 60) : span[0]]
        named = [n for n in names if re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}(?![A-Za-z0-9_])", before)]
        name = named[-1] if len(named) == 1 else None
    return name, args


def find_text_calls(
    texts: Sequence[str],
    made: Sequence[Mapping[str, Any]],
    tool_names: Sequence[str],
    positional: Mapping[str, Sequence[str]] | None = None,
) -> list[TextCall]:
    """Every tool call written in ``texts``, each once, charged unless it describes a call in ``made``.

    Args:
        texts: The model's text blocks, in order.
        made: The calls the model really made (``{"name", "input"}``).
        tool_names: The tools that were offered.
        positional: Parameter order per tool, to read ``count_ids(">=", 10)``.
    """
    paren, keyed = _patterns(tool_names, positional or {})
    names = set(tool_names)
    made_calls = [(str(c.get("name")), c.get("input")) for c in made]
    found: list[TextCall] = []
    for text in texts:
        if not text:
            continue
        for span in _spans(text, paren, keyed):
            name, args = _read(text, span, paren, names, positional or {})
            described = any(n == name and (args is None or args == made_input) for n, made_input in made_calls)
            snippet = " ".join(text[span[0] : span[1]].split())[:200]
            found.append(TextCall(snippet, name, args, not described))
    return found
