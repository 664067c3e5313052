"""``rigs rehearse --model ID``: each rig as it will serve the model (the size it fits, or left out with its one
line), the cost bound and the estimate for those sizes, the ``-c`` values the ups get, ``--workload`` passed to the
benchmark and its context to the vLLM rigs (``max_model_len.<rig>``); and ``up``/``prices`` with ``-c model.<rig>``
pricing the size that will launch."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from kit.command import UsageError
from rigs.catalog.prices import HourlyPrice
from rigs.catalog.pricing import PriceBook, PriceError
from rigs.rehearsal import bench_options, flow, prepare
from rigs.rehearsal.state import Options
from tests.rigs.rehearsal.test_rehearsal import CATALOG, counted_preflight, state  # noqa: F401 - the fixture

QWEN_32B = "Qwen/Qwen3-32B"  # 61.1 GiB of bfloat16 weights: four L4s (g6.12xlarge), no g5g size
G5G_WHY = "cannot serve Qwen/Qwen3-32B: fits no g5g size at 16,384 tokens: the largest, g5g.16xlarge (2 x NVIDIA T4G), is "
GPT_OSS = "openai/gpt-oss-20b"  # GptOssForCausalLM: no class AWS's vLLM Neuron image serves
NEURON_WHY = (f"cannot serve {GPT_OSS}: inf2 cannot serve it: its hand-ported image serves "
              "Gemma 4 E2B only")


def everything() -> list:
    return [CATALOG.get(name) for name in CATALOG.rigs]


def test_each_rig_serves_the_model_on_the_size_it_fits_or_is_left_out_with_why():
    chosen = prepare.choose(Options(model=QWEN_32B), CATALOG, everything())
    assert [(r.name, r.instance_type) for r in chosen.rigs] == [
        ("g6", "g6.12xlarge"), ("inf2", "inf2.24xlarge"), ("trn1", "trn1.32xlarge"), ("sagemaker", "ml.g6.12xlarge")]
    assert chosen.left_out["g5g"].startswith(G5G_WHY)
    assert chosen.sized[1].startswith("inf2: Qwen/Qwen3-32B on inf2.24xlarge with AWS's vLLM Neuron image, tensor "
                                      "parallel 8 over NeuronCores")
    assert chosen.left_out["bedrock"].startswith("serves Amazon Nova Micro, not Qwen/Qwen3-32B")
    assert chosen.left_out["bedrock-mantle"].startswith("Bedrock's OpenAI-compatible endpoint serves Qwen/Qwen3-32B "
                                                        "under no id the catalog's models section names")
    assert chosen.sized[0] == ("g6: Qwen/Qwen3-32B on g6.12xlarge (tensor parallel 4) at 8,192 tokens, 20,944 tokens "
                               "of KV cache a replica (2 sequences in all): g6.xlarge is too small for it")
    # per rig: one -c model=ID would make every stack of the app serve it, and a rig it fits no size of refuse synth
    assert chosen.context == {f"model.{rig}": QWEN_32B for rig in ("g6", "inf2", "trn1", "sagemaker")}
    neuron = prepare.choose(Options(model=GPT_OSS), CATALOG, everything())
    assert neuron.left_out["inf2"].startswith(NEURON_WHY) and neuron.left_out["trn1"].startswith(
        NEURON_WHY.replace("inf2", "trn1"))


def test_bedrock_serves_the_same_model_where_the_catalog_names_its_id_and_the_neuron_rigs_their_own_gemma():
    chosen = prepare.choose(Options(model="google/gemma-4-E2B-it"), CATALOG, everything())
    assert [r.name for r in chosen.rigs] == ["g6", "g5g", "inf2", "trn1", "sagemaker", "bedrock-mantle"]
    assert "inf2: keeps its hand-ported Gemma 4 E2B (google/gemma-4-E2B-it is the same model in another checkpoint)" \
        in chosen.sized and chosen.rigs[2].instance_type == "inf2.xlarge"
    assert chosen.context["model.g5g"] == "google/gemma-4-E2B-it"
    named = prepare.choose(Options(rigs=["g6", "bedrock"], model="openai/gpt-oss-20b"), CATALOG,
                           [CATALOG.get("g6"), CATALOG.get("bedrock")])
    assert [r.name for r in named.rigs] == ["g6", "bedrock"]  # named: benchmarked beside, as another model


@pytest.mark.parametrize("options, problem", [
    (Options(model="acme/Unknown-7B"), "--model acme/Unknown-7B: not in the catalog's models section ("),
    (Options(model="acme/Unknown-7B", model_config=Path("missing.json")), "--model-config missing.json: cannot read"),
    (Options(model=QWEN_32B, big=True), "--big moves the rigs to the catalog's bigger Gemma 4, and --model"),
    (Options(model=QWEN_32B, hf_token_parameter="bad name"), "--hf-token-parameter bad name: give an SSM parameter"),
    (Options(model_config=Path("config.json")), "--model-config: for --model ID"),
])
def test_a_bad_model_option_is_one_line_before_anything(options: Options, problem: str, tmp_path: Path):
    options = options.replace(yes=True, offline=True, evidence=tmp_path / "evidence")
    with pytest.raises(UsageError) as refused:
        flow.run(options, out=io.StringIO())
    assert str(refused.value).startswith(problem) and "\n" not in str(refused.value)
    assert not options.evidence.exists()


def test_max_usd_bounds_the_size_the_model_moves_the_rig_to(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    options = Options(rigs=["g6", "g5g"], model=QWEN_32B, yes=True, offline=True, max_usd=15,
                      evidence=tmp_path / "evidence")
    with pytest.raises(UsageError) as refused:  # the dated file's 4.6016 $/h x 4 h = $18.41; g5g is left out
        flow.run(options, out=io.StringIO())
    assert str(refused.value).startswith("--max-usd 15: the rigs could cost up to $18.41 (")
    asked: Counter = Counter()

    def unpriced(book: PriceBook, instance_type: str, region: str) -> HourlyPrice:
        asked[instance_type] += 1
        raise PriceError(f"no price for {instance_type} in {region}")

    monkeypatch.setattr(PriceBook, "instance_hourly_price", unpriced)
    # a size with no known price cannot be bounded: refused, never counted as free
    with pytest.raises(UsageError, match=r"^--max-usd 15: no price known for g6 \(small, g6\.12xlarge\), so the cost "
                                         r"cannot be "):
        flow.run(options, out=io.StringIO())
    assert set(asked) == {"g6.12xlarge"} and not options.evidence.exists()


def test_the_plan_checks_prices_and_deploys_the_sized_rig_and_passes_the_workload(counted_preflight: Counter,
                                                                                   tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch):
    dated = PriceBook.instance_hourly_price

    def without_the_moved_size(book: PriceBook, instance_type: str, region: str) -> HourlyPrice:
        if instance_type == "g6.12xlarge":
            raise PriceError(f"no price for {instance_type} in {region}")
        return dated(book, instance_type, region)

    monkeypatch.setattr(PriceBook, "instance_hourly_price", without_the_moved_size)
    workload = tmp_path / "traffic.yaml"  # every request 3,000 + 1,000 tokens: 4,000, rounded up to 4,096
    workload.write_text("output_tokens_per_month: 1.5B\npeak_to_average: 4\nprompt_input_tokens_mean: 3000\n"
                        "output_tokens_mean: 1000\n")
    options = Options(rigs=["g6", "g5g", "bedrock"], model=QWEN_32B, yes=True, bootstrap=True,
                      workload=str(workload), bench_options="--demos chat")
    tokens = bench_options.server_context(options.bench_options, options.workload)
    chosen = prepare.choose(options, CATALOG, [CATALOG.get(name) for name in options.rigs], tokens)
    assert tokens == 4096 and chosen.context == {"model.g6": QWEN_32B, "max_model_len.g6": "4096"}  # g5g: left out
    out = io.StringIO()
    (tmp_path / "evidence").mkdir()
    rehearsal = state(options, tmp_path / "evidence", out)
    rehearsal.bench = bench_options.prepare(options.bench_options, False, options.workload)
    rehearsal.skipped, rehearsal.context, rehearsal.sized = chosen.left_out, chosen.context, chosen.sized
    rehearsal.context_tokens = tokens
    assert prepare.plan(rehearsal, chosen.rigs) is not None
    assert set(counted_preflight) == {("g6", region) for region in CATALOG.get("g6").regions}  # g5g: left out
    said = out.getvalue()
    assert "model: Qwen/Qwen3-32B on every rig that can serve it" in said
    assert ("context: 4,096 tokens, the workload's longest request as the benchmark counts it, on every rig that "
            "serves any model (-c max_model_len.<rig>=4096;") in said
    assert "  g6: Qwen/Qwen3-32B on g6.12xlarge (tensor parallel 4) at 4,096 tokens" in said
    assert f"  g5g: skipped: {G5G_WHY.replace('16,384', '4,096')}" in said
    assert rehearsal.bedrock == ("bedrock",)  # named, so benchmarked beside (another model), billed per token
    assert "  bedrock          benchmarked, nothing to deploy; billed per token ($0.035/M in" in said
    assert f"benchmark: python -m agent.run --demos chat --workload {workload}" in said
    assert "small model (Qwen/Qwen3-32B; g6): up to" in said
    # the size the model moved the rig to has no known price: said unpriced, never "up to $0.00" (issue 31)
    assert "unpriced (g6 (g6.12xlarge): no price known)" in said and "$0.00" not in said
    plan = json.loads((tmp_path / "evidence" / "plan.json").read_text())
    assert [(p["rig"], p["instance_type"], p["model_id"]) for p in plan["phases"]] == [("g6", "g6.12xlarge", QWEN_32B)]
    assert plan["model"] == QWEN_32B and plan["skipped"]["g5g"].startswith(G5G_WHY.replace("16,384", "4,096"))
    assert plan["context_tokens"] == 4096
    assert plan["estimate"]["unpriced"] == ["g6 (small, g6.12xlarge)"]
    g6, _ = rehearsal.phases[0].plans["g6"]
    assert g6.instance_type == "g6.12xlarge" and "--tensor-parallel-size" in g6.serve_flags  # what up deploys
    assert g6.serve_flags[g6.serve_flags.index("--max-model-len") + 1] == "4096"


def test_the_workloads_context_sizes_the_rigs_before_the_cost_bound(tmp_path: Path):
    workload = tmp_path / "long.yaml"  # 30,000 + 1,000 tokens, rounded up to 31,232: over one L4 for Qwen3 8B
    workload.write_text("prompt_input_tokens_mean: 30000\noutput_tokens_mean: 1000\n")
    options = Options(rigs=["g6"], model="Qwen/Qwen3-8B", yes=True, offline=True, max_usd=10,
                      workload=str(workload), evidence=tmp_path / "evidence")
    with pytest.raises(UsageError, match=r"^--max-usd 10: the rigs could cost up to \$18\.41 "):
        flow.run(options, out=io.StringIO())  # g6.12xlarge's 4.6016 $/h x 4 h, not g6.xlarge's
    chosen = prepare.choose(Options(), CATALOG, [CATALOG.get("g5g"), CATALOG.get("trn1")], 31232)
    assert chosen.context == {"max_model_len.g5g": "31232"}  # without --model: the rigs' own, at the context
    assert chosen.sized[0].startswith("g5g: google/gemma-4-E2B-it on g5g.2xlarge at 31,232 tokens")
    assert [r.name for r in chosen.rigs] == ["g5g", "trn1"]


def test_a_workload_given_twice_is_refused():
    with pytest.raises(UsageError, match="give the workload once"):
        bench_options.prepare("--workload peak_to_average=2", offline=True, workload="peak_to_average=3")



def test_the_rig_as_served_takes_its_variant_then_the_model():
    from rigs.deploy.model_options import served_rig

    big = served_rig(CATALOG.get("g6"), CATALOG, {"g6_variant": "big"}.get)
    assert (big.rig.model_id, big.rig.ready_timeout_minutes) == ("google/gemma-4-12B-it-qat-w4a16-ct", 50)
    assert big.said is None  # no model asked: nothing to say
    sized = served_rig(CATALOG.get("g6"), CATALOG, {"g6_variant": "big", "model": QWEN_32B}.get)
    # the variant's boot (its 50 minutes less its 7.6 GiB's download 3 and load 2), then Qwen3 32B's 61.1 GiB
    assert (sized.rig.instance_type, sized.rig.ready_timeout_minutes) == ("g6.12xlarge", 45 + 21 + 9)


SIZED_SAGEMAKER = ["-c", "model.sagemaker=Qwen/Qwen3-8B", "-c", "instance_type.sagemaker=ml.g6.4xlarge"]


def test_up_and_prices_price_the_size_the_model_is_served_on(counted_preflight: Counter, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture) -> None:
    from rigs.cli import main

    evidence = tmp_path / "up"
    # ml.g6.4xlarge at $1.654/h (rigs/prices.yaml) x 4 h = $6.62; the catalog's ml.g6.xlarge would be $4.51
    assert main(["up", "sagemaker", *SIZED_SAGEMAKER, "--max-usd", "5", "--evidence", str(evidence)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("InferenceSageMaker: Qwen/Qwen3-8B on ml.g6.4xlarge at 8,192 tokens")
    assert err[-1].startswith("error: --max-usd 5: the rigs could cost up to $6.62 (") and not evidence.exists()
    assert main(["prices", "sagemaker", *SIZED_SAGEMAKER, "--regions", "us-east-2", "--json"]) == 0
    priced, = json.loads(capsys.readouterr().out)
    assert (priced["instance_type"], priced["usd_per_hour"]) == ("ml.g6.4xlarge", 1.654)
    for command in ("prices", "doctor", "preflight"):
        assert main([command, "inf2", "-c", f"model.inf2={GPT_OSS}"]) == 2
        assert capsys.readouterr().err.startswith(f"error: -c model.inf2={GPT_OSS}: inf2 cannot serve it: its hand-")
    assert counted_preflight == Counter()  # refused before any other check


def test_preflight_checks_the_served_size_and_up_checks_again_for_another(counted_preflight: Counter,
                                                                          capsys: pytest.CaptureFixture) -> None:
    from rigs import aws
    from rigs.cli import main
    from rigs.placement import placement
    from rigs.deploy.sequence import DeploySequence

    assert main(["preflight", "g6", "-c", "model.g6=Qwen/Qwen3-32B", "--regions", "us-east-1", "--json"]) == 0
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert {(c["rig"], c["instance_type"]) for c in checks} == {("g6", "g6.12xlarge")}
    assert placement.load().get("g6").instance_type == "g6.12xlarge"
    announced: list[list[str]] = []
    DeploySequence(aws.make_session(), show=lambda _table: None).plans(
        [CATALOG.get("g6")], fresh=False, announce=lambda need: announced.append([r.instance_type for r in need]))
    assert announced == [["g6.xlarge"]]  # recorded for another size: preflight again before it deploys
