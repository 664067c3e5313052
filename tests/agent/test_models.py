"""One strands model object per backend (each kind's client in agent/bench/clients/), each against a local server
or a fake client."""

from __future__ import annotations

import asyncio
import json

import openai
import pytest
from strands import Agent
from strands.models import BedrockModel
from strands.models import sagemaker as sm
from strands.models.openai import OpenAIModel

from agent.backends import Backend
from agent.bench.parts.counting import make_tools, transcript
from agent.bench.tasks.reference import OPS, REFERENCE_SET
from agent.bench.clients.base import ModelSettings, NoAgentModelError
from agent.bench.clients.constrained import ConstrainedToolModel
from agent.bench.clients.pool import ClientPool
from agent.bench.clients.sagemaker import sagemaker_usage_needs_patch, tolerate_vllm_usage

from tests.agent.bench.fakes.clients import FakeSageMakerRuntime
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script

VLLM_USAGE = {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8, "prompt_tokens_details": None,
              "completion_tokens_details": None}


def openai_backend(url: str, **kw) -> Backend:
    return Backend(**{"name": "g6", "label": "vLLM on EC2 g6 (L4)", "kind": "openai", "model_id": "m",
                      "tool_calls": True, "base_url": url, **kw})


BEDROCK = Backend(name="bedrock", label="Amazon Bedrock", kind="bedrock", model_id="us.amazon.nova-micro-v1:0",
                  tool_calls=True, region="us-west-2")
SAGEMAKER = Backend(name="sagemaker", label="SageMaker", kind="sagemaker", model_id="m", tool_calls=True,
                    region="us-east-2", endpoint_name="ep")
NEURON = Backend(name="inf2", label="Inferentia2", kind="neuron", model_id="gemma-4-E2B-it", tool_calls=False,
                 base_url="http://127.0.0.1:9/v1", max_prompt_tokens=128)


def count_client_builds(monkeypatch) -> list:
    built = []
    original = openai.AsyncOpenAI.__init__

    def init(self, *a, **kw):
        built.append(kw.get("base_url"))
        original(self, *a, **kw)

    monkeypatch.setattr(openai.AsyncOpenAI, "__init__", init)
    return built


class TestOpenAI:
    def test_one_shared_client_for_every_request(self, monkeypatch):
        built = count_client_builds(monkeypatch)
        script = Script(tool_call=("count_ids", {"op": ">=", "value": 10}), final="There are 8.")
        with FakeOpenAI(script) as fake:

            async def go():
                async with ClientPool([openai_backend(fake.base_url)]) as pool:
                    model = pool.client("g6").agent_model()
                    assert model is pool.client("g6").agent_model() and isinstance(model, OpenAIModel)
                    assert model._custom_client is pool.client("g6").openai_client()
                    assert model.client_args == {}
                    answers = []
                    for _ in range(3):
                        agent = Agent(model=model, tools=make_tools(REFERENCE_SET, "engine"), callback_handler=None)
                        answers.append(str(await agent.invoke_async("How many?")))
                    return answers

            answers = asyncio.run(go())
            assert len(fake.requests) == 6 and all(r["stream"] for r in fake.requests)
            assert fake.requests[0]["max_tokens"] == 512 and fake.requests[0]["temperature"] == 0.0
        assert built == [fake.base_url]  # one AsyncOpenAI for six model calls
        assert all("8" in a for a in answers)

    def test_backend_without_tools_or_constrained_mode_has_no_agent_model(self):
        pool = ClientPool([openai_backend("http://127.0.0.1:9/v1", tool_calls=False)])
        assert not pool.client("g6").can_drive_agent
        with pytest.raises(NoAgentModelError):
            pool.client("g6").agent_model()
        asyncio.run(pool.aclose())


def test_neuron_has_no_agent_model():
    pool = ClientPool([NEURON])
    assert not pool.client(NEURON).can_drive_agent
    with pytest.raises(NoAgentModelError, match="128 tokens"):
        pool.client("inf2").agent_model()


def test_bedrock_model_uses_the_backends_one_client_in_its_region():
    pool = ClientPool([BEDROCK], settings=ModelSettings(timeout_s=42.0, retries=3))
    model = pool.client("bedrock").agent_model()
    assert isinstance(model, BedrockModel)
    assert model.client is pool.client("bedrock").client is pool.boto_client(BEDROCK, "bedrock-runtime")
    assert model.client.meta.region_name == "us-west-2"
    assert model.client.meta.config.read_timeout == 42.0
    assert model.client.meta.config.retries["total_max_attempts"] == 4
    assert model.get_config()["model_id"] == "us.amazon.nova-micro-v1:0"


class FakeSageMakerClient(FakeSageMakerRuntime):
    """The runtime client strands' SageMaker model calls: one streamed reply and one whole reply, "Paris",
    with ``stream_usage`` as the usage; boto3's exception classes, which strands reads from the client."""

    def __init__(self, stream_usage=VLLM_USAGE):
        events = [{"choices": [{"delta": {"content": "Paris"}, "finish_reason": None}]},
                  {"choices": [{"delta": {}, "finish_reason": "stop"}]},
                  {"choices": [], "usage": stream_usage}]
        raw = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
        body = {"choices": [{"message": {"content": "Paris"}, "finish_reason": "stop"}], "usage": stream_usage}
        super().__init__([{"PayloadPart": {"Bytes": raw}}], json.dumps(body).encode())
        import boto3

        self.exceptions = boto3.Session(region_name="us-east-2").client("sagemaker-runtime").exceptions


async def _collect(model):
    return [e async for e in model.stream([{"role": "user", "content": [{"text": "hi"}]}])]


class TestSageMaker:
    def test_model_is_built_on_the_backends_client_with_usage_in_streams(self):
        pool = ClientPool([SAGEMAKER])
        model = pool.client("sagemaker").agent_model()
        assert model.client is pool.client("sagemaker").client is pool.boto_client(SAGEMAKER, "sagemaker-runtime")
        assert model.payload_config["additional_args"] == {"stream_options": {"include_usage": True}}
        assert model.payload_config["stream"] is True

    def test_strands_1_62_still_rejects_vllm_usage_fields(self, monkeypatch):
        """Checked against the installed strands: if a release accepts the fields, the patch turns itself off."""
        original = getattr(sm.UsageMetadata, "_original", sm.UsageMetadata)
        monkeypatch.setattr(sm, "UsageMetadata", original)
        needs = sagemaker_usage_needs_patch()
        model = ClientPool([SAGEMAKER]).client("sagemaker").agent_model()
        monkeypatch.setattr(sm, "UsageMetadata", original)  # undo the pool's patch: strands as shipped
        model.client = FakeSageMakerClient()
        if needs:
            with pytest.raises(TypeError, match="completion_tokens_details"):
                asyncio.run(_collect(model))
        else:  # pragma: no cover - a strands release that fixed it
            asyncio.run(_collect(model))
        assert tolerate_vllm_usage() is needs

    @pytest.mark.parametrize("stream", [True, False])
    def test_tolerant_usage_keeps_the_counts(self, stream):
        tolerate_vllm_usage()
        assert tolerate_vllm_usage() is sagemaker_usage_needs_patch()  # idempotent
        model = ClientPool([SAGEMAKER]).client("sagemaker").agent_model()
        model.payload_config["stream"] = stream
        model.client = FakeSageMakerClient()
        events = asyncio.run(_collect(model))
        usage = [e["metadata"]["usage"] for e in events if "metadata" in e]
        assert usage == [{"inputTokens": 5, "outputTokens": 3, "totalTokens": 8}]
        texts = [e["contentBlockDelta"]["delta"]["text"] for e in events if "contentBlockDelta" in e]
        assert "".join(texts) == "Paris"


def constrained_script(body):
    if body.get("response_format"):
        return Script(text=json.dumps({"tool": "count_ids", "arguments": {"op": ">", "value": 10}}))
    return Script(text="There are 7 ids.")


class TestConstrained:
    def test_first_turn_is_a_schema_constrained_choice_then_plain_text(self):
        with FakeOpenAI(Script(choose=constrained_script)) as fake:
            local = openai_backend(fake.base_url, tool_calls=False, constrained_tools=True)

            async def go():
                async with ClientPool([local]) as pool:
                    model = pool.client(local).agent_model()
                    assert isinstance(model, ConstrainedToolModel) and pool.client(local).constrained
                    model.set_enums({"count_ids": {"op": list(OPS)}})
                    agent = Agent(model=model, tools=make_tools(REFERENCE_SET, "engine"), callback_handler=None)
                    answer = str(await agent.invoke_async(REFERENCE_SET.question))
                    return answer, transcript(agent.messages)

            answer, (calls, texts) = asyncio.run(go())
            first, second = fake.requests
        schema = first["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["tool"] == {"const": "count_ids"}
        assert schema["properties"]["arguments"]["properties"]["op"]["enum"] == list(OPS)
        assert "tools" not in first or not first["tools"]
        assert first["stream"] is False
        assert calls == [{"name": "count_ids", "input": {"op": ">", "value": 10}, "status": "success",
                          "result": ['{"where": "id > 10", "count": 7, "min": 11, "max": 23}']}]
        assert not second.get("tools") and "response_format" not in second
        flat = json.dumps(second["messages"])
        assert "I called the tool count_ids" in flat and "The tool returned" in flat
        assert answer.strip() == "There are 7 ids."

    def test_unparseable_choice_becomes_text(self):
        with FakeOpenAI(Script(choose=lambda b: Script(text="not json"))) as fake:
            local = openai_backend(fake.base_url, tool_calls=False, constrained_tools=True)

            async def go():
                async with ClientPool([local]) as pool:
                    agent = Agent(model=pool.client(local).agent_model(), tools=make_tools(REFERENCE_SET, "engine"),
                                  callback_handler=None)
                    return str(await agent.invoke_async("q")), transcript(agent.messages)

            answer, (calls, _) = asyncio.run(go())
        assert answer.strip() == "not json" and calls == []
