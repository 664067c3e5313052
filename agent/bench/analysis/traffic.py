"""The user's traffic (``--workload``): how much output a month, how much input per output token,
how peaky, and whether it needs tool calls.

Not to be confused with :mod:`agent.bench.tasks.workload`, which holds what the benchmark *sends*. This
module describes what the user will send in production; the recommendation prices each backend for
it. Given as ``KEY=VALUE,...`` on the command line or as a YAML file with the same keys::

    output_tokens_per_month: 2B      # or 2e9, 2000000000, 500M, 250k
    input_per_output: 5              # input tokens per output token (also "5:1")
    peak_to_average: 3               # the busiest hour's rate over the month's average rate
    tool_calls: yes                  # the workload needs native tool calls
    min_quality: 80%                 # answer-quality floor on the quality lane (or 0.8; no default)

Every key is optional; a missing one takes its default and the report says which ones did.
``min_quality`` has no default (no floor) and is the same floor as ``--min-quality``.
Pure parsing and arithmetic: the only I/O is reading the YAML file named on the command line.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import yaml

from ..results.constants import WORKLOAD_DEFAULTS as DEFAULTS
from .cost import HOURS_PER_MONTH

SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0

KEYS = tuple(DEFAULTS)
MIN_QUALITY = "min_quality"
"""The one optional key without a default: the answer-quality floor (``--min-quality``)."""
ALL_KEYS = (*KEYS, MIN_QUALITY)

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^\s*([+-]?[0-9][0-9_,]*(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_TRUE = {"yes", "true", "on", "1", "y"}
_FALSE = {"no", "false", "off", "0", "n"}


class WorkloadError(ValueError):
    """A ``--workload`` value that cannot be used; the message is one line that says what to fix."""


@dataclass(frozen=True, slots=True)
class Traffic:
    """The user's traffic, with which keys were given and which took their defaults."""

    output_tokens_per_month: float
    input_per_output: float
    peak_to_average: float
    tool_calls: bool
    source: str = "defaults"
    """``defaults``, ``option`` (KEY=VALUE on the command line) or ``file <name>``."""
    defaulted: tuple[str, ...] = KEYS
    """The keys that took their default."""
    min_quality: float | None = None
    """The answer-quality floor, a share; None: no floor."""

    @property
    def average_output_tok_per_s(self) -> float:
        """The month's output spread evenly over 730 hours."""
        return self.output_tokens_per_month / SECONDS_PER_MONTH

    @property
    def peak_output_tok_per_s(self) -> float:
        """The output rate of the busiest hour: what the instances must serve within the target."""
        return self.average_output_tok_per_s * self.peak_to_average

    def with_volume(self, output_tokens_per_month: float) -> Traffic:
        """The same traffic shape at another monthly volume."""
        return Traffic(output_tokens_per_month, self.input_per_output, self.peak_to_average, self.tool_calls,
                       self.source, self.defaulted, self.min_quality)

    def as_dict(self) -> dict[str, Any]:
        return {
            "output_tokens_per_month": self.output_tokens_per_month,
            "input_per_output": self.input_per_output,
            "peak_to_average": self.peak_to_average,
            "tool_calls": self.tool_calls,
            "average_output_tok_per_s": round(self.average_output_tok_per_s, 3),
            "peak_output_tok_per_s": round(self.peak_output_tok_per_s, 3),
            "source": self.source,
            "defaulted": list(self.defaulted),
            "min_quality": self.min_quality,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Traffic:
        """The traffic recorded in ``run.json`` (None or ``{}``: the defaults)."""
        if not data:
            return default_traffic()
        given = {k: data[k] for k in KEYS if k in data and k not in (data.get("defaulted") or ())}
        if data.get(MIN_QUALITY) is not None:
            given[MIN_QUALITY] = data[MIN_QUALITY]
        return from_mapping(given, source=str(data.get("source") or "option"))


def default_traffic() -> Traffic:
    return from_mapping({}, source="defaults")


def parse_number(key: str, value: Any) -> float:
    """``2B``, ``2e9``, ``2,000,000,000``, ``500M``, ``250k`` or a YAML number, as a float."""
    if isinstance(value, bool):
        raise WorkloadError(f"--workload {key}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = str(value).strip()
        ratio = re.fullmatch(r"\s*([0-9.]+)\s*:\s*([0-9.]+)\s*", text)
        if key == "input_per_output" and ratio:
            num, den = float(ratio.group(1)), float(ratio.group(2))
            if den == 0:
                raise WorkloadError(f"--workload {key}: {text!r} divides by zero")
            number = num / den
        else:
            match = _NUMBER.match(text)
            if not match:
                raise WorkloadError(f"--workload {key}: {text!r} is not a number (e.g. 2B, 500M, 2e9, 5)")
            number = float(match.group(1).replace(",", "").replace("_", "")) * _SUFFIXES.get(match.group(2).lower(), 1)
    if not math.isfinite(number):
        raise WorkloadError(f"--workload {key}: {value!r} is not a finite number")
    return number


def share_value(value: Any) -> float:
    """``0.8``, ``80%`` or a YAML number as a share in [0, 1].

    Raises:
        ValueError: not a share; the message says what to give.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a share (e.g. 0.8 or 80%)")
    raw = str(value).strip()
    try:
        share = float(raw[:-1]) / 100.0 if raw.endswith("%") else float(raw)
    except ValueError:
        raise ValueError(f"{value!r} is not a share (e.g. 0.8 or 80%)") from None
    if math.isnan(share) or not 0.0 <= share <= 1.0:
        raise ValueError(f"{value!r} is not between 0 and 1 (or 0% and 100%)")
    return share


def parse_bool(key: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise WorkloadError(f"--workload {key}: {value!r} is not yes or no")


def from_mapping(given: Mapping[str, Any], source: str) -> Traffic:
    """Validate the given keys (every problem in one line) and fill in the defaults."""
    unknown = [k for k in given if k not in ALL_KEYS]
    if unknown:
        raise WorkloadError(f"--workload: unknown key {', '.join(map(repr, unknown))}; the keys are "
                            f"{', '.join(ALL_KEYS)}")
    problems = []
    values: dict[str, Any] = {**DEFAULTS, MIN_QUALITY: None}
    for key, value in given.items():
        try:
            if key == MIN_QUALITY:
                values[key] = share_value(value)
            else:
                values[key] = parse_bool(key, value) if key == "tool_calls" else parse_number(key, value)
        except ValueError as exc:
            problem = str(exc).removeprefix("--workload ")
            problems.append(f"{key}: {problem}" if key == MIN_QUALITY else problem)
    if "output_tokens_per_month" in given and not problems and values["output_tokens_per_month"] <= 0:
        problems.append("output_tokens_per_month must be more than 0")
    if "input_per_output" in given and isinstance(values["input_per_output"], float) and values["input_per_output"] < 0:
        problems.append("input_per_output must be 0 or more")
    if "peak_to_average" in given and isinstance(values["peak_to_average"], float) and values["peak_to_average"] < 1:
        problems.append("peak_to_average must be at least 1 (the peak is never below the average)")
    if problems:
        raise WorkloadError("--workload " + "; ".join(problems))
    return Traffic(
        output_tokens_per_month=float(values["output_tokens_per_month"]),
        input_per_output=float(values["input_per_output"]),
        peak_to_average=float(values["peak_to_average"]),
        tool_calls=bool(values["tool_calls"]),
        source=source,
        defaulted=tuple(k for k in KEYS if k not in given),
        min_quality=values[MIN_QUALITY],
    )


def parse_spec(text: str) -> Traffic:
    """``KEY=VALUE,KEY=VALUE`` or the path of a YAML file with the same keys.

    Raises:
        WorkloadError: one line naming the problem and what to give instead.
    """
    text = text.strip()
    if not text:
        raise WorkloadError("--workload: empty; give KEY=VALUE,... or a YAML file")
    if "=" in text:
        given: dict[str, str] = {}
        for part in text.split(","):
            if not part.strip():
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip() or not value.strip():
                raise WorkloadError(f"--workload: {part.strip()!r} is not KEY=VALUE (keys: {', '.join(ALL_KEYS)})")
            given[key.strip().replace("-", "_")] = value.strip()
        return from_mapping(given, source="option")
    path = Path(text)
    if not path.is_file():
        raise WorkloadError(f"--workload: no file {text!r}; give KEY=VALUE,... (keys: {', '.join(KEYS)}) "
                            "or a YAML file with those keys")
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WorkloadError(f"--workload {text}: not readable YAML ({reason})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WorkloadError(f"--workload {text}: expected a mapping of {', '.join(KEYS)}")
    return from_mapping({str(k): v for k, v in data.items()}, source=f"file {path.name}")
