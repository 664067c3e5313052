"""One model per kind of line in ``requests.jsonl`` (``docs/benchmark.md``, "The parts").

Every record names its ``part`` and ``backend``; ``seq`` is its line number, given by the log.
:data:`RequestRecord` tells the kinds apart by ``part``. A record keeps what came back exactly as
it came (tool arguments, server timings, the text), so every verdict and figure can be recomputed
from it. Fields with a default are optional in the file: a record written without them reads as
the default (``repeat`` is written only by a repeated level).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Field, TypeAdapter, ValidationError

from .base import Frozen, Sparse


class TimingRecord(Frozen):
    """One timed chat request (``part: chat``), one request of the open loop (``part: open_loop``: at a rate,
    phase ``rate``, or at a trace's timestamps, phase ``trace``) or one question the orchestrator asked a
    backend (``part: orchestrator_ask``); times in ms from the request's send."""

    seq: int | None = None
    part: Literal["chat", "orchestrator_ask", "open_loop"]
    backend: str
    phase: Literal["cold", "timed", "sweep", "ask", "rate", "trace"]
    concurrency: int = Field(description="requests in flight (the open loop: in flight when it was sent, itself "
                                         "included)")
    run: int
    started: str | None = None
    sent_s: float = Field(description="send time, seconds from the start of the run")
    prompt: str | None = None
    requested_tokens: int | None = None
    streamed: bool
    status: int | None = None
    request_id: str | None = None
    first_ms: float | None = Field(description="the first content chunk's arrival")
    last_ms: float | None
    done_ms: float | None = Field(description="the last byte's arrival")
    chunk_ms: list[float] = Field(description="every content chunk's arrival (chunks read together share it)")
    chunk_chars: list[int] | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None
    finish_reason: str | None = None
    text: str = ""
    error: str | None = Field(description="why the request failed; null when it did not")
    server_timings: dict[str, Any] | None = None
    reconnects: int = 0
    resend_reasons: list[str] = []
    new_connection: bool | None = None
    wire_bytes: int | None = Field(default=None, description="the response's bytes read off the wire, headers and "
                                   "body: what the port forward carried of it (absent where the client cannot "
                                   "tell)")
    load_from: Literal["rig"] | None = Field(default=None, description="rig: sent by the rig's own load generator on "
                                             "the instance (--load-from rig), its wire_bytes never through the "
                                             "tunnel; absent: sent from this machine")
    repeat: int | None = Field(default=None, description="the repeat of its level (1 when absent)")
    request_index: int | None = Field(default=None, description="the workload's request it sent (its place in the "
                                      "seed's order); absent for the reference's one prompt")
    turn: int | None = Field(default=None, description="its turn in a session, from 1 (absent: not a session)")
    asked_prompt_tokens: int | None = Field(default=None, description="the prompt tokens asked, as the server should "
                                            "count them (usage.prompt_tokens); absent where the prompt is given")
    ignore_eos: bool | None = Field(default=None, description="exactly requested_tokens were asked for (ignore_eos)")

    scheduled_s: float | None = Field(default=None, description="the open loop: when it was due to be sent, seconds "
                                                                "from the start of the run (sent_s - scheduled_s is "
                                                                "its lag)")
    cached_prompt_tokens: int | None = Field(default=None, description="prompt tokens the server read from its "
                                                                       "prefix cache, where it reports them")
    reasoning_tokens: int | None = Field(default=None, description="output tokens spent reasoning before the "
                                         "answer (within output_tokens), where the server reports them")

class NotSentRecord(Frozen):
    """A request of the workload the chat part did not send to a backend because it does not fit the backend's
    limits (``part: chat_not_sent``): where it would have gone, what it asked and why not."""

    seq: int | None = None
    part: Literal["chat_not_sent"]
    backend: str
    phase: Literal["cold", "timed", "sweep"]
    concurrency: int
    run: int
    repeat: int | None = None
    request_index: int
    turn: int | None = None
    asked_prompt_tokens: int | None
    requested_tokens: int
    not_sent: str


class AgentCall(Frozen):
    """A tool call an agent made, with its arguments exactly as sent and the tool's result."""

    name: str | None
    input: Any
    status: str | None = None
    result: Any = None


class AgentUsage(Frozen):
    input_tokens: int | None = None
    output_tokens: int | None = None
    model_calls: int | None = None


class AgentTranscript(Frozen):
    """What one agent run did: its tool calls, its text blocks, how it ended, its time and tokens."""

    calls: list[AgentCall]
    texts: list[str]
    error: str | None
    seconds: float | None = None
    usage: AgentUsage | None = None


class CountingRecord(AgentTranscript):
    """One counting run (``part: counting`` or ``counting_strict``): the agent's transcript."""

    seq: int | None = None
    part: Literal["counting", "counting_strict"]
    backend: str
    run: int
    started: str | None = None
    tools: Literal["engine", "rows"] = "engine"
    constrained: bool = False
    question: str | None = None
    ids: list[int] | None = None
    answer: str


class OfferedBackend(Frozen):
    name: str
    label: str
    tool: str | None = None


class AskResult(Sparse, Frozen):
    """What one ``ask_<backend>`` tool returned to the orchestrator (an answer, or an error)."""

    backend: str
    label: str
    answer: str | None = None
    seconds: float | None = None
    tokens_per_second: float | None = None
    error: str | None = None


class FollowUp(AgentTranscript):
    """The one follow-up turn of an orchestrator run that ended without ``submit_summary``."""

    prompt: str
    reply: str


class OrchestratorRecord(AgentTranscript):
    """The orchestrator's run (``part: orchestrator``): what it was offered, asked and answered."""

    seq: int | None = None
    part: Literal["orchestrator"]
    backend: str
    run: int
    started: str | None = None
    constrained: bool = False
    question: str | None = None
    system_prompt: str | None = None
    offered: list[OfferedBackend]
    asks: list[AskResult]
    scoreboards: list[str]
    reply: str
    follow_up: FollowUp | None = None


class BfclCall(Frozen):
    """A call made through the tool interface; ``arguments`` exactly as received (a JSON string from
    OpenAI-style servers, an object from Bedrock and the constrained mode)."""

    name: str | None
    arguments: Any


class ReplyFields(Frozen):
    """What one request of the BFCL and quality parts brought back (the chat parts keep timings instead)."""

    started: str | None = None
    interface: str | None = None
    text: str = ""
    finish_reason: str | None = None
    status: int | None = None
    request_id: str | None = None
    error: str | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None
    """Of ``output_tokens``, those spent reasoning before the answer, where the server reports them."""
    seconds: float | None = None
    streamed: bool = False
    resends: int = 0


class BfclRecord(ReplyFields):
    """One BFCL case (``part: bfcl``): the case as sent and what came back."""

    seq: int | None = None
    part: Literal["bfcl"]
    backend: str
    case: str
    category: str
    seed: int | None = None
    constrained: bool = False
    messages: list[dict[str, Any]]
    functions: list[dict[str, Any]]
    ground_truth: list[dict[str, Any]] | None = None
    """BFCL's possible answers (``[{name: {param: [allowed values]}}]``); null for ``irrelevance``."""
    calls: list[BfclCall]
    not_offered: str | None = None
    """What the case needs that the backend's endpoint does not offer for its model, and where that is stated: the
    case was not sent, and is left out of its accuracy (not a failure)."""


class QualityRecord(ReplyFields):
    """One quality item (``part: quality``): the item as sent (its messages with the system turn, its
    cap, its reference answer and how it is graded) and what came back; or why it was not sent."""

    seq: int | None = None
    part: Literal["quality"]
    backend: str
    item: str
    suite: str
    lane: str
    seed: int
    messages: list[dict[str, Any]]
    max_tokens: int
    temperature: float
    answer: Any
    """The reference answer."""
    grading: dict[str, Any]
    """How the reply is graded (:mod:`agent.bench.grading.quality`)."""
    not_sent: str | None = None
    """Why the item was not sent to this backend (its prompt is over the backend's limit)."""


class TaskRecord(AgentTranscript):
    """One BFCL multi-turn task (``part: tasks``): the task as given, what the agent did turn by turn, and why it
    stopped early, if it did."""

    seq: int | None = None
    part: Literal["tasks"]
    backend: str
    phase: Literal["lane", "agents"] = "lane"
    """``lane``: the lane's tasks; ``agents``: a level of the agents search (``concurrency`` agents at once)."""
    task: str
    category: str
    seed: int
    started: str | None = None
    sent_s: float
    """When the task began, in seconds from the run's start (with ``seconds``, the lane's span on the backend)."""
    concurrency: int
    """Tasks in flight at once on the backend."""
    constrained: bool = False
    turns: list[str]
    """The user turns of the task, in order."""
    tools: list[str]
    """The functions offered from the start."""
    added_tools: dict[str, list[str]] = {}
    """Functions offered from a turn on (``miss_func``), by turn index."""
    involved_classes: list[str]
    initial_config: dict[str, Any]
    ground_truth: list[list[str]]
    """The calls that solve each turn, as BFCL writes them."""
    turns_given: int
    steps: list[list[list[str]]]
    """Per turn given, the calls of each model step, as BFCL's checker reads them (``cd(folder='document')``)."""
    tool_calls: int
    stopped: str | None = None
    """Why the task was stopped before its last turn was done (a limit), or null."""
    reasoning_chars: int = 0
    """Characters of reasoning content the model returned (its tokens are inside the output tokens)."""


RequestRecord = Annotated[Union[TimingRecord, NotSentRecord, CountingRecord, OrchestratorRecord, BfclRecord,
                                QualityRecord, TaskRecord], Field(discriminator="part")]
"""Any line of ``requests.jsonl``, told apart by its ``part``."""

RECORDS: TypeAdapter[RequestRecord] = TypeAdapter(RequestRecord)


class RecordError(ValueError):
    """A record that is not one of the kinds above; the message is one line naming the field."""


def parse_record(data: Any) -> RequestRecord:
    """``data`` (a mapping, or a record already) as its record model.

    Raises:
        RecordError: it is not a record of a known part, or a field has the wrong type.
    """
    if isinstance(data, (TimingRecord, NotSentRecord, CountingRecord, OrchestratorRecord, BfclRecord, QualityRecord,
                         TaskRecord)):
        return data
    try:
        return RECORDS.validate_python(data)
    except ValidationError as exc:
        raise RecordError(_one_line(data, exc)) from None


def record_json(record: RequestRecord) -> dict[str, Any]:
    """The record as its line holds it: the keys it was given, JSON values."""
    return record.model_dump(mode="json", exclude_unset=True)


def _one_line(data: Any, exc: ValidationError) -> str:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in first["loc"][1:] or first["loc"]) or "record"
    seq = data.get("seq") if isinstance(data, dict) else None
    part = data.get("part") if isinstance(data, dict) else None
    which = f"record {seq}" if seq is not None else "a record"
    count = exc.error_count()
    more = f" (and {count - 1} more problem{'s' if count > 2 else ''})" if count > 1 else ""
    return f"{which} (part {part!r}): {where}: {first['msg']}{more}"
