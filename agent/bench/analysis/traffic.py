"""The user's traffic (``--workload``): what a request is (its prompt and output lengths, a shared prefix,
sessions, or the user's own requests or trace), how much output a month, how peaky, and whether it needs
tool calls.

Not to be confused with :mod:`agent.bench.tasks.reference`, which holds the benchmark's fixed prompts. This
module describes what the user will send in production; the chat part sends it (:meth:`Traffic.shape`) and
the recommendation prices each backend for it. Given as ``KEY=VALUE,...`` on the command line or as a YAML
file with the same keys::

    output_tokens_per_month: 2B      # or 2e9, 2000000000, 500M, 250k
    prompt_input_tokens_mean: 1000   # SageMaker AI's and AIPerf's names; also ..._stddev
    output_tokens_mean: 200          # each request's max_tokens; also output_tokens_stddev
    peak_to_average: 3               # the busiest hour's rate over the month's average rate
    tool_calls: yes                  # the workload needs native tool calls
    min_quality: 80%                 # answer-quality floor on the quality lane (or 0.8; no default)
    arrival: poisson                 # how requests arrive in the open loop (--rate): constant, poisson or gamma
    burstiness: 0.5                  # gamma's shape (1 is Poisson; below 1 burstier), with arrival: gamma
    request_rate: 3                  # requests per second at the peak (default: from the peak's output rate)

or ``preset: chat`` (``reference``, ``chat``, ``rag``, ``summarization``, ``code``, ``agentic``), ``prompts: FILE``,
``trace: FILE``, with ``shared_prefix_tokens``, ``turns``, ``think_time_s``, ``seed``. Every key is optional;
the traffic is always consistent: ``input_per_output`` follows from the lengths sent, the lengths follow from
``input_per_output`` when only it is given, and the two given together must agree within 5%. With no length
at all the run sends the reference's prompt and 100 tokens (``preset: reference``) and prices what that sends.
The report says which keys took their default and which followed from others. The volume and decision keys
(:data:`REPRICING_KEYS`) only price what was measured; every other key shapes the traffic sent, so evidence is
re-priced only for them (:func:`repriced`).
Pure parsing and arithmetic: the only I/O is reading the files named on the command line.
"""

from __future__ import annotations

import math
import re
import shlex
import statistics
from pathlib import Path
from typing import Annotated, Any, Callable, Mapping

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, ValidationError, ValidationInfo, \
    WithJsonSchema
from pydantic_core import PydanticCustomError

from ..results.blocks.recommendation import Workload
from ..results.constants import WORKLOAD_DEFAULTS as DEFAULTS
from ..tasks.traffic.files import TrafficFileError, read_prompts, read_trace
from ..tasks.traffic.plan import Shape, TrafficPlan
from ..tasks.arrivals import ARRIVALS
from ..tasks.traffic.presets import PRESETS, REFERENCE, REFERENCE_PROMPT_TOKENS
from ..tasks.reference import CHAT_MAX_TOKENS
from .cost import HOURS_PER_MONTH

SECONDS_PER_MONTH = HOURS_PER_MONTH * 3600.0

KEYS = tuple(DEFAULTS)
"""The keys with a plain default (``defaulted`` names those the user left out); the others follow from the lengths
or a preset, or have none (``min_quality``)."""

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
    def check(value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and not holds(value):
            raise _problem(f"{info.field_name} {wording}")
        return value
    return AfterValidator(check)


def _written_as(*alternatives: dict[str, Any]) -> WithJsonSchema:
    """What an editor accepts for a key: a number, or the words a person writes (``2B``, ``5:1``, ``yes``)."""
    return WithJsonSchema({"anyOf": list(alternatives)})


def _maybe(read: Callable[[Any, ValidationInfo], Any]) -> BeforeValidator:
    """``read``, or None for a key left out (a YAML ``null``)."""
    return BeforeValidator(lambda value, info: None if value is None else read(value, info))


def _whole(value: Any, info: ValidationInfo) -> int:
    number = _number(value, info)
    if number != int(number):
        raise _problem(f"{info.field_name}: {value!r} is not a whole number")
    return int(number)


def _preset(value: Any, info: ValidationInfo) -> str:
    name = str(value).strip().lower()
    if name not in PRESETS:
        raise _problem(f"preset: {value!r} is not one of {', '.join(PRESETS)}")
    return name


def _file(value: Any, info: ValidationInfo) -> str:
    """A traffic file's path (relative to the workload YAML's folder when given in one), read and checked
    unless the context says the workload is a recorded one (``read_files`` False)."""
    context = info.context or {}
    path = Path(str(value).strip()).expanduser()
    if not path.is_absolute() and context.get("base"):
        path = Path(context["base"]) / path
    if context.get("read_files", True):
        try:
            (read_prompts if info.field_name == "prompts" else read_trace)(path)
        except TrafficFileError as exc:
            raise _problem(str(exc)) from None
    return str(path)


_TEXT = {"type": "string"}
_NULL = {"type": "null"}
Volume = Annotated[float, BeforeValidator(_number), _bound(lambda v: v > 0, "must be more than 0"),
                   _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT)]
Ratio = Annotated[float | None, _maybe(_number), _bound(lambda v: v >= 0, "must be 0 or more"),
                  _written_as({"type": "number", "minimum": 0}, _TEXT, _NULL)]
Peak = Annotated[float, BeforeValidator(_number),
                 _bound(lambda v: v >= 1, "must be at least 1 (the peak is never below the average)"),
                 _written_as({"type": "number", "minimum": 1}, _TEXT)]
YesNo = Annotated[bool, BeforeValidator(_yes_no), _written_as({"type": "boolean"}, _TEXT)]
Share = Annotated[float | None, BeforeValidator(_share),
                  _written_as({"type": "number", "minimum": 0, "maximum": 1}, _TEXT, _NULL)]
Length = Annotated[float | None, _maybe(_number), _bound(lambda v: v > 0, "must be more than 0 tokens"),
                   _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT, _NULL)]
Spread = Annotated[float | None, _maybe(_number), _bound(lambda v: v >= 0, "must be 0 or more tokens"),
                   _written_as({"type": "number", "minimum": 0}, _TEXT, _NULL)]
Prefix = Annotated[int | None, _maybe(_whole), _bound(lambda v: v >= 0, "must be 0 or more tokens"),
                   _written_as({"type": "integer", "minimum": 0}, _TEXT, _NULL)]
Count = Annotated[int | None, _maybe(_whole), _bound(lambda v: v >= 1, "must be at least 1"),
                  _written_as({"type": "integer", "minimum": 1}, _TEXT, _NULL)]
Seconds = Annotated[float | None, _maybe(_number), _bound(lambda v: v >= 0, "must be 0 or more seconds"),
                    _written_as({"type": "number", "minimum": 0}, _TEXT, _NULL)]
Speed = Annotated[float | None, _maybe(_number), _bound(lambda v: v > 0, "must be more than 0"),
                  _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT, _NULL)]
Seed = Annotated[int | None, _maybe(_whole), _bound(lambda v: v >= 0, "must be 0 or more"),
                 _written_as({"type": "integer", "minimum": 0}, _TEXT, _NULL)]
PresetName = Annotated[str | None, _maybe(_preset), WithJsonSchema({"enum": [*PRESETS, None]})]
DataFile = Annotated[str | None, _maybe(_file), _written_as(_TEXT, _NULL)]


# --- the open loop's keys (``--rate``): how requests arrive -----------------------------------------------


def _arrival(value: Any, info: ValidationInfo) -> str:
    text = str(value).strip().lower()
    if text not in ARRIVALS:
        raise _problem(f"{info.field_name}: {value!r} is not one of {', '.join(ARRIVALS)}")
    return text


Arrival = Annotated[str, BeforeValidator(_arrival), WithJsonSchema({"enum": list(ARRIVALS)})]
Burstiness = Annotated[float, BeforeValidator(_number), _bound(lambda v: v > 0, "must be more than 0 (1 is Poisson)"),
                   _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT)]
Rate = Annotated[float | None, _maybe(_number), _bound(lambda v: v > 0, "must be more than 0"),
                 _written_as({"type": "number", "exclusiveMinimum": 0}, _TEXT, _NULL)]


class TrafficKeys(BaseModel):
    """The keys of a workload, as ``--workload KEY=VALUE,...`` or a YAML file gives them: each key one field
    (a type that reads the forms people write, and its default). The length keys are SageMaker AI's and
    AIPerf's names, so a spec written for them works here (docs/traffic.md, "Your traffic")."""

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, use_attribute_docstrings=True)

    output_tokens_per_month: Volume = DEFAULTS["output_tokens_per_month"]
    """Output tokens a month: ``2B``, ``2e9``, ``2,000,000,000``, ``500M``, ``250k``."""
    input_per_output: Ratio = None
    """Input tokens per output token (also ``5:1``); by default it follows from the lengths sent, and given with
    them it must agree within 5%; given alone, the prompts sent are this many times ``output_tokens_mean``."""
    peak_to_average: Peak = DEFAULTS["peak_to_average"]
    """The busiest hour's rate over the month's average rate."""
    tool_calls: YesNo = DEFAULTS["tool_calls"]
    """The workload needs native tool calls (``yes``/``no``)."""
    min_quality: Share = None
    """The answer-quality floor on the quality lane (``0.8`` or ``80%``; no default: no floor); the same floor as
    ``--min-quality``."""
    preset: PresetName = None
    """Lengths another benchmark publishes: ``reference`` (the reference's prompt and 100 tokens: the default when
    no length is given), ``chat``, ``rag``, ``summarization``, ``code``, ``agentic``; keys given beside it win."""
    prompt_input_tokens_mean: Length = None
    """Mean prompt tokens of a request as the server counts them (``usage.prompt_tokens``, the chat template
    included); with ``turns``, of each new user turn."""
    prompt_input_tokens_stddev: Spread = None
    """Standard deviation of the prompt tokens (0 by default: every prompt the mean)."""
    output_tokens_mean: Length = None
    """Mean output tokens asked of a request (its ``max_tokens``; exactly that many where the server allows it);
    100 by default, the reference's."""
    output_tokens_stddev: Spread = None
    """Standard deviation of the output tokens (0 by default)."""
    shared_prefix_tokens: Prefix = None
    """A system prompt of this many tokens that every request shares (0 by default)."""
    turns: Count = None
    """Turns of a session (1 by default): each turn sends the conversation so far with the model's real replies
    and a new user turn."""
    think_time_s: Seconds = None
    """Seconds between a reply and the session's next turn (0 by default)."""
    prompts: DataFile = None
    """Your own requests: a JSONL file of OpenAI chat requests (``messages``, optional ``max_tokens`` and
    ``tools``), sampled by ``seed``."""
    trace: DataFile = None
    """A Mooncake-format trace (JSONL: ``timestamp`` in ms, ``input_length``, ``output_length``, optional
    ``hash_ids`` of shared 512-token prefix blocks)."""
    trace_speed: Speed = None
    """How much faster than recorded the trace is replayed (1 by default)."""
    seed: Seed = None
    """The seed of the synthetic prompts, their lengths and the order a prompts file is sampled in (0 by default)."""

    # --- the open loop's keys (``--rate``): how requests arrive ---
    arrival: Arrival = DEFAULTS["arrival"]
    """How requests arrive in the open loop (``--rate``): ``constant`` gaps, ``poisson`` (exponential gaps) or
    ``gamma`` (gaps of shape ``burstiness``); AIPerf's ``--arrival-pattern``."""
    burstiness: Burstiness = DEFAULTS["burstiness"]
    """Gamma's shape with ``arrival: gamma``: the gaps' CV is 1 / sqrt(burstiness); 1 is Poisson, below 1 burstier
    (vLLM's ``--burstiness``, AIPerf's ``--arrival-smoothness``)."""
    request_rate: Rate = None
    """Requests per second at the peak (AIPerf's ``--request-rate``); no default: the peak's output tok/s over
    ``output_tokens_mean``."""


ALL_KEYS = tuple(TrafficKeys.model_fields)
LENGTH_KEYS = ("prompt_input_tokens_mean", "prompt_input_tokens_stddev", "output_tokens_mean", "output_tokens_stddev")
SHAPE_KEYS = (*LENGTH_KEYS, "shared_prefix_tokens", "turns")
"""The keys that say what a request is (a preset's, or a file's)."""
AGREEMENT = 0.05
"""``input_per_output`` given with the lengths must agree with them this closely."""
REPRICING_KEYS = ("output_tokens_per_month", "peak_to_average", "tool_calls", "min_quality")
"""The volume and decision keys: they only price or judge what was measured (how much, how peaky, what is needed).
Every other key shapes the requests sent, so evidence measured for one shape is never re-priced for another
(:func:`repriced`)."""
SHAPE_DEFAULTS: Mapping[str, Any] = {"prompt_input_tokens_stddev": 0.0, "output_tokens_mean": float(CHAT_MAX_TOKENS),
                                     "output_tokens_stddev": 0.0, "shared_prefix_tokens": 0, "turns": 1,
                                     "think_time_s": 0.0, "trace_speed": 1.0, "seed": 0}
"""What a key of the request's shape is when neither it nor a preset says."""


class Traffic(TrafficKeys):
    """The user's traffic as the run sends and prices it: every key resolved (given, from the preset or file, or
    following from the others), with which keys were given, which took their defaults and which followed."""

    input_per_output: Ratio = REFERENCE_PROMPT_TOKENS / CHAT_MAX_TOKENS
    preset: PresetName = REFERENCE
    prompt_input_tokens_mean: Length = float(REFERENCE_PROMPT_TOKENS)
    prompt_input_tokens_stddev: Spread = 0.0
    output_tokens_mean: Length = float(CHAT_MAX_TOKENS)
    output_tokens_stddev: Spread = 0.0
    shared_prefix_tokens: Prefix = 0
    turns: Count = 1
    think_time_s: Seconds = 0.0
    seed: Seed = 0
    source: str = "defaults"
    """``defaults``, ``option`` (KEY=VALUE on the command line) or ``file <name>``."""
    defaulted: tuple[str, ...] = ()
    """The keys that took their default."""
    derived: Mapping[str, str] = {}
    """The keys that followed from others (a preset, a file, the lengths), each with how."""

    @property
    def average_output_tok_per_s(self) -> float:
        """The month's output spread evenly over 730 hours."""
        return self.output_tokens_per_month / SECONDS_PER_MONTH

    @property
    def peak_output_tok_per_s(self) -> float:
        """The output rate of the busiest hour: what the instances must serve within the target."""
        return self.average_output_tok_per_s * self.peak_to_average

    @property
    def peak_req_per_s(self) -> float:
        """Requests per second at the peak: ``request_rate``, else the peak's output tok/s over the mean reply."""
        return self.request_rate or self.peak_output_tok_per_s / float(self.output_tokens_mean or CHAT_MAX_TOKENS)

    def with_volume(self, output_tokens_per_month: float) -> Traffic:
        """The same traffic shape at another monthly volume."""
        return self.model_copy(update={"output_tokens_per_month": output_tokens_per_month})

    def record(self) -> Workload:
        """What ``run.json`` and the summary's recommendation keep: the keys, the two rates, where they came from."""
        data = self.model_dump()
        return Workload(**{**data, "derived": dict(self.derived)},
                        average_output_tok_per_s=round(self.average_output_tok_per_s, 3),
                        peak_output_tok_per_s=round(self.peak_output_tok_per_s, 3),
                        peak_req_per_s=round(self.peak_req_per_s, 4))

    def shape(self) -> Shape:
        """What the chat part sends (the files read again: the run reads them where it starts)."""
        return Shape(seed=self.seed or 0, reference=self.preset == REFERENCE and not (self.prompts or self.trace),
                     prompt_mean=float(self.prompt_input_tokens_mean or 0),
                     prompt_stddev=float(self.prompt_input_tokens_stddev or 0),
                     output_mean=float(CHAT_MAX_TOKENS if self.prompts else self.output_tokens_mean or CHAT_MAX_TOKENS),
                     output_stddev=float(self.output_tokens_stddev or 0),
                     shared_prefix_tokens=int(self.shared_prefix_tokens or 0), turns=int(self.turns or 1),
                     think_time_s=float(self.think_time_s or 0),
                     prompts=read_prompts(Path(self.prompts)) if self.prompts else (),
                     trace=read_trace(Path(self.trace)) if self.trace else ())

    @classmethod
    def from_dict(cls, data: Workload | Mapping[str, Any] | None) -> Traffic:
        """The traffic recorded in ``run.json`` (its model or its keys; None or ``{}``: the defaults), as it was
        resolved then (a file it names is not read again; a record written before a key existed takes that key's
        default)."""
        if isinstance(data, Workload):
            data = data.model_dump()
        if not data:
            return default_traffic()
        return cls.model_validate({k: v for k, v in data.items() if k in cls.model_fields},
                                  context={"read_files": False})


def given_keys(traffic: Traffic) -> dict[str, Any]:
    """The keys ``traffic`` was given (neither defaulted nor following from others), as they were given."""
    skip = {*traffic.defaulted, *traffic.derived}
    return {k: getattr(traffic, k) for k in ALL_KEYS if k not in skip and getattr(traffic, k) is not None}


def default_traffic() -> Traffic:
    return from_mapping({}, source="defaults")


def _together(keys: TrafficKeys, given: set[str]) -> list[str]:
    """Keys that cannot be given together, each problem with its fix."""
    problems = []
    for file in ("prompts", "trace"):
        clash = [k for k in (*SHAPE_KEYS, "preset", "prompts", "trace") if k in given and k != file]
        if file in given and clash:
            problems.append(f"{file}: the file gives the requests; leave out {', '.join(clash)}")
    for mean in ("prompt_input_tokens", "output_tokens"):
        if f"{mean}_stddev" in given and f"{mean}_mean" not in given and "preset" not in given:
            problems.append(f"{mean}_stddev without {mean}_mean: give the mean too (or a preset)")
    if "trace_speed" in given and "trace" not in given:
        problems.append("trace_speed scales a trace's timing: give trace=FILE too, or leave trace_speed out")
    if "think_time_s" in given and (keys.turns or 1) < 2 and not (keys.preset and PRESETS[keys.preset].turns > 1):
        problems.append("think_time_s is the pause between a session's turns: give turns=N (2 or more) too")
    if "burstiness" in given and keys.arrival != "gamma" and keys.burstiness != 1.0:
        problems.append(f"burstiness: only arrival=gamma has a shape (arrival is {keys.arrival}); add arrival=gamma "
                        "or leave burstiness out")
    return problems


def _file_lengths(keys: TrafficKeys) -> dict[str, float]:
    """A prompts file's or trace's lengths: a prompts file's at one token per unit of its text (its servers'
    own counts are in the report), and ``output_tokens_mean`` where a line gives no ``max_tokens``."""
    if keys.prompts:
        shape = Shape(prompts=read_prompts(Path(keys.prompts)), output_mean=float(CHAT_MAX_TOKENS))
    else:
        shape = Shape(trace=read_trace(Path(keys.trace or "")))
    plan = TrafficPlan(shape)
    asked = [plan.request(i) for i in range(plan.sample_size)]
    ins = [float(p.expected_prompt()) for p in asked]
    outs = [float(p.output_tokens) for p in asked]
    return {"prompt_input_tokens_mean": statistics.fmean(ins), "prompt_input_tokens_stddev": statistics.pstdev(ins),
            "output_tokens_mean": statistics.fmean(outs), "output_tokens_stddev": statistics.pstdev(outs)}


def implied_input_per_output(prompt_mean: float, output_mean: float, prefix: int, turns: int) -> float:
    """Input tokens per output token of the requests sent: a session's turn k carries the prefix, k user turns
    and k - 1 replies, so its mean prompt is prefix + prompt (T + 1) / 2 + output (T - 1) / 2."""
    return (prefix + prompt_mean * (turns + 1) / 2 + output_mean * (turns - 1) / 2) / output_mean


def _prompt_from_ratio(ratio: float, output_mean: float, prefix: int, turns: int) -> float:
    """The prompt mean that makes ``implied_input_per_output`` equal ``ratio`` (at least 1 token)."""
    return max(1.0, (ratio * output_mean - prefix - output_mean * (turns - 1) / 2) / ((turns + 1) / 2))


def _resolve(keys: TrafficKeys, given: set[str]) -> tuple[dict[str, Any], list[str], dict[str, str]]:
    """Every key's value as sent and priced; the keys that took their default; those that followed, and how."""
    values: dict[str, Any] = {k: getattr(keys, k) for k in given}
    defaulted = [k for k in KEYS if k not in given]
    derived: dict[str, str] = {}
    file = "prompts" if keys.prompts else "trace" if keys.trace else None
    if file:
        values.update(_file_lengths(keys))
        derived.update({k: f"the {file} file" for k in LENGTH_KEYS})
        values["preset"] = None
    else:
        named = keys.preset or (None if given & {*SHAPE_KEYS, "input_per_output"} else REFERENCE)
        values["preset"] = named
        if named and "preset" not in given:
            defaulted.append("preset")
        base = PRESETS[named].keys() if named else {}
        for key in ("prompt_input_tokens_stddev", "output_tokens_mean", "output_tokens_stddev",
                    "shared_prefix_tokens", "turns"):
            if key in given:
                continue
            if key in base:
                values[key], derived[key] = base[key], f"preset {named}"
            else:
                values[key] = SHAPE_DEFAULTS[key]
                defaulted.append(key)
        if "prompt_input_tokens_mean" not in given:
            if "prompt_input_tokens_mean" in base:
                values["prompt_input_tokens_mean"] = base["prompt_input_tokens_mean"]
                derived["prompt_input_tokens_mean"] = f"preset {named}"
            else:
                values["prompt_input_tokens_mean"] = _prompt_from_ratio(
                    keys.input_per_output or 0.0, values["output_tokens_mean"], values["shared_prefix_tokens"],
                    values["turns"])
                derived["prompt_input_tokens_mean"] = "input_per_output x output_tokens_mean"
    relevant = {"think_time_s": (values.get("turns") or 1) > 1, "trace_speed": bool(keys.trace),
                "seed": values["preset"] != REFERENCE}
    for key, matters in relevant.items():
        if key not in given:
            values[key] = SHAPE_DEFAULTS[key] if matters else None
            defaulted += [key] if matters else []
    return values, defaulted, derived


def _ratio(values: dict[str, Any], given: set[str], derived: dict[str, str]) -> str | None:
    """Put the input per output token in ``values``: the one given (checked against the lengths it did not make),
    else the lengths'. Returns the disagreement, where there is one."""
    implied = implied_input_per_output(values["prompt_input_tokens_mean"], values["output_tokens_mean"],
                                       values.get("shared_prefix_tokens") or 0, values.get("turns") or 1)
    if "input_per_output" not in given:
        values["input_per_output"] = round(implied, 4)
        derived["input_per_output"] = "the lengths sent (prompt_input_tokens_mean / output_tokens_mean)"
        return None
    stated = values["input_per_output"]
    if derived.get("prompt_input_tokens_mean", "").startswith("input_per_output") or \
            abs(stated - implied) <= AGREEMENT * implied:
        return None
    return (f"--workload: input_per_output={stated:g} disagrees with the lengths, which send {implied:.3g} input "
            f"tokens per output token (more than {AGREEMENT:.0%} apart): give one of them, or make them agree")


def from_mapping(given: Mapping[str, Any], source: str, base: Path | None = None) -> Traffic:
    """Validate the given keys (every problem in one line), fill in the defaults and what follows from them
    (``base``: the folder a file named in a workload YAML is relative to)."""
    try:
        keys = TrafficKeys.model_validate(given, context={"base": base} if base else None)
    except ValidationError as exc:
        raise WorkloadError(_one_line(exc)) from None
    named = {k for k in given if getattr(keys, k) is not None}
    problems = _together(keys, named)
    if problems:
        raise WorkloadError("--workload " + "; ".join(problems))
    values, defaulted, derived = _resolve(keys, named)
    disagreement = _ratio(values, named, derived)
    if disagreement:
        raise WorkloadError(disagreement)
    return Traffic(**{**keys.model_dump(), **values}, source=source, defaulted=tuple(defaulted), derived=derived)


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
        raise WorkloadError(f"--workload: no file {text!r}; give KEY=VALUE,... (keys: {', '.join(ALL_KEYS)}) "
                            "or a YAML file with those keys")
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise WorkloadError(f"--workload {text}: not readable YAML ({reason})") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise WorkloadError(f"--workload {text}: expected a mapping of {', '.join(ALL_KEYS)}")
    return from_mapping({str(k): v for k, v in data.items()}, source=f"file {path.name}", base=path.parent)


class ShapeChanged(WorkloadError):
    """Evidence asked to be re-priced for traffic of another shape: its latency was measured for the run's."""


def repriced(measured: Traffic, asked: Traffic) -> Traffic:
    """The run's traffic (``measured``) with the volume and decision keys ``asked`` gives (:data:`REPRICING_KEYS`):
    what ``python -m agent.report --workload`` prices the evidence for. A key ``asked`` leaves out keeps the run's.

    Raises:
        ShapeChanged: ``asked`` gives a key that shapes the traffic another value than the run sent; the message
            names each and the run that would measure it.
    """
    given = given_keys(asked)
    changed = [k for k, v in given.items() if k not in REPRICING_KEYS and v != getattr(measured, k)]
    if changed:
        shape = ", ".join(f"{k}={_spec_value(getattr(measured, k))}" for k in changed)
        spec = ",".join(f"{k}={_spec_value(v)}" for k, v in to_measure(measured, asked).items())
        raise ShapeChanged(f"--workload: {', '.join(changed)} shape{'s' if len(changed) == 1 else ''} the traffic, "
                           f"and this evidence's latency was measured for {shape}; re-pricing changes only "
                           f"{', '.join(REPRICING_KEYS)}. To measure that traffic, run: python -m agent.run "
                           f"--workload {shlex.quote(spec)}")
    return measured.model_copy(update={
        **{k: v for k, v in given.items() if k in REPRICING_KEYS}, "source": asked.source,
        "defaulted": tuple(k for k in measured.defaulted if k not in given)})


REQUEST_KEYS = (*SHAPE_KEYS, "preset", "prompts", "trace", "trace_speed", "input_per_output", "think_time_s")
"""The keys that say what a request is: where ``--workload`` gives one, a run measuring it takes the run's others
only where they do not clash with it."""


def to_measure(measured: Traffic, asked: Traffic) -> dict[str, Any]:
    """The keys of a run that sends ``asked``'s traffic: ``asked``'s, with the run's others that do not clash. A
    preset or a file ``asked`` names replaces what the run said a request is (the run's lengths beside a preset
    would win over it, and no length goes beside a file); lengths ``asked`` gives replace the run's file and its
    ``input_per_output``; ``turns`` or a preset replaces its ``think_time_s``."""
    given, kept = given_keys(asked), given_keys(measured)
    drop: set[str] = set()
    if given.keys() & {"preset", "prompts", "trace"}:
        drop |= set(REQUEST_KEYS)
    if given.keys() & {*SHAPE_KEYS, "input_per_output"}:
        drop |= {"prompts", "trace", "trace_speed", "input_per_output"}
    if given.keys() & {"turns", "preset"}:
        drop.add("think_time_s")
    return {**{k: v for k, v in kept.items() if k not in drop}, **given}


def _spec_value(value: Any) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else f"{value:g}"
    return str(value)
