"""Custom servers are not rigs: a ``*_URL`` backend is labelled with the model its server reports, priced
and roofed only for a stated instance type, and a deployed rig it hides is reported as billing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterator

import pytest

from agent import run as run_module
from agent.backends import custom_backend, from_env
from agent.bench.presentation import report
from agent.bench.command import runner
from agent.bench.analysis import summary
from agent.reach.custom_server import identify, served_models
from agent.plan import make_plan
from rigs.catalog.model import load_catalog

from tests.agent.bench.conftest import make_options
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.fakes.scripted import Script
from tests.agent.conftest import ChatServer
from tests.agent.conftest import _ChatHandler
from tests.agent.test_plan import found_g6
from tests.agent.test_run import _stub_ssm_online

CATALOG = load_catalog()


class _ModelsHandler(_ChatHandler):
    """The chat server plus ``GET /v1/models``, like vLLM, llama.cpp and every OpenAI-compatible server."""

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        if self.path != "/v1/models":
            self.send_error(404)
            return
        body = json.dumps({"object": "list", "data": [{"id": "SmolLM2-135M-Instruct-Q4_1", "object": "model"}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def models_server() -> Iterator[ChatServer]:
    server = ChatServer()
    server.httpd.RequestHandlerClass = _ModelsHandler
    yield server
    server.close()


def test_a_url_is_a_custom_server_without_price_or_device():
    (g6,) = from_env({"G6_URL": "http://127.0.0.1:8001"}, CATALOG).backends
    assert g6.custom and g6.label == "custom server at G6_URL"
    assert "instance_type" not in g6.metadata and "image" not in g6.metadata and "serve_flags" not in g6.metadata
    assert "set G6_INSTANCE_TYPE" in g6.metadata["unpriced"]
    assert (g6.kind, g6.tool_calls) == ("openai", True)  # driven like the rig the variable names


def test_a_stated_instance_type_prices_it():
    (g6,) = from_env({"G6_URL": "http://h:1", "G6_INSTANCE_TYPE": "g6.xlarge"}, CATALOG).backends
    assert g6.metadata["instance_type"] == "g6.xlarge" and g6.metadata["instance_type_source"] == "stated by G6_INSTANCE_TYPE"
    assert g6.label == "custom server at G6_URL on g6.xlarge (stated)" and "unpriced" not in g6.metadata
    for wrong in ("a big one", "g6.xl", "g6.xlarge2", "ml.g6.xl"):  # g6.xl looks like one, and is not
        with pytest.raises(ValueError, match=f"G6_INSTANCE_TYPE='{wrong}' is not an EC2 or SageMaker instance type"):
            from_env({"G6_URL": "http://h:1", "G6_INSTANCE_TYPE": wrong}, CATALOG)
    (sm,) = from_env({"G6_URL": "http://h:1", "G6_INSTANCE_TYPE": "ml.g6.xlarge"}, CATALOG).backends
    assert sm.metadata["instance_type"] == "ml.g6.xlarge"


def test_a_bad_instance_type_is_one_line_and_exit_2(no_aws, fake_runner, capsys):  # noqa: F811
    assert run_module.main(["--list"], env={"G6_URL": "http://127.0.0.1:9", "G6_INSTANCE_TYPE": "huge"}) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "G6_INSTANCE_TYPE='huge' is not an EC2 or SageMaker instance type" in err[0]


def test_the_server_names_its_model(models_server):
    assert served_models(models_server.base_url) == ["SmolLM2-135M-Instruct-Q4_1"]
    (g6,) = from_env({"G6_URL": models_server.base_url}, CATALOG).backends
    named = identify(g6)
    assert named.model_id == "SmolLM2-135M-Instruct-Q4_1"
    assert named.label == "custom server at G6_URL serving SmolLM2-135M-Instruct-Q4_1"
    # a stated model id is kept, and a mismatch with what the server lists is noted
    (stated,) = from_env({"G6_URL": models_server.base_url, "G6_MODEL": "other"}, CATALOG).backends
    kept = identify(stated)
    assert kept.model_id == "other" and "G6_MODEL=other is not among the models" in kept.metadata["model_note"]
    # the catalog's name of the model, kept only where the catalog knows the id (what the recommendation compares)
    assert "model_name" not in named.metadata and "model_name" not in kept.metadata
    (gemma,) = from_env({"G6_URL": models_server.base_url, "G6_MODEL": "google/gemma-4-E2B-it"}, CATALOG).backends
    assert identify(gemma).metadata["model_name"] == "Gemma 4 E2B"


def test_a_server_without_a_model_list_is_labelled_so():
    (g6,) = from_env({"G6_URL": "http://127.0.0.1:9"}, CATALOG).backends
    named = identify(g6, timeout_s=2)
    assert named.label == "custom server at G6_URL (model not reported)"
    assert named.metadata["served_models"].startswith("not reported (connection refused")
    assert named.model_id == CATALOG.get("g6").model_id and "set G6_MODEL" in named.metadata["model_note"]


def test_list_shows_the_custom_label(no_aws, fake_runner, models_server, capsys):  # noqa: F811
    assert run_module.main(["--list"], env={"G6_URL": models_server.base_url}) == 0
    out = capsys.readouterr().out
    assert "custom server at G6_URL serving SmolLM2-135M-Instruct-Q4_1" in out
    assert "not priced (no instance type stated)" in out


def _run(tmp_path: Path, instance_type: str | None) -> tuple[dict[str, Any], str]:
    """A chat run on a fake server given as G6_URL (with G6_INSTANCE_TYPE when ``instance_type``)."""
    with FakeOpenAI(Script(chunk_delay_s=0.001)) as fake:
        b = identify(custom_backend(CATALOG.get("g6"), "G6", fake.base_url, None, instance_type))
        out = tmp_path / "out"
        runner.run([b], make_options("--runs", "2", "--demos", "chat"), out, None)
    return json.loads((out / "summary.json").read_text()), (out / "REPORT.md").read_text()


def test_evidence_of_a_custom_server_claims_no_rig(tmp_path):
    s, text = _run(tmp_path, None)
    summary.validate(s)
    g6 = s["backends"]["g6"]
    assert g6["custom"] and g6["label"].startswith("custom server at G6_URL")
    assert "L4" not in g6["label"] and "vLLM" not in g6["label"]
    assert g6["cost"]["usd_per_hour"] is None and g6["cost"]["monthly_24x7_usd"] is None
    assert "set G6_INSTANCE_TYPE" in s["prices"]["backends"]["g6"]["reason"]
    assert g6["ceiling"]["ceiling_tok_per_s"] is None and g6["ceiling"]["share"] is None
    assert "set G6_INSTANCE_TYPE" in g6["ceiling"]["reason"]
    assert "| g6 (custom server) |" in text and "0.8048" not in text.split("## Cost")[1].split("## Bandwidth")[0]


def test_evidence_of_a_custom_server_on_a_stated_type(tmp_path):
    s, text = _run(tmp_path, "g6.xlarge")
    g6 = s["backends"]["g6"]
    assert g6["cost"]["usd_per_hour"] == 0.8048 and g6["cost"]["monthly_24x7_usd"] == 587.5
    assert g6["ceiling"]["device"] == "nvidia-l4"
    assert report.render(summary.validate(s)) == text


def test_a_url_over_a_deployed_rig_is_a_shadow():
    env = from_env({"G6_URL": "http://127.0.0.1:9"}, CATALOG)
    from agent.reach.discovery import Discovery

    found = found_g6()
    plan = make_plan(catalog=CATALOG, env=env, selection=None, local=False, aws_ok=True,
                     discovery=Discovery(regions=("us-east-2",), rigs=[found]))
    assert [(b.name, f.instance_id) for b, f in plan.shadowed] == [("g6", "i-0abc")]
    assert [b.name for b in plan.ready if b.name == "g6"] == ["g6"] and plan.forwards == []


def test_list_and_run_say_a_url_hides_a_billing_rig(aws, fake_runner, models_server, monkeypatch, tmp_path,  # noqa: F811
                                                    capsys):
    from tests.agent.reach.test_discovery import make_ec2_rig

    instance = make_ec2_rig(aws, "us-east-2", "g6")
    monkeypatch.setattr(run_module, "AwsClients", _stub_ssm_online(instance))
    env = {"G6_URL": models_server.base_url}
    assert run_module.main(["--list"], env=env) == 0
    out = capsys.readouterr().out
    assert "Deployed but not measured" in out
    assert (f"G6_URL is benchmarked instead of the deployed rig g6 ({instance}, g6.xlarge, us-east-2), which is "
            "running and billing") in out
    assert "billing at $0.8048/h" in out
    assert "g6: no deployed stack" not in out

    monkeypatch.setattr(run_module, "AwsClients", _stub_ssm_online(instance))
    run_module.main(["--out", str(tmp_path)], env=env)
    captured = capsys.readouterr()
    assert "warning: G6_URL is benchmarked instead of the deployed rig g6" in captured.out + captured.err
    (call,) = fake_runner.calls
    backend = next(b for b in call["backends"] if b.name == "g6")
    assert backend.custom and backend.base_url == models_server.base_url
    assert "billing at $0.8048/h" in backend.metadata["shadows"]
