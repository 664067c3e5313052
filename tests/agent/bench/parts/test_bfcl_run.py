"""The ``bfcl`` part end to end through the runner against the scripted server: ground truth
scores 100%, deliberate mistakes score 0, streamed and not; the evidence recomputes; pairs, options,
skips and a dead backend."""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

import jsonschema
import pytest

from agent.backends import MantleSettings, mantle_backend
from agent.bench.parts import bfcl, stopping
from agent.bench.analysis import stats, summary
from agent.bench.analysis.blocks import bfcl as bfcl_summary
from agent.bench.results import schema as results_schema
from agent.bench.results.blocks.bfcl import BfclCase
from agent.bench.command import runner
from agent.bench.command.options import BenchOptions
from agent.bench.presentation import report
from agent.bench.tasks.bfcl_cases import CATEGORIES, BfclUnavailableError
from agent.run import build_parser
from rigs import aws
from rigs.catalog.model import load_catalog

from tests.agent.bench.fakes.bfcl_answers import BfclAnswers
from tests.agent.bench.fakes.mantle_fake import MantleFake
from tests.agent.bench.fakes.openai_fake import FakeOpenAI
from tests.agent.bench.conftest import openai_backend
from tests.agent.bench.conftest import run_demo
from tests.agent.bench.fakes.synthetic import backend
from tests.agent.bench.fakes.synthetic import bfcl as bfcl_block


def run(tmp_path: Path, backends, *argv: str) -> tuple[int, dict, list[dict], Path]:
    return run_demo(tmp_path, backends, "bfcl", *argv)


@pytest.fixture(scope="module")
def truth():
    with FakeOpenAI(BfclAnswers("truth")) as server:
        yield server


@pytest.fixture(scope="module")
def wrong():
    with FakeOpenAI(BfclAnswers("wrong")) as server:
        yield server


@pytest.mark.parametrize("stream", [False, True])
def test_ground_truth_answers_score_every_case(tmp_path, truth, stream):
    argv = ["--bfcl-n", "25", "--bfcl-seed", "3", "--concurrency", "1,4"] + (["--bfcl-stream"] if stream else [])
    code, s, records, out = run(tmp_path, [openai_backend("g6", truth.base_url)], *argv)
    assert code == 0
    b = s["backends"]["g6"]["bfcl"]
    assert (b["cases"], b["correct"], b["accuracy"], b["errors"]) == (25, 25, 1.0, 0)
    assert (b["text_calls"], b["missed_calls"], b["spurious_calls"]) == (0, 0, 0)
    assert b["streamed"] is stream and b["interface"] == "openai-tools"
    assert {c: v["cases"] for c, v in b["by_category"].items()} == dict.fromkeys(CATEGORIES, 5)
    assert all(v["accuracy"] == 1.0 for v in b["by_category"].values())
    assert (b["ci95_low"], b["ci95_high"]) == tuple(round(x, 4) for x in stats.wilson_interval(25, 25))
    # every case is one self-contained record: the case as sent and what came back
    assert len(records) == 25 and {r["part"] for r in records} == {"bfcl"}
    schema = json.loads((Path(results_schema.__file__).parent / "requests.schema.json").read_text())
    for record in records:  # every case, irrelevance ones (no ground truth) included, as the schema says
        jsonschema.validate(record, schema)
    r = next(r for r in records if r["category"] == "parallel_multiple")
    assert r["functions"] and r["ground_truth"] and r["messages"][0]["role"] == "user" and r["seed"] == 3
    assert len(r["calls"]) >= 2 and all(isinstance(c["arguments"], str) for c in r["calls"])
    assert r["streamed"] is stream and r["error"] is None and r["output_tokens"]
    run_info = json.loads((out / "run.json").read_text())
    assert {k: run_info["options"][k] for k in ("bfcl_n", "bfcl_seed", "bfcl_stream", "bfcl_concurrency")} == {
        "bfcl_n": 25, "bfcl_seed": 3, "bfcl_stream": stream, "bfcl_concurrency": 4}
    assert len(truth.requests) >= 25
    text = (out / "REPORT.md").read_text()
    assert "## Tool calling (BFCL cases)" in text and "25/25 = 100.0% (86.7%-100.0%)" in text


@pytest.mark.parametrize("stream", [False, True])
def test_deliberately_wrong_answers_score_nothing(tmp_path, wrong, stream):
    code, s, records, out = run(tmp_path, [openai_backend("g6", wrong.base_url)], "--bfcl-n", "20",
                                *(["--bfcl-stream"] if stream else []))  # fmt: skip
    b = s["backends"]["g6"]["bfcl"]
    assert (b["cases"], b["correct"], b["accuracy"], b["errors"]) == (20, 0, 0.0, 0)
    assert b["spurious_calls"] == 4 == b["irrelevance_cases"]
    assert b["missed_calls"] == b["text_calls"] > 0 and b["outcomes"]["wrong_call"] > 0
    assert code == 0  # wrong answers are grades, not failures
    text = (out / "REPORT.md").read_text()
    assert "0/20 = 0.0%" in text and re.search(r"missed_call: no call was made; written as text: `\w+\(x=1\)`", text)


def test_the_bfcl_block_recomputes_from_the_evidence(tmp_path, truth, wrong):
    code, s, records, out = run(tmp_path, [openai_backend("g6", truth.base_url),
                                           openai_backend("g5g", wrong.base_url)], "--bfcl-n", "10")
    again = summary.summarize(records, json.loads((out / "run.json").read_text()))
    assert again.as_json() == s
    assert report.render(summary.validate(s)) == (out / "REPORT.md").read_text()
    # each grade names the record it came from
    for d in s["backends"]["g5g"]["bfcl"]["detail"]:
        assert next(r for r in records if r["seq"] == d["seq"])["case"] == d["case"]


def test_a_pair_that_differs_is_called_and_one_that_does_not_is_not(tmp_path, truth, wrong):
    backends = [openai_backend("g6", truth.base_url), openai_backend("sagemaker", truth.base_url),
                openai_backend("g5g", wrong.base_url)]
    code, s, records, out = run(tmp_path, backends, "--bfcl-n", "10")
    pairs = {(p["a"], p["b"]): p for p in s["bfcl_pairs"]}
    assert list(pairs) == [("g6", "sagemaker"), ("g6", "g5g"), ("sagemaker", "g5g")]
    twin = pairs[("g6", "sagemaker")]
    assert (twin["cases"], twin["only_a"], twin["only_b"], twin["p_value"]) == (10, 0, 0, 1.0)
    assert twin["verdict"] == "no measurable difference" and twin["same_calls"] == 10 and twin["differing_cases"] == []
    apart = pairs[("g6", "g5g")]
    p = stats.mcnemar_exact(10, 0)
    assert (apart["only_a"], apart["only_b"], apart["p_value"]) == (10, 0, float(f"{p:.4g}"))
    assert apart["verdict"] == f"g6 is better than g5g on these cases (p = {p:.2g})" == \
        "g6 is better than g5g on these cases (p = 0.002)"
    text = (out / "REPORT.md").read_text()
    assert ("**g6 and sagemaker serve the same weights with the same tool parser:** of 10 cases both answered, "
            "they agree on every case; the very same calls on 10. McNemar: no measurable difference.") in text


def test_mcnemar_uses_only_the_cases_both_answered():
    def block(outcomes):
        detail = [BfclCase(seq=i, case=f"c{i}", category="simple", outcome=o, reason=None, text_call=None, calls=[],
                           correct=None if o == "error" else o == "correct") for i, o in enumerate(outcomes)]
        entry, _ = backend("x", bfcl_block=bfcl_block(len(outcomes), 0, 0.0, 1.0).model_copy(update={"detail": detail}))
        return entry

    a = block(["correct"] * 6 + ["wrong_call"] * 2 + ["error"])
    b = block(["wrong_call"] * 5 + ["correct"] * 3 + ["correct"])
    (pair,) = bfcl_summary.pairs({"a": a, "b": b})
    assert (pair.cases, pair.only_a, pair.only_b) == (8, 5, 2)
    assert pair.p_value == float(f"{stats.mcnemar_exact(5, 2):.4g}") == 0.4531
    assert pair.verdict == "no measurable difference"
    assert pair.differing_cases == ["c0", "c1", "c2", "c3", "c4", "c6", "c7"]


def test_neuron_takes_no_part_and_a_dead_backend_is_stopped_early(tmp_path, truth):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    backends = [openai_backend("g6", truth.base_url),
                openai_backend("g5g", f"http://127.0.0.1:{port}/v1"),
                openai_backend("inf2", truth.base_url, kind="neuron", tool_calls=False)]
    code, s, records, out = run(tmp_path, backends, "--bfcl-n", "30")
    assert code == 1
    assert s["backends"]["g6"]["completed"] and s["backends"]["g6"]["bfcl"]["correct"] == 30
    inf2 = s["backends"]["inf2"]
    assert inf2["bfcl"] is None and inf2["skipped"]["bfcl"].startswith("no tool calls (the Neuron server") and \
        inf2["completed"]
    dead = s["backends"]["g5g"]
    limit = stopping.DEFAULT_MAX_CONSECUTIVE_FAILURES  # the same failure streak as every other part
    assert dead["bfcl"]["requests"] == limit == dead["bfcl"]["errors"]
    assert dead["bfcl"]["cases"] == 0 and dead["bfcl"]["accuracy"] is None
    assert not dead["completed"] and any(f.startswith(f"bfcl: stopped after {limit} consecutive failures")
                                         for f in dead["failures"])
    assert [p["cases"] for p in s["bfcl_pairs"]] == [0] and s["bfcl_pairs"][0]["verdict"] == "no case answered by both"
    assert "g5g: error: ClientConnectorError" in (out / "REPORT.md").read_text()


def test_without_bfcl_eval_the_part_fails_with_the_install_line(tmp_path, truth, monkeypatch):
    def missing(*_a, **_k):
        raise BfclUnavailableError("the bfcl-eval package is not installed; run ./scripts/setup")

    monkeypatch.setattr(bfcl, "sample_cases", missing)
    code, s, records, out = run(tmp_path, [openai_backend("g6", truth.base_url)])
    assert code == 1 and records == []
    g6 = s["backends"]["g6"]
    assert g6["skipped"]["bfcl"].startswith("failed: the bfcl-eval package is not installed") and not g6["completed"]


def test_parallel_cases_are_not_offered_on_bedrocks_gemma_4_never_sent_nor_counted_as_failures(tmp_path, truth,
                                                                                              monkeypatch):
    """Gemma 4 on Bedrock does not offer parallel tool calls (its model card, the catalog's bedrock_endpoint): its
    parallel cases are not sent, are left out of its accuracy and its pair with g6, and the report says so."""
    monkeypatch.setenv(aws.MANTLE_TOKEN_VAR, "bedrock-api-key")
    catalog = load_catalog()
    with MantleFake(BfclAnswers("truth")) as bedrock:
        env = {aws.MANTLE_ENDPOINT_VAR: bedrock.endpoint, aws.MANTLE_TOKEN_VAR: "bedrock-api-key"}
        mantle = mantle_backend(catalog, MantleSettings.from_env(env.get, catalog, None))
        code, s, records, out = run(tmp_path, [mantle, openai_backend("g6", truth.base_url)], "--bfcl-n", "10")
    assert code == 0
    b = s["backends"]["bedrock-mantle"]["bfcl"]
    assert b["not_offered"] == {"parallel": 2, "parallel_multiple": 2}
    assert (b["cases"], b["correct"], b["errors"], b["requests"]) == (6, 6, 0, 6)
    assert set(b["by_category"]) == {"simple", "multiple", "irrelevance"}
    mine = [r for r in records if r["backend"] == "bedrock-mantle"]
    sent = sorted(body["messages"][-1]["content"] for body in bedrock.requests)
    assert sent == sorted(r["messages"][-1]["content"] for r in mine if not r["category"].startswith("parallel"))
    assert all(r["not_offered"] and r["calls"] == [] for r in mine if r["category"].startswith("parallel"))
    assert s["backends"]["g6"]["bfcl"]["cases"] == 10
    (pair,) = s["bfcl_pairs"]
    assert pair["cases"] == 6
    report_text = (out / "REPORT.md").read_text()
    assert ("**bedrock-mantle: 4 cases not offered** (parallel 2, parallel_multiple 2): parallel tool calls: not "
            "offered by its endpoint for its model (https://docs.aws.amazon.com/bedrock/latest/userguide/"
            "model-card-google-gemma-4-e2b.html). Not sent, left out of its accuracy and its pairs, not counted as "
            "failures.") in report_text


def test_the_part_is_not_in_the_default_run_and_its_options_are_checked(capsys):
    parser = build_parser(runner)
    assert "bfcl" not in parser.parse_args([]).demos
    ns = parser.parse_args(["--demos", "bfcl", "--bfcl-n", "all"])
    assert BenchOptions.from_namespace(ns).record(8).bfcl_n == "all"
    for bad, message in ((["--bfcl-n", "0"], "at least 1 case"), (["--bfcl-n", "many"], "a number of cases or 'all'"),
                         (["--bfcl-seed", "x"], "an integer seed")):  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            parser.parse_args(bad)
        assert exc.value.code == 2 and message in capsys.readouterr().err
