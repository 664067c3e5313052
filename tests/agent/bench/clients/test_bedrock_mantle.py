"""Bedrock's OpenAI-compatible endpoint (``bedrock-mantle``) through ``AWS_BEDROCK_BASE_URL`` to the loopback stand-in:
every request carries a SigV4 signature that verifies as AWS checks one (recomputed here from the request the
server read, :mod:`tests.agent.bench.fakes.sigv4`), or the Bedrock API key as a bearer token; tools go natively;
what served it is read from its signed ``GET /v1/models``; the quality lane pairs it with g6 as the same model."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import boto3
import pytest

from agent.backends import MantleSettings, catalog_metadata, mantle_backend
from agent.bench.clients.openai_http import BedrockMantleClient
from agent.bench.clients.reply import ChatRequest, Tool
from agent.reach.provenance import read
from rigs import aws
from rigs.catalog.model import load_catalog

from tests.agent.bench.conftest import openai_backend, run_demo
from tests.agent.bench.fakes.clients import Context
from tests.agent.bench.fakes.mantle_fake import MantleFake
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script
from tests.agent.bench.fakes.sigv4 import verify

CATALOG = load_catalog()
KEY, SECRET, TOKEN = "AKIAMANTLETEST", "mantle-secret-key", "mantle-session-token"
MODEL = "google.gemma-4-e2b"
MODELS_PAGE = {"/v1/models": {"object": "list", "data": [
    {"id": "openai.gpt-oss-20b", "object": "model", "owned_by": "openai"},
    {"id": MODEL, "object": "model", "owned_by": "google"}]}}
COUNT = Tool("count_ids", "Count the ids that satisfy a condition.",
             {"type": "object", "properties": {"op": {"type": "string"}, "value": {"type": "integer"}},
              "required": ["op", "value"]})


class Signing(Context):
    """The client's context, its session holding known credentials."""

    def session(self) -> Any:
        return boto3.Session(aws_access_key_id=KEY, aws_secret_access_key=SECRET, aws_session_token=TOKEN,
                             region_name="us-east-1")


def mantle(url: str, **env: str):
    values = {aws.MANTLE_BASE_URL_VAR: url, **env}
    return mantle_backend(CATALOG, MantleSettings.from_env(values.get, CATALOG, None))


def exchange(client: BedrockMantleClient, *requests: ChatRequest) -> list:
    async def go() -> list:
        try:
            return [await client.send(r) for r in requests]
        finally:
            await client.close()

    return asyncio.run(go())


def test_every_request_carries_a_sigv4_signature_that_verifies_as_aws_checks_it():
    with FakeOpenAI(Script(tool_call=("count_ids", {"op": ">=", "value": 10}))) as fake:
        backend = mantle(fake.base_url)
        replies = exchange(BedrockMantleClient(backend, Signing()), ChatRequest.user("Say OK.", 8),
                           ChatRequest.user("How many ids are 10 or more?", 64, tools=(COUNT,)))
    assert backend.region == "us-east-1" and backend.metadata["auth_mode"] == aws.SIGNED
    assert [r.error for r in replies] == [None, None]
    assert replies[1].calls == [{"name": "count_ids", "arguments": '{"op": ">=", "value": 10}'}]  # native tool calls
    assert [r.method for r in fake.received] == ["POST", "POST"]
    for received in fake.received:
        signed = verify(received, SECRET)
        assert (signed.access_key, signed.region, signed.service) == (KEY, "us-east-1", "bedrock-mantle")
        assert {"host", "content-type", "x-amz-date", "x-amz-security-token"} <= set(signed.signed_headers)
        assert received.headers["X-Amz-Security-Token"] == TOKEN
    assert [b["model"] for b in fake.requests] == [MODEL, MODEL] and "tools" in fake.requests[1]
    first = fake.received[0]
    with pytest.raises(AssertionError, match="the body is not the one"):
        verify(first._replace(body=first.body.replace(b"Say OK.", b"Say no.")), SECRET)
    with pytest.raises(AssertionError, match="the signature does not match"):
        verify(first, "another-secret")


def test_with_a_bedrock_api_key_the_requests_carry_it_as_a_bearer_token(monkeypatch):
    monkeypatch.setenv(aws.MANTLE_TOKEN_VAR, "bedrock-api-key-abc")
    with FakeOpenAI(Script()) as fake:
        backend = mantle(fake.base_url, **{aws.MANTLE_TOKEN_VAR: "bedrock-api-key-abc"})
        [reply] = exchange(BedrockMantleClient(backend, Context()), ChatRequest.user("Say OK.", 8))
    assert reply.error is None and backend.metadata["auth_mode"] == aws.BEARER
    headers = fake.received[0].headers
    assert headers["Authorization"] == "Bearer bedrock-api-key-abc"
    assert not any(h.lower().startswith("x-amz-") for h in headers)  # no signature: the key is the credential
    assert "a Bedrock API key (AWS_BEARER_TOKEN_BEDROCK)" in backend.metadata["reached_via"]


def test_what_served_it_is_read_from_its_signed_model_list_and_its_host():
    with FakeOpenAI(Script(), pages=MODELS_PAGE) as fake:
        session = Signing().session()
        read_back = read(mantle(fake.base_url), session).provenance
        other = read(mantle(fake.base_url, BEDROCK_MANTLE_MODEL="google.gemma-4-31b"), session).provenance
    assert verify(fake.received[0], SECRET).service == "bedrock-mantle" and fake.gets == ["/v1/models"] * 2
    facts = read_back["read"]
    assert facts["model"] == {"value": MODEL, "source": "GET /v1/models lists it (owned_by google)"}
    assert facts["region"]["not_reported"].endswith("names no region (a private or stand-in endpoint)")
    assert read_back["expected"]["region"] == {"value": "us-east-1", "source": "the region its requests are signed for"}
    assert other["read"]["model"]["not_reported"] == "not among the 2 models it lists"


def test_a_request_the_endpoint_refuses_on_its_route_fails_with_one_line_naming_the_other_route():
    with MantleFake(Script()) as fake:  # Gemma 4 E2B under /openai/v1 only
        backend = mantle(fake.endpoint + "/v1")
        [reply] = exchange(BedrockMantleClient(backend, Signing()), ChatRequest.user("Say OK.", 8))
    assert fake.refused == ["/v1/chat/completions"]
    assert reply.error == (f"Bedrock's OpenAI-compatible endpoint does not serve {MODEL} under /v1 "
                           f"({fake.endpoint}/v1/chat/completions): its route is another, likely /openai/v1; fix the "
                           "route in the catalog's models entry (bedrock_endpoint.route) or give the whole base URL in "
                           "AWS_BEDROCK_BASE_URL")


def test_the_quality_lane_pairs_it_with_g6_as_the_same_model(tmp_path):
    g6 = CATALOG.get("g6")
    with FakeOpenAI(Script(text="4")) as bedrock, FakeOpenAI(Script(text="4")) as rig:
        backends = [mantle(bedrock.base_url), openai_backend("g6", rig.base_url, model_id=g6.model_id, metadata={
            **catalog_metadata(g6, "us-east-2", g6.model_id), "region": "us-east-2"})]
        code, s, _, out = run_demo(tmp_path, backends, "quality", "--quality-n", "12")
    assert code == 0
    pair = next(p for p in s["quality_pairs"] if {p["a"], p["b"]} == {"bedrock-mantle", "g6"})
    assert pair["relation"] == "same model" and not pair["same_weights"]
    assert s["backends"]["bedrock-mantle"]["weights"]["model"] == s["backends"]["g6"]["weights"]["model"]
    card = "https://docs.aws.amazon.com/bedrock/latest/userguide/model-card-google-gemma-4-e2b.html"
    assert pair["differs"] == [  # what is not like for like, from the catalog's bedrock_endpoint
        f"bedrock-mantle does not offer parallel tool calls ({card})",
        "bedrock-mantle reasons before it answers (billed as output tokens, not shown) with no documented switch: its "
        f"reasoning tokens are counted and priced beside the answer tokens ({card})"]
    text = (out / "REPORT.md").read_text()
    assert "| bedrock-mantle | same model |" in text
    assert f"- bedrock-mantle against g6, besides what they serve: {pair['differs'][0]}; " in text
    assert ("| Gemma 4 E2B | not published | not published | - | Amazon Bedrock (Mantle) |" in text)
    priced = json.loads((out / "run.json").read_text())["prices"]["backends"]["bedrock-mantle"]["per_token"]
    assert (priced["model_id"], priced["usd_per_m_input"], priced["usd_per_m_output"]) == (MODEL, 0.04, 0.08)


def test_the_agents_openai_client_signs_its_requests_too():
    with FakeOpenAI(Script()) as fake:
        client = BedrockMantleClient(mantle(fake.base_url), Signing())

        async def go() -> str:
            try:
                reply = await client.openai_client().chat.completions.create(
                    model=MODEL, messages=[{"role": "user", "content": "Say OK."}], max_tokens=8)
                return reply.choices[0].message.content
            finally:
                await client.close()

        text = asyncio.run(go())
    assert text and verify(fake.received[0], SECRET).service == "bedrock-mantle"
