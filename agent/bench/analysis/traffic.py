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
    arrival: poisson                 # how requests arrive in the open loop: constant, poisson or gamma
    burstiness: 0.5                  # gamma's shape (1 is Poisson; below 1 burstier), with arrival: gamma
    request_rate: 3                  # requests per second at the peak (default: from the peak's output rate)

Every key is optional; a missing one takes its default and the report says which ones did.
``min_quality`` has no default (no floor) and is the same floor as ``--min-quality``; ``request_rate`` has none
either: it follows from the peak's output rate and the mean reply (:attr:`Traffic.peak_req_per_s`).
The volume and decision keys (:data:`REPRICING_KEYS`) only price what was measured; every other key shapes the
traffic that is sent, so evidence is re-priced only for the volume keys (:func:`repriced`).
Pure parsing and arithmetic: the only I/O is reading the YAML file named on the command line.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated, Any, Callable, Mapping

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo, \
    WithJsonSchema, model_validator
from pydantic_core import PydanticCustomError

from ..results.blocks.recommendation import Workload
from ..results.constants import WORKLOAD_DEFAULTS as DEFAULTS
from ..tasks.arrivals import ARRIVALS
from ..tasks.workload import CHAT_MAX_TOKENS
from .cost import HOURS_PER_MONTH

SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0

MIN_QUALITY = "min_quality"
"""The one optional key without a default: the answer-quality floor (``--min-quality``)."""

_SUFFIXES = {"k": 1e3, "m": 1e6, "b": 1e9, "g": 1e9, "t": 1e12}
_NUMBER = re.compile(r"^\s*([+-]?[0-9][0-9_,]*(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_TRUE = {"yes", "true", "on", "1", "y"}
_FALSE = {"no", "false", "off", "0", "n"}


class WorkloadError(ValueError):
    """A ``--workload`` value that cannot be used; the message is one line that says what to fix."""


def _problem(text: str) -> PydanticCustomError:
    """A problem worded in full (the message is the line the user reads, never a template)."""
    return PydanticCustomError("workload", "{problem}", {"problem": text})


def parse_number(key: str, value: Any) -> float:
    """``2B``, ``2e9``, ``2,000,000,000``, ``500M``, ``250k`` or a YAML number, as a float (``input_per_output``
    also ``5:1``).

    Raises:
        WorkloadError: ``KEY: what is wrong`` (e.g. ``peak_to_average: 'x' is not a number ...``).
    """
    if isinstance(value, bool):
        raise WorkloadError(f"{key}: expected a number, got {value!r}")
    if isinstance(value, (int, float)):
        number = float(value)
    else:
        text = str(value).strip()
        ratio = re.fullmatch(r"\s*([0-9.]+)\s*:\s*([0-9.]+)\s*", text)
        if key == "input_per_output" and ratio:
            num, den = float(ratio.group(1)), float(ratio.group(2))
            if den == 0:
                raise WorkloadError(f"{key}: {text!r} divides by zero")
            number = num / den
        else:
            match = _NUMBER.match(text)
            if not match:
                raise WorkloadError(f"{key}: {text!r} is not a number (e.g. 2B, 500M, 2e9, 5)")
            number = float(match.group(1).replace(",", "").replace("_", "")) * _SUFFIXES.get(match.group(2).lower(), 1)
    if not math.isfinite(number):
        raise WorkloadError(f"{key}: {value!r} is not a finite number")
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
    raise WorkloadError(f"{key}: {value!r} is not yes or no")


def _number(value: Any, info: ValidationInfo) -> float:
    try:
        return parse_number(info.field_name or "", value)
    except WorkloadError as exc:
        raise _problem(str(exc)) from None


def _yes_no(value: Any, info: ValidationInfo) -> bool:
    try:
        return parse_bool(info.field_name or "", value)
    except WorkloadError as exc:
        raise _problem(str(exc)) from None


def _share(value: Any, info: ValidationInfo) -> float | None:
    if value is None:
        return None
    try:
        return share_value(value)
    except ValueError as exc:
        raise _problem(f"{info.field_name}: {exc}") from None


def _bound(holds: Callable[[float], bool], wording: str) -> AfterValidator:
    """A number's range: ``KEY <wording>`` when ``holds`` is false."""
    def check(value: float, info: ValidationInfo) -> float:
        if not holds(value):
            raise _problem(f"{info.field_name} {wording}")
        return value
    return AfterValidator(check)


def _written_as(*alternatives: dict[str, Any]) -> WithJsonSchema:
    """What an editor accepts for a key: a number, or the words a person writes (``2B``, ``5:1``, ``yes``)."""
    return WithJsonSchema({"anyOf": list(alternatives)})


_TEXT = {"type": "string"}
Volume = Annotated[float, BeforeValidator(_number), _bound(lambda v: v > 0, "must be more than 0"),
                   _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT)]
Ratio = Annotated[float, BeforeValidator(_number), _bound(lambda v: v >= 0, "must be 0 or more"),
                  _written_as({"type": "number", "minimum": 0}, _TEXT)]
Peak = Annotated[float, BeforeValidator(_number),
                 _bound(lambda v: v >= 1, "must be at least 1 (the peak is never below the average)"),
                 _written_as({"type": "number", "minimum": 1}, _TEXT)]
YesNo = Annotated[bool, BeforeValidator(_yes_no), _written_as({"type": "boolean"}, _TEXT)]
Share = Annotated[float | None, BeforeValidator(_share),
                  _written_as({"type": "number", "minimum": 0, "maximum": 1}, _TEXT, {"type": "null"})]


# --- the open loop's keys: how requests arrive (arrival, burstiness, request_rate) -------------------------


def _arrival(value: Any, info: ValidationInfo) -> str:
    text = str(value).strip().lower()
    if text not in ARRIVALS:
        raise _problem(f"{info.field_name}: {value!r} is not one of {', '.join(ARRIVALS)}")
    return text


def _optional_number(value: Any, info: ValidationInfo) -> float | None:
    return None if value is None else _number(value, info)


def _positive_or_none(value: float | None, info: ValidationInfo) -> float | None:
    if value is not None and not value > 0:
        raise _problem(f"{info.field_name} must be more than 0")
    return value


Arrival = Annotated[str, BeforeValidator(_arrival), WithJsonSchema({"enum": list(ARRIVALS)})]
Shape = Annotated[float, BeforeValidator(_number), _bound(lambda v: v > 0, "must be more than 0 (1 is Poisson)"),
                  _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT)]
Rate = Annotated[float | None, BeforeValidator(_optional_number), AfterValidator(_positive_or_none),
                 _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT, {"type": "null"})]


class TrafficKeys(BaseModel):
    """The keys of a workload, as ``--workload KEY=VALUE,...`` or a YAML file gives them: each key one field
    (a type that reads the forms people write, and its default)."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, use_attribute_docstrings=True)

    output_tokens_per_month: Volume = DEFAULTS["output_tokens_per_month"]
    """Output tokens a month: ``2B``, ``2e9``, ``2,000,000,000``, ``500M``, ``250k``."""
    input_per_output: Ratio = DEFAULTS["input_per_output"]
    """Input tokens per output token (also ``5:1``)."""
    peak_to_average: Peak = DEFAULTS["peak_to_average"]
    """The busiest hour's rate over the month's average rate."""
    tool_calls: YesNo = DEFAULTS["tool_calls"]
    """The workload needs native tool calls (``yes``/``no``)."""
    min_quality: Share = None
    """The answer-quality floor on the quality lane (``0.8`` or ``80%``; no default: no floor); the same floor as
    ``--min-quality``."""

    # --- the open loop's keys (``--rate``): how requests arrive ---
    arrival: Arrival = DEFAULTS["arrival"]
    """How requests arrive in the open loop (``--rate``): ``constant`` gaps, ``poisson`` (exponential gaps) or
    ``gamma`` (gaps of shape ``burstiness``); AIPerf's ``--arrival-pattern``."""
    burstiness: Shape = DEFAULTS["burstiness"]
    """Gamma's shape with ``arrival: gamma``: the gaps' CV is 1 / sqrt(burstiness); 1 is Poisson, below 1 burstier
    (vLLM's ``--burstiness``, AIPerf's ``--arrival-smoothness``)."""
    request_rate: Rate = None
    """Requests per second at the peak (AIPerf's ``--request-rate``); no default: the peak's output tok/s over the
    mean reply's output tokens."""

    @model_validator(mode="after")
    def _shape_needs_gamma(self) -> TrafficKeys:
        if "burstiness" in self.model_fields_set and self.arrival != "gamma" and self.burstiness != 1.0:
            raise _problem(f"burstiness: only arrival=gamma has a shape (arrival is {self.arrival}); add "
                           "arrival=gamma or leave burstiness out")
        return self


KEYS = tuple(name for name, field in TrafficKeys.model_fields.items() if field.default is not None)
"""The keys with a default (``defaulted`` names those the user left out)."""
ALL_KEYS = tuple(TrafficKeys.model_fields)
REPRICING_KEYS = ("output_tokens_per_month", "peak_to_average", "tool_calls", MIN_QUALITY)
"""The volume and decision keys: they only price or judge what was measured (how much, how peaky, what is needed).
Every other key shapes the requests sent, so evidence measured for one shape is never re-priced for another
(:func:`repriced`)."""


class Traffic(TrafficKeys):
    """The user's traffic, with which keys were given and which took their defaults."""

    source: str = "defaults"
    """``defaults``, ``option`` (KEY=VALUE on the command line) or ``file <name>``."""
    defaulted: tuple[str, ...] = KEYS
    """The keys that took their default."""

    @property
    def average_output_tok_per_s(self) -> float:
        """The month's output spread evenly over 730 hours."""
        return self.output_tokens_per_month / SECONDS_PER_MONTH

    @property
    def peak_output_tok_per_s(self) -> float:
        """The output rate of the busiest hour: what the instances must serve within the target."""
        return self.average_output_tok_per_s * self.peak_to_average

    @property
    def output_tokens_per_request(self) -> float:
        """The mean reply the request rate is derived with: the workload's ``output_tokens_mean`` where it has
        one, else the chat part's reply of :data:`~agent.bench.tasks.workload.CHAT_MAX_TOKENS` tokens."""
        mean = getattr(self, "output_tokens_mean", None)
        return float(mean) if mean else float(CHAT_MAX_TOKENS)

    @property
    def peak_req_per_s(self) -> float:
        """Requests per second at the peak: ``request_rate``, else the peak's output tok/s over the mean reply."""
        return self.request_rate or self.peak_output_tok_per_s / self.output_tokens_per_request

    def with_volume(self, output_tokens_per_month: float) -> Traffic:
        """The same traffic shape at another monthly volume."""
        return self.model_copy(update={"output_tokens_per_month": output_tokens_per_month})

    def record(self) -> Workload:
        """What ``run.json`` and the summary's recommendation keep: the keys, the two rates, where they came from."""
        return Workload(**self.model_dump(), average_output_tok_per_s=round(self.average_output_tok_per_s, 3),
                        peak_output_tok_per_s=round(self.peak_output_tok_per_s, 3),
                        peak_req_per_s=round(self.peak_req_per_s, 4))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Traffic:
        """The traffic recorded in ``run.json`` (None or ``{}``: the defaults)."""
        if not data:
            return default_traffic()
        defaulted = data.get("defaulted") or ()
        given = {k: data[k] for k in ALL_KEYS if data.get(k) is not None and k not in defaulted}
        return from_mapping(given, source=str(data.get("source") or "option"))


def default_traffic() -> Traffic:
    return from_mapping({}, source="defaults")


def from_mapping(given: Mapping[str, Any], source: str) -> Traffic:
    """Validate the given keys (every problem in one line) and fill in the defaults."""
    try:
        keys = TrafficKeys.model_validate(given)
    except ValidationError as exc:
        raise WorkloadError(_one_line(exc)) from None
    return Traffic(**keys.model_dump(), source=source, defaulted=tuple(k for k in KEYS if k not in given))


def _one_line(exc: ValidationError) -> str:
    """``--workload: unknown key ...`` and every problem of the values, in one line."""
    errors = exc.errors()
    unknown = [str(e["loc"][0]) for e in errors if e["type"] == "extra_forbidden"]
    problems = [e["msg"] for e in errors if e["type"] != "extra_forbidden"]
    head = (f"--workload: unknown key {', '.join(map(repr, unknown))}; the keys are {', '.join(ALL_KEYS)}"
            if unknown else "")
    return "; ".join([head, *problems]) if head else "--workload " + "; ".join(problems)


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


class ShapeChanged(WorkloadError):
    """Evidence asked to be re-priced for traffic of another shape: its latency was measured for the run's."""


def repriced(measured: Traffic, asked: Traffic) -> Traffic:
    """The run's traffic (``measured``) with the volume keys ``asked`` gives (:data:`REPRICING_KEYS`): what
    ``python -m agent.report --workload`` prices the evidence for. A key ``asked`` leaves out keeps the run's value.

    Raises:
        ShapeChanged: ``asked`` gives a key that shapes the traffic another value than the run sent; the message
            names each and the run that would measure it.
    """
    given, kept = _given(asked), _given(measured)
    changed = [k for k, v in given.items() if k not in REPRICING_KEYS and v != getattr(measured, k)]
    if changed:
        shape = ", ".join(f"{k}={_spec_value(getattr(measured, k))}" for k in changed)
        spec = ",".join(f"{k}={_spec_value(v)}" for k, v in {**kept, **given}.items())
        raise ShapeChanged(f"--workload: {', '.join(changed)} shape{'s' if len(changed) == 1 else ''} the traffic, "
                           f"and this evidence's latency was measured for {shape}; re-pricing changes only "
                           f"{', '.join(REPRICING_KEYS)}. To measure that traffic, run: python -m agent.run "
                           f"--workload {spec}")
    return from_mapping({**kept, **given}, source=asked.source)


def _given(traffic: Traffic) -> dict[str, Any]:
    """The keys ``traffic`` was given (not defaulted), with their values."""
    return {k: getattr(traffic, k) for k in ALL_KEYS if k not in traffic.defaulted and getattr(traffic, k) is not None}


def _spec_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)
