"""The workload's requests, in the order the chat part sends them, and whether each fits a backend.

:class:`TrafficPlan` turns the workload's :class:`Shape` into :class:`Planned` requests: request ``i`` is made from
``(seed, i)`` alone, so every backend is asked the same lengths in the same order, and the first N requests
of a seed are the same whatever the run's size. Synthetic lengths are drawn from a log-normal with the asked
mean and standard deviation (positive by construction; a normal clipped at one token would move the mean of
a wide spread such as llm-d's 4096 +- 2048 by 3%); a standard deviation of 0 asks the mean every time. A
prompts file is sampled by the seed (a seeded order, cycled), a trace is taken in its own order.

A request with ``turns`` > 1 is a session: the first turn's prompt, then for each later turn a new user turn
and the output asked, each turn sending the conversation so far with the model's real replies. Its later
prompts grow by the reply and the new turn, which is what :func:`fitting_turns` checks against a backend's
limits before anything is sent.

:class:`Prompts` is one backend's text for the plan: the same requests made for that server's
:class:`~.calibration.Calibration`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from random import Random
from typing import Any, Mapping

from ..reference import CHAT_PROMPT
from .calibration import Calibration
from .files import TRACE_BLOCK_TOKENS, FilePrompt, TraceRequest
from .text import TextMaker, units_of

FIT_SAMPLE = 1000
"""The synthetic requests the fit to a backend's limits is stated over (a file's or trace's: all of them)."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What the chat part sends, from the workload (``Traffic.shape()``); lengths in tokens."""

    seed: int = 0
    reference: bool = False
    """The reference's one fixed prompt (``preset=reference``): nothing to draw or calibrate."""
    prompt_mean: float = 0.0
    prompt_stddev: float = 0.0
    output_mean: float = 100.0
    output_stddev: float = 0.0
    shared_prefix_tokens: int = 0
    turns: int = 1
    think_time_s: float = 0.0
    prompts: tuple[FilePrompt, ...] = ()
    trace: tuple[TraceRequest, ...] = ()

    @property
    def synthetic(self) -> bool:
        """Whether the prompts are made here (to the asked lengths): not the reference's, not a prompts file's."""
        return not self.reference and not self.prompts


@dataclass(frozen=True, slots=True)
class Planned:
    """One request of the workload (a session's first turn, with its later turns).

    Attributes:
        index: its place in the workload (the seed's ``i``-th request).
        prompt_tokens: the first turn's prompt as the server should count it (the shared prefix and the chat
            template included); None where the prompt is given (the reference's, a prompts file's).
        output_tokens: the first turn's ``max_tokens``.
        later: each later turn's new user turn and ``max_tokens`` (a session), in tokens.
        prompt: the prompts file's request, where it comes from one.
        trace: the trace's request, where it comes from one.
    """

    index: int
    prompt_tokens: int | None
    output_tokens: int
    later: tuple[tuple[int, int], ...] = ()
    prompt: FilePrompt | None = None
    trace: TraceRequest | None = None

    @property
    def turns(self) -> int:
        return 1 + len(self.later)

    def expected_prompt(self) -> int:
        """The first turn's prompt in tokens: asked, else estimated at one token per unit of its text."""
        if self.prompt_tokens is not None:
            return self.prompt_tokens
        if self.prompt is not None:
            return sum(units_of(m["content"]) for m in self.prompt.messages)
        return units_of(CHAT_PROMPT)


def _draw(rng: Random, mean: float, stddev: float) -> int:
    """A length of at least 1: ``mean`` when ``stddev`` is 0, else a log-normal draw with that mean and spread."""
    if stddev <= 0:
        return max(1, round(mean))
    sigma2 = math.log(1.0 + (stddev / mean) ** 2)
    return max(1, round(rng.lognormvariate(math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2))))


class TrafficPlan:
    """The workload's requests: :meth:`request` ``i`` is the same for every backend."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        order = list(range(len(shape.prompts)))
        Random(f"traffic-order:{shape.seed}").shuffle(order)
        self._order = order

    def request(self, i: int) -> Planned:
        s = self.shape
        if s.prompts:
            prompt = s.prompts[self._order[i % len(self._order)]]
            return Planned(i, None, prompt.max_tokens or _draw(Random(i), s.output_mean, 0), prompt=prompt)
        if s.trace:
            t = s.trace[i % len(s.trace)]
            return Planned(i, t.input_length, t.output_length, trace=t)
        if s.reference:
            return Planned(i, None, max(1, round(s.output_mean)))
        rng = Random(f"traffic-lengths:{s.seed}:{i}")
        first = s.shared_prefix_tokens + _draw(rng, s.prompt_mean, s.prompt_stddev)
        out = _draw(rng, s.output_mean, s.output_stddev)
        later = tuple((_draw(rng, s.prompt_mean, s.prompt_stddev), _draw(rng, s.output_mean, s.output_stddev))
                      for _ in range(s.turns - 1))
        return Planned(i, first, out, later)

    @property
    def sample_size(self) -> int:
        """How many requests the fit is stated over."""
        return len(self.shape.prompts or self.shape.trace) or (1 if self.shape.reference else FIT_SAMPLE)


def turn_lengths(p: Planned) -> list[tuple[int, int]]:
    """Each turn's expected prompt and output in tokens: turn k+1's prompt is turn k's, its reply and the new turn."""
    prompt, out = p.expected_prompt(), p.output_tokens
    turns = [(prompt, out)]
    for user, next_out in p.later:
        prompt += out + user
        out = next_out
        turns.append((prompt, out))
    return turns


def fitting_turns(p: Planned, max_prompt: int | None, max_total: int | None) -> tuple[int, str | None]:
    """How many of ``p``'s turns, from the first, fit the limits, and why the next one does not (None: all fit)."""
    for k, (prompt, out) in enumerate(turn_lengths(p)):
        if max_prompt is not None and prompt > max_prompt:
            return k, f"a prompt of {prompt} tokens is over the {max_prompt}-token prompt limit"
        if max_total is not None and prompt + out > max_total:
            return k, (f"{prompt} prompt + {out} output tokens are over the {max_total}-token limit of prompt and "
                       "output together")
    return p.turns, None


@dataclass(frozen=True, slots=True)
class RequestFit:
    """The share of the workload's requests (turns) that fit a backend's limits."""

    requests: int
    fitting: int
    first_reason: str | None
    """Why the first request that does not fit does not."""

    @property
    def share(self) -> float:
        return self.fitting / self.requests if self.requests else 1.0


def fit_of(plan: TrafficPlan, max_prompt: int | None, max_total: int | None) -> RequestFit:
    """How much of the plan's sample fits the limits (each turn of a session counts as one request)."""
    total = fitting = 0
    reason = None
    for i in range(plan.sample_size):
        p = plan.request(i)
        n, why = fitting_turns(p, max_prompt, max_total)
        total += p.turns
        fitting += n
        reason = reason or why
    return RequestFit(total, fitting, reason)


class Prompts:
    """One backend's text for the plan: each request's turns made to its calibration."""

    def __init__(self, plan: TrafficPlan, maker: TextMaker, calibration: Calibration) -> None:
        self.plan, self.maker, self.calibration = plan, maker, calibration
        shape = plan.shape
        self.system = (maker.text(calibration.units_for(shape.shared_prefix_tokens, whole_request=False), "prefix",
                                  closing=False) if shape.shared_prefix_tokens and shape.synthetic else None)

    def first(self, p: Planned) -> tuple[Mapping[str, str], ...]:
        """The first turn's messages."""
        if p.prompt_tokens is None:
            return given_messages(p)
        if p.trace is not None:
            return ({"role": "user", "content": self._blocks(p.trace)},)
        user = p.prompt_tokens - self.plan.shape.shared_prefix_tokens
        text = self.maker.text(self.calibration.units_for(user), p.index)
        return (*(({"role": "system", "content": self.system},) if self.system else ()),
                {"role": "user", "content": text})

    def turn(self, p: Planned, k: int) -> str:
        """Turn ``k``'s (2 or more) new user turn."""
        user, _ = p.later[k - 2]
        return self.maker.text(self.calibration.units_for(user, whole_request=False), f"{p.index}/{k}")

    def _blocks(self, t: TraceRequest) -> str:
        """A trace request's prompt: one text per ``hash_ids`` block (the same id, the same text), the last one
        cut to the request's length."""
        cal, size = self.calibration, TRACE_BLOCK_TOKENS
        if not t.hash_ids:
            return self.maker.text(cal.units_for(t.input_length), f"trace:{t.timestamp_ms}:{t.input_length}")
        parts = []
        for j, h in enumerate(t.hash_ids):
            left = t.input_length - j * size
            if left <= 0:
                break
            last = left <= size or j == len(t.hash_ids) - 1
            tokens = left if last else size
            parts.append(self.maker.text(cal.units_for(tokens, whole_request=last), f"block:{h}", closing=False))
        return " ".join(parts)


def given_messages(p: Planned) -> tuple[Mapping[str, str], ...]:
    """The messages of a request whose prompt is given: a prompts file's, else the reference's one prompt."""
    return p.prompt.messages if p.prompt is not None else ({"role": "user", "content": CHAT_PROMPT},)


def tools_of(p: Planned) -> tuple[Mapping[str, Any], ...]:
    """The tools a prompts file's request offers (OpenAI's form), none otherwise."""
    return p.prompt.tools if p.prompt is not None else ()
