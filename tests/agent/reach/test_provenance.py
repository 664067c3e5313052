"""What served each backend, read at run time: from the server over the backend's own URL (vLLM's ``/version`` and
``/v1/models`` shapes on the fake server, llama.cpp's on the real local rig in ``test_local_rig.py``), from EC2 and
the rig's boot report (moto's CloudWatch Logs), SageMaker's and Bedrock's APIs (botocore's Stubber); compared with
the catalog, flagged in the report, and never a failure of the run."""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path
from typing import Any, Iterator

import boto3
import pytest
from botocore.stub import Stubber
from moto import mock_aws

from agent.backends import Backend, bedrock_backend, catalog_expectation
from agent.bench.analysis.blocks.provenance import provenance_block, same
from agent.bench.clients.bedrock import converse_args
from agent.bench.clients.reply import ChatRequest
from agent.bench.command import run_info
from agent.bench.results.run import BackendInfo
from agent.reach.provenance import boot_report, endpoint_facts, engine_facts, instance_facts, read
from agent import run as run_module
from rigs.catalog.model import load_catalog

from tests.agent.bench.fakes.openai_fake import FakeOpenAI

from tests.agent.bench.fakes.openai_fake import vllm_pages
from tests.agent.bench.fakes.scripted import Script

CATALOG = load_catalog()
G6 = CATALOG.get("g6")
SM = CATALOG.get("sagemaker")
DIGEST = "sha256:" + "ab" * 32


class Session:
    """A session whose clients are the test's own (each with a Stubber attached)."""

    def __init__(self, **clients: Any) -> None:
        self.clients = clients

    def client(self, service: str, **kwargs: Any) -> Any:
        return self.clients[service]


def g6_backend(url: str, **metadata: str) -> Backend:
    """g6 as a discovered rig reached at ``url``: the catalog's expectation, EC2's facts from discovery."""
    return Backend(name="g6", label=G6.label, kind="openai", model_id=G6.model_id, tool_calls=True, base_url=url,
                   metadata=metadata, provenance={"expected": catalog_expectation(G6, G6.model_id, "us-east-2"),
                                                  "read": instance_facts(metadata)})


def block(backend: Backend):
    """The summary's provenance block for ``backend``, through ``run.json`` as the command writes it."""
    info = BackendInfo.model_validate_json(run_info.backend_info(backend).model_dump_json())
    return provenance_block(info.provenance)


def verdicts(b) -> dict[str, str]:
    return {c.fact: c.verdict for c in b.facts}


# --- a server over its own URL --------------------------------------------------------------------


def test_vllm_reports_its_version_model_and_context_and_they_match_the_catalog():
    ec2 = {"instance_id": "i-0abc", "instance_type": "g6.xlarge", "availability_zone": "us-east-2b",
           "ami_id": "ami-0123"}
    with FakeOpenAI(Script(), pages=vllm_pages(G6.model_id)) as fake:
        backend = read(g6_backend(fake.base_url, **ec2))
        assert {"/version", "/v1/models"} <= set(fake.gets)  # asked over the backend's own URL, nothing else
    facts = backend.provenance["read"]
    assert facts["engine"] == {"value": "vLLM", "source": "GET /v1/models owned_by vllm"}
    assert facts["engine_version"] == {"value": "0.30.0", "source": "GET /version"}
    assert facts["context_tokens"] == {"value": 8192, "source": "GET /v1/models max_model_len"}
    assert facts["availability_zone"] == {"value": "us-east-2b", "source": "EC2 DescribeInstances i-0abc"}
    b = block(backend)
    assert b.mismatches == [] and b.read_at == backend.provenance["read_at"]
    assert verdicts(b) == {"engine": "match", "engine_version": "match", "model": "match", "context_tokens": "match",
                           "instance_type": "match", "availability_zone": "read", "ami_id": "read",
                           "image_digest": "not reported",  # and vLLM's KV cache: no boot report read here
                           "kv_cache_tokens": "not reported", "max_concurrency": "not reported"}
    image = next(c for c in b.facts if c.fact == "image_digest")
    assert image.expected == G6.image.digest and image.not_reported == "not read for this kind of backend"


def test_another_vllm_version_model_length_or_instance_type_is_flagged():
    pages = vllm_pages(G6.model_id, version="0.29.1", max_model_len=4096)
    with FakeOpenAI(Script(), pages=pages) as fake:
        backend = read(g6_backend(fake.base_url, instance_id="i-0abc", instance_type="g6.2xlarge"))
    b = block(backend)
    assert {c.fact for c in b.facts if c.verdict == "mismatch"} == {"engine_version", "context_tokens", "instance_type"}
    assert ("engine version is 0.29.1 (GET /version) where the catalog expects 0.30.0 (catalog image tag v0.30.0)"
            in b.mismatches)
    assert ("context length (tokens) is 4096 (GET /v1/models max_model_len) where the catalog expects 8192 (serve "
            "flag --max-model-len)") in b.mismatches


def test_another_model_is_flagged_and_the_others_it_lists_are_named():
    pages = vllm_pages("google/gemma-4-E2B-it")
    pages["/v1/models"]["data"].append({**pages["/v1/models"]["data"][0], "id": "lora-adapter"})
    with FakeOpenAI(Script(), pages=pages) as fake:
        backend = read(g6_backend(fake.base_url))
    model = backend.provenance["read"]["model"]
    assert model == {"value": "google/gemma-4-E2B-it", "source": "GET /v1/models, which also lists lora-adapter"}
    assert verdicts(block(backend))["model"] == "mismatch"


def test_a_server_without_the_endpoints_is_not_reported_with_the_reason():
    with FakeOpenAI(Script()) as fake:  # chat only: every GET is a 404
        backend = read(g6_backend(fake.base_url))
    facts = backend.provenance["read"]
    assert facts["engine_version"]["value"] is None
    assert facts["engine_version"]["not_reported"] == "/version: HTTP 404; /props: HTTP 404"
    assert facts["model"]["not_reported"] == "HTTP 404"
    assert verdicts(block(backend))["engine"] == "not reported"


def test_a_server_that_does_not_answer_at_all_is_recorded_never_raised():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    backend = read(g6_backend(f"http://127.0.0.1:{port}/v1"))
    assert backend.provenance["read"]["model"]["not_reported"].startswith("connection refused")
    assert block(backend).mismatches == []


def test_an_unexpected_failure_while_reading_is_a_row_of_its_own_never_a_failed_run(monkeypatch):
    from agent.reach import provenance

    def broken(*args: Any) -> dict[str, Any]:
        raise RuntimeError("a bug in a reader")

    monkeypatch.setattr(provenance, "server_facts", broken)
    backend = read(g6_backend("http://127.0.0.1:9/v1", instance_id="i-0abc", instance_type="g6.xlarge"))
    rows = {c.fact: c for c in block(backend).facts}
    assert rows["reading"].not_reported == "reading stopped: RuntimeError: a bug in a reader"
    assert rows["instance_type"].verdict == "match"  # what discovery read is kept


def test_versions_count_as_the_same_with_a_local_or_build_suffix_only():
    assert same("engine_version", "0.30.0+cu130", "0.30.0") and same("engine_version", "v0.30.0", "0.30.0")
    assert same("engine_version", "b7342-1a2b3c4", "b7342")
    assert not same("engine_version", "0.30.1", "0.30.0") and not same("engine_version", "0.30.0rc1", "0.30.0")
    assert same("image_digest", f"763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm@{DIGEST}", DIGEST)
    assert not same("image_digest", "vllm/vllm-openai:v0.30.0", DIGEST)  # a tag is not a digest
    assert same("service_tier", "Standard", "standard")


# --- an EC2 rig's boot report (moto's CloudWatch Logs) --------------------------------------------


@pytest.fixture
def aws() -> Iterator[boto3.Session]:
    with mock_aws():
        yield boto3.Session(region_name="us-east-2")


def put_log(session: boto3.Session, group: str, stream: str, *messages: str) -> None:
    logs = session.client("logs", region_name="us-east-2")
    now = int(time.time() * 1000)  # CloudWatch Logs refuses events older than 14 days
    logs.create_log_group(logGroupName=group)
    logs.create_log_stream(logGroupName=group, logStreamName=stream)
    logs.put_log_events(logGroupName=group, logStreamName=stream,
                        logEvents=[{"timestamp": now + i, "message": m} for i, m in enumerate(messages)])


def test_the_boot_report_gives_the_gpu_its_driver_and_the_image_digest(aws: boto3.Session):
    put_log(aws, "/aws-inference/g6", "i-0abc/user-data",
            "2026-12-01T04:00:00Z rig g6 (vllm) booting: ...",
            "2026-12-01T04:02:00Z rig report: accelerator=NVIDIA L4; count=1; driver=570.133.20; "
            f"image=vllm/vllm-openai@{DIGEST}",
            "2026-12-01T04:09:00Z ready after 540s")
    facts = boot_report(aws, "us-east-2", "/aws-inference/g6", "i-0abc")
    source = "the rig's boot report (/aws-inference/g6 i-0abc/user-data)"
    assert facts == {"accelerator": {"value": "1 x NVIDIA L4", "source": source},
                     "driver": {"value": "570.133.20", "source": source},
                     "image_digest": {"value": f"vllm/vllm-openai@{DIGEST}", "source": source}}


def test_a_boot_log_without_a_report_or_a_missing_log_is_not_reported(aws: boto3.Session):
    put_log(aws, "/aws-inference/g6", "i-0abc/user-data", "2026-12-01T04:00:00Z rig g6 (vllm) booting: ...")
    facts = boot_report(aws, "us-east-2", "/aws-inference/g6", "i-0abc")
    assert facts["driver"]["value"] is None and facts["driver"]["not_reported"].startswith("no rig report line")
    gone = boot_report(aws, "us-east-2", "/aws-inference/g5g", "i-0def")
    assert "ResourceNotFoundException" in gone["accelerator"]["not_reported"]


def test_a_report_of_no_gpu_says_so(aws: boto3.Session):
    put_log(aws, "/aws-inference/g6", "i-0abc/user-data",
            "2026-12-01T04:02:00Z rig report: accelerator=unknown; count=0; driver=unknown; image=unknown")
    facts = boot_report(aws, "us-east-2", "/aws-inference/g6", "i-0abc")
    assert {f["not_reported"] for f in facts.values()} == {"the report says unknown"}


VLLM_LINES = (  # vLLM 0.11's start-up lines as a user posted them (LMCache/LMCache issue #1739)
    "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:864] GPU KV cache size: 42,656 tokens",
    "(EngineCore_DP0 pid=1133552) INFO 10-03 16:22:17 [kv_cache_utils.py:868] Maximum concurrency for 32,768 "
    "tokens per request: 1.30x")
FIRST_FORM = (  # the form vllm-project/vllm pull request #13596 introduced, as its description shows it
    "INFO 02-19 23:56:55 kv_cache_utils.py:524] GPU KV cache size: 2,042,016 tokens",
    "INFO 02-19 23:56:55 kv_cache_utils.py:527] Maximum concurrency for 2,048 tokens per request: 997.08x")


def test_the_boot_report_carries_vllms_own_kv_cache_lines(aws: boto3.Session):
    put_log(aws, "/aws-inference/g6", "i-0abc/user-data",
            "2026-12-01T04:02:00Z rig report: accelerator=NVIDIA L4; count=1; driver=570.133.20; image=unknown",
            *(f"2026-12-01T04:09:00Z engine report: {line}" for line in VLLM_LINES))
    facts = boot_report(aws, "us-east-2", "/aws-inference/g6", "i-0abc", engine_expected=True)
    assert (facts["kv_cache_tokens"]["value"], facts["max_concurrency"]["value"]) == (42_656, "1.30")
    assert facts["max_concurrency"]["source"].startswith("vLLM's log for 32,768 tokens per request")
    first = engine_facts(FIRST_FORM, "a log")
    assert (first["kv_cache_tokens"]["value"], first["max_concurrency"]["value"]) == (2_042_016, "997.08")


def test_the_neuron_compile_is_timed_from_the_servers_stamped_lines_the_boot_report_copies():
    """The lines rigs/userdata/neuron_vllm.sh copies (docker's time stamps first): 12 min 30 s from vLLM's Neuron
    plugin's "Unable to find precompiled" to NxD Inference's "Sharding weights on load"."""
    lines = ["2026-12-02T06:00:10.000000001Z WARNING Unable to find precompiled artifacts from /compiled/ab. "
             "Recompiling...", "2026-12-02T06:12:40.250000000Z INFO Sharding weights on load...",
             "neuron server: first good answer 905 s after it started"]
    facts = engine_facts(lines, "a log")
    assert (facts["compile_seconds"]["value"], facts["first_answer_seconds"]["value"]) == (750, 905)
    assert facts["compile_seconds"]["source"].startswith("'Unable to find precompiled' to 'Sharding weights on load'")
    cached = engine_facts(["2026-12-02T06:00:10Z INFO Successfully loaded pre-compiled model artifacts from /c"], "x")
    assert cached["compile_seconds"]["value"] == 0
    assert engine_facts(lines[:1], "x")["compile_seconds"]["not_reported"].startswith("a compile started")
    assert "compile_seconds" not in engine_facts(["GPU KV cache size: 42,656 tokens"], "x")


def test_a_vllm_rig_without_the_engine_lines_says_so_and_a_neuron_rig_is_not_asked(aws: boto3.Session):
    put_log(aws, "/aws-inference/g6", "i-0abc/user-data", "2026-12-01T04:02:00Z rig report: accelerator=unknown")
    vllm = boot_report(aws, "us-east-2", "/aws-inference/g6", "i-0abc", engine_expected=True)
    assert vllm["kv_cache_tokens"]["not_reported"].startswith("no engine report line")
    assert "kv_cache_tokens" not in boot_report(aws, "us-east-2", "/aws-inference/g6", "i-0abc")


@pytest.mark.parametrize("logged, verdict", [(22_500, "match"), (21_000, "mismatch")])
def test_the_report_shows_the_predicted_kv_cache_against_the_logged_one(logged: int, verdict: str):
    """Qwen3 8B on g6.xlarge at 8,192 tokens: 22,832 tokens predicted (vLLM 0.30's budget on one L4,
    tests/rigs/sizing/test_fit.py), 2.79 sequences of 8,192; within 5% of it is a match."""
    expected = catalog_expectation(G6, "Qwen/Qwen3-8B", "us-east-2", instance_type="g6.xlarge")
    assert (expected["kv_cache_tokens"]["value"], expected["max_concurrency"]["value"]) == (22_832, "2.79")
    assert expected["kv_cache_tokens"]["source"].startswith("python -m rigs fit's prediction: g6.xlarge")
    read_facts = {"kv_cache_tokens": {"value": logged, "source": "vLLM's log"}}
    backend = Backend(name="g6", label=G6.label, kind="openai", model_id="Qwen/Qwen3-8B", tool_calls=True,
                      base_url="http://127.0.0.1:1", provenance={"expected": expected, "read": read_facts})
    assert verdicts(block(backend))["kv_cache_tokens"] == verdict
    assert "kv_cache_tokens" not in catalog_expectation(CATALOG.get("inf2"), "gemma-4-E2B-it")  # no vLLM, none


# --- SageMaker (Stubber: moto's endpoints have no deployed images) ---------------------------------


def sagemaker_stub(resolved: str | None) -> tuple[Any, Stubber]:
    client = boto3.client("sagemaker", region_name="us-east-2")
    stub = Stubber(client)
    variant: dict[str, Any] = {"VariantName": "AllTraffic"}
    if resolved:
        variant["DeployedImages"] = [{"SpecifiedImage": SM.image.reference("us-east-2"), "ResolvedImage": resolved}]
    stub.add_response("describe_endpoint", {
        "EndpointName": "gemma-endpoint", "EndpointArn": "arn:aws:sagemaker:us-east-2:123456789012:endpoint/g",
        "EndpointConfigName": "gemma-config", "ProductionVariants": [variant], "EndpointStatus": "InService",
        "CreationTime": "2026-12-01T04:00:00Z", "LastModifiedTime": "2026-12-01T04:20:00Z",
    }, {"EndpointName": "gemma-endpoint"})
    stub.add_response("describe_endpoint_config", {
        "EndpointConfigName": "gemma-config", "EndpointConfigArn": "arn:aws:sagemaker:us-east-2:123456789012:x/c",
        "ProductionVariants": [{"VariantName": "AllTraffic", "ModelName": "m", "InstanceType": "ml.g6.xlarge"}],
        "CreationTime": "2026-12-01T04:00:00Z",
    }, {"EndpointConfigName": "gemma-config"})
    return client, stub


def sagemaker_backend() -> Backend:
    return Backend(name="sagemaker", label=SM.label, kind="sagemaker", model_id=SM.model_id, tool_calls=True,
                   region="us-east-2", endpoint_name="gemma-endpoint",
                   provenance={"expected": catalog_expectation(SM, SM.model_id, "us-east-2")})


@pytest.mark.parametrize("digest, verdict", [(SM.image.digest_for("us-east-2"), "match"), (DIGEST, "mismatch")])
def test_sagemaker_reports_the_image_it_resolved(digest: str, verdict: str):
    client, stub = sagemaker_stub(f"763104351884.dkr.ecr.us-east-2.amazonaws.com/vllm@{digest}")
    with stub:
        backend = read(sagemaker_backend(), Session(sagemaker=client))
        stub.assert_no_pending_responses()
    b = block(backend)
    assert verdicts(b)["image_digest"] == verdict and verdicts(b)["instance_type"] == "match"
    assert verdicts(b)["engine_version"] == "not reported"
    version = next(c for c in b.facts if c.fact == "engine_version")
    assert "passes only /invocations" in version.not_reported and version.expected == "0.30.0"


def test_a_sagemaker_endpoint_without_deployed_images_or_gone_is_recorded():
    client, stub = sagemaker_stub(None)
    with stub:
        facts = endpoint_facts(Session(sagemaker=client), "us-east-2", "gemma-endpoint")
    assert facts["image_digest"]["not_reported"] == "it lists no deployed image"
    gone = boto3.client("sagemaker", region_name="us-east-2")
    with Stubber(gone) as stub:
        stub.add_client_error("describe_endpoint", "ValidationException", "Could not find endpoint")
        facts = endpoint_facts(Session(sagemaker=gone), "us-east-2", "gemma-endpoint")
    assert "ValidationException" in facts["instance_type"]["not_reported"]


# --- Bedrock (Stubber) --------------------------------------------------------------------------


PROFILE = "us.amazon.nova-micro-v1:0"


def bedrock_stubs(tier: str, served: str) -> tuple[Session, list[Stubber]]:
    control = boto3.client("bedrock", region_name="us-east-1")
    runtime = boto3.client("bedrock-runtime", region_name="us-east-1")
    profile = Stubber(control)
    profile.add_response("get_inference_profile", {
        "inferenceProfileName": "US Nova Micro", "inferenceProfileArn": f"arn:aws:bedrock:us-east-1:1:inference-profile/"
                                                                        f"{PROFILE}",
        "inferenceProfileId": PROFILE, "status": "ACTIVE", "type": "SYSTEM_DEFINED",
        "models": [{"modelArn": f"arn:aws:bedrock:{r}::foundation-model/amazon.nova-micro-v1:0"}
                   for r in ("us-east-1", "us-east-2", "us-west-2")],
    }, {"inferenceProfileIdentifier": PROFILE})
    converse = Stubber(runtime)
    expected = {"modelId": PROFILE, "messages": [{"role": "user", "content": [{"text": "Say OK."}]}],
                "inferenceConfig": {"maxTokens": 1}}
    if tier != "standard":
        expected["serviceTier"] = {"type": tier}
    converse.add_response("converse", {
        "output": {"message": {"role": "assistant", "content": [{"text": "OK"}]}}, "stopReason": "max_tokens",
        "usage": {"inputTokens": 9, "outputTokens": 1, "totalTokens": 10}, "metrics": {"latencyMs": 120},
        "serviceTier": {"type": served}}, expected)
    return Session(bedrock=control, **{"bedrock-runtime": runtime}), [profile, converse]


@pytest.mark.parametrize("tier, served, verdict", [("standard", "default", "match"), ("flex", "flex", "match"),
                                                    ("priority", "default", "mismatch")])
def test_bedrock_reports_its_model_and_the_tier_it_served(tier: str, served: str, verdict: str):
    session, stubs = bedrock_stubs(tier, served)
    for stub in stubs:
        stub.activate()
    backend = read(bedrock_backend(CATALOG, PROFILE, "us-east-1", tier), session)
    for stub in stubs:
        stub.assert_no_pending_responses()
    facts = backend.provenance["read"]
    assert facts["model"] == {"value": "amazon.nova-micro-v1:0", "source": f"Bedrock GetInferenceProfile {PROFILE} "
                                                                            "(routes to us-east-1, us-east-2, us-west-2)"}
    assert facts["service_tier"]["value"] == ("standard" if served == "default" else served)
    assert verdicts(block(backend)) == {"model": "match", "service_tier": verdict}


def test_the_benchmark_asks_bedrock_for_the_tier_and_standard_sends_none():
    request = ChatRequest.user("hi", 8)
    assert converse_args(request, PROFILE, "flex")["serviceTier"] == {"type": "flex"}
    assert "serviceTier" not in converse_args(request, PROFILE)
    assert bedrock_backend(CATALOG, PROFILE, "us-east-1", "priority").metadata["service_tier"] == "priority"


def test_a_tier_the_price_file_lacks_is_refused_in_one_line_before_anything(fake_runner, no_aws, capsys):
    assert run_module.main(["--bedrock-tier", "flex", "--list"], env={}) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("--bedrock-tier flex: rigs/prices.yaml has no flex tier price for us.amazon.nova-micro-v1:0 "
                        "(it has: standard); add one with its source, or leave --bedrock-tier out")
    assert len(err.splitlines()) == 1 and fake_runner.calls == []
    with pytest.raises(SystemExit) as stopped:
        run_module.main(["--bedrock-tier", "reserved"], env={})
    assert stopped.value.code == 2 and capsys.readouterr().err.splitlines() == [
        "python -m agent.run: error: argument --bedrock-tier: 'reserved' is not a service tier this project can price "
        "(offered: standard; of standard, flex, priority, a tier needs its price in rigs/prices.yaml) (see --help)"]


def test_a_tier_the_price_file_has_is_sent_and_priced(fake_runner, no_aws, monkeypatch):
    from agent.bench.command.run_info import prices_for
    from rigs.catalog import pricing

    offline = pricing.parse_offline_prices("""
bedrock_on_demand:
  - {model_id: amazon.nova-micro-v1:0, service_tier: flex, usd_per_million_input: 0.0175,
     usd_per_million_output: 0.07, region: us-east-1, as_of: 2026-11-29, source: a test's price}
""")
    monkeypatch.setattr(pricing, "load_offline_prices", lambda *a: offline)
    assert run_module.main(["--bedrock-tier", "flex", "--list"], env={}) == 0
    prices = prices_for([bedrock_backend(CATALOG, PROFILE, "us-east-1", "flex")], None)
    assert prices["backends"]["bedrock"]["per_token"]["service_tier"] == "flex"
    assert prices["bedrock_reference"]["usd_per_m_output"] == 0.07  # the break-even is against the same tier
    g6_only = prices_for([], None, bedrock_tier="flex")
    assert g6_only["bedrock_reference"]["service_tier"] == "flex"


# --- the whole path: a stand-in's run writes it into summary.json and REPORT.md -------------------


def test_a_run_records_what_served_each_backend_in_summary_json_and_the_report(tmp_path: Path):
    from agent.bench.command import runner as bench_runner

    from tests.agent.bench.conftest import make_options

    with FakeOpenAI(Script(), pages=vllm_pages(G6.model_id, version="0.29.1")) as fake:
        backend = read(g6_backend(fake.base_url, instance_id="i-0abc", instance_type="g6.xlarge"))
        bench_runner.run([backend], make_options("--runs", "1", "--demos", "chat"), tmp_path, None)
    summary = json.loads((tmp_path / "summary.json").read_text())
    provenance = summary["backends"]["g6"]["provenance"]
    assert provenance["mismatches"] == ["engine version is 0.29.1 (GET /version) where the catalog expects 0.30.0 "
                                        "(catalog image tag v0.30.0)"]
    assert summary["run"]["backends"][0]["provenance"]["read"]["engine"]["value"] == "vLLM"
    report = (tmp_path / "REPORT.md").read_text()
    assert "## What served each backend" in report and "**Mismatches with the catalog (1):**" in report
    assert "| g6 | engine version | 0.29.1 (GET /version) | 0.30.0 (catalog image tag v0.30.0) | **MISMATCH** |" in report
