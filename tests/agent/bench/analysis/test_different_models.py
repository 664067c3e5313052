"""Like with like: backends serving another model than the comparison's are shown and never chosen, unless
``--compare-models`` lets them compete with the quality lane as the arbiter (docs/recommendation.md, "Different models").

Costs at the default workload (100M output tokens a month, peak 3x, 0.2 input per output): g6 at 131.5 tok/s needs
one instance, $587.50 a month; Bedrock (Nova Micro) 100M x (0.14 + 0.2 x 0.035) / 1e6 = $14.70: the cheaper by far.
"""

from __future__ import annotations

from agent.bench.analysis import stats
from agent.bench.analysis.blocks.orchestrator import summarize_orchestrator
from agent.bench.analysis.recommendation import choose, models
from agent.bench.presentation.sections import which_one
from agent.bench.results.blocks.provenance import FactCheck, ProvenanceBlock
from agent.bench.results.blocks.quality import QualityPair, Weights
from agent.bench.results.summary import Summary

from tests.agent.bench.fakes.synthetic import G6_PRICE, NOVA_MICRO, backend, level, quality, slo, summary

GEMMA = Weights(model="Gemma 4 E2B", precision="W4A16", bytes_per_weight=0.5, memory_gib=None, memory_basis=None,
                engine="vLLM 0.30.0", source=None)
NOVA = Weights(model="Amazon Nova Micro", precision="not published", bytes_per_weight=None, memory_gib=None,
               memory_basis=None, engine="Amazon Bedrock", source=None)
G6_ID, NOVA_ID = "xbill9/gemma-4-E2B-it-qat-q4_0-w4a16-ct-text-emb4", "us.amazon.nova-micro-v1:0"
NOT_COMPARED = "serves Amazon Nova Micro, not Gemma 4 E2B: compared only with --compare-models"


def serving(pair, model_id: str, weights: Weights | None, read: str | None = None, expected: str | None = None):
    """``pair`` (a synthetic backend) asked for ``model_id``, its provenance having read ``read`` from the server."""
    entry, info = pair
    expected = expected or model_id
    verdict = "not reported" if read is None else "match" if read == expected else "mismatch"
    check = FactCheck(fact="model", read=read, read_source="GET /v1/models" if read else None,
                      not_reported=None if read else "the server did not answer", expected=expected,
                      expected_source="the model id every request names", verdict=verdict)
    entry = entry.model_copy(update={"model_id": model_id, "weights": weights,
                                     "provenance": ProvenanceBlock(read_at=None, facts=[check], mismatches=[])})
    return entry, {**info, "model_id": model_id}


def g6(quality_block=None):
    return serving(backend("g6", slo_block=slo(1, [level(1, 131.5)]), quality_block=quality_block), G6_ID, GEMMA,
                   read=G6_ID)


def nova(quality_block=None):
    return serving(backend("bedrock", kind="bedrock", slo_block=slo(8, [level(1, 100.0), level(8, 700.0)]),
                           quality_block=quality_block), NOVA_ID, NOVA, read="amazon.nova-micro-v1:0",
                   expected="amazon.nova-micro-v1:0")


PRICES = {"g6": {"hourly": G6_PRICE}, "bedrock": {"per_token": NOVA_MICRO}}


def pair(a: str, b: str, both_right: int, only_a: int, only_b: int, neither: int) -> QualityPair:
    """The quality lane's pair of ``a`` and ``b`` on these paired outcomes (the lane's own formulas)."""
    n = both_right + only_a + only_b + neither
    low, high = stats.paired_difference_interval(both_right, only_a, only_b, neither)
    p = stats.mcnemar_exact(only_a, only_b)
    return QualityPair(a=a, b=b, both=n, a_accuracy=(both_right + only_a) / n, b_accuracy=(both_right + only_b) / n,
                       a_right_b_wrong=only_a, a_wrong_b_right=only_b, mcnemar_p=p, difference=(only_b - only_a) / n,
                       ci95=(low, high), significant=p < 0.05 and only_a != only_b, same_weights=False,
                       relation="different models", power=0.8, verdict="", flag=None, flipped=[])


def recommend(backends, pairs=(), **kw):
    entries, run = summary(backends, PRICES, bedrock_reference=None, **kw)
    return choose.recommend(entries, run, pairs)


def report(backends, pairs=(), **kw) -> str:
    """The "Which one?" section of REPORT.md for these backends."""
    entries, run = summary(backends, PRICES, bedrock_reference=None, **kw)
    rec, _ = choose.recommend(entries, run, pairs)
    s = Summary(schema_version="1.0", run=run.info(), prices=run.prices, backends=entries, slo_pairs=[],
                orchestrator=summarize_orchestrator([], run, ["chat"]),
                bfcl_pairs=[], recommendation=rec, quality_pairs=list(pairs))
    return "\n".join(which_one.section(s))


def test_a_cheaper_backend_of_another_model_is_shown_never_chosen_and_the_line_says_why():
    rec, add = recommend({"g6": g6(), "bedrock": nova()})
    assert rec.verdict == "choice" and rec.choice == "g6" and rec.leader == "g6" and rec.ranking == ["g6"]
    assert rec.disqualified == {"bedrock": NOT_COMPARED}
    assert rec.headline.endswith(f" bedrock {NOT_COMPARED}.")
    assert add["bedrock"]["monthly_usd"].at_workload is not None  # its measurements stay: priced, only not chosen
    assert rec.models.compared == "Gemma 4 E2B" and rec.models.different == ["bedrock"]
    text = report({"g6": g6(), "bedrock": nova()})
    assert f"| bedrock | {NOT_COMPARED} |" in text and "**Different models**: bedrock serves Amazon Nova Micro" in text


def test_with_compare_models_and_the_quality_lane_it_competes_and_the_report_says_different_models():
    # 600 paired items: 440 right on both, 20 on g6 only, 22 on Bedrock only: +0.3 points [-1.8, +2.5].
    lane = [pair("g6", "bedrock", 440, 20, 22, 118)]
    backends = {"g6": g6(quality(600, 460, 0.73, 0.80)), "bedrock": nova(quality(600, 462, 0.73, 0.80))}
    rec, _ = recommend(backends, lane, compare_models=True)
    assert rec.verdict == "choice" and rec.choice == "bedrock" and rec.runner_up == "g6"
    assert "Different models, compared with --compare-models (the quality lane the arbiter): bedrock serves Amazon " \
           "Nova Micro; the others Gemma 4 E2B." in rec.headline
    assert any("the quality lane admits it" in r and "+0.3 points against g6" in r for r in rec.reasons)
    text = report(backends, lane, compare_models=True)
    assert "**Different models**" in text and "compared with `--compare-models`" in text


def test_with_compare_models_but_no_quality_lane_it_is_not_chosen_and_says_to_run_the_lane():
    rec, _ = recommend({"g6": g6(), "bedrock": nova()}, compare_models=True)
    assert rec.choice == "g6"
    assert rec.disqualified["bedrock"] == ("serves Amazon Nova Micro, not Gemma 4 E2B, so the quality lane decides "
                                           "(--compare-models), and it graded none of its answers: run the quality "
                                           "lane on both (--demos default,quality)")
    # graded on Bedrock only: nothing of the comparison's model to compare it with
    rec, _ = recommend({"g6": g6(), "bedrock": nova(quality(600, 462, 0.73, 0.80))}, compare_models=True)
    assert "it graded no backend serving Gemma 4 E2B to compare it with" in rec.disqualified["bedrock"]


def test_a_different_model_worse_beyond_the_interval_is_disqualified_and_a_wide_interval_is_thin():
    # 60 items right on g6 only, 10 on Bedrock only, of 600: -8.3 points, the whole interval below zero.
    backends = {"g6": g6(quality(600, 500, 0.80, 0.86)), "bedrock": nova(quality(600, 450, 0.71, 0.78))}
    rec, _ = recommend(backends, [pair("g6", "bedrock", 440, 60, 10, 90)], compare_models=True)
    assert rec.choice == "g6" and rec.disqualified["bedrock"].endswith(
        "it answers worse, -8.3 points against g6, the best-answering backend of Gemma 4 E2B (95% interval "
        "[-11.1, -5.7] on 600 paired items)")
    # 40 items: 0 points, but the interval reaches -10: it cannot rule out a drop beyond 3 points, so no choice
    rec, _ = recommend(backends, [pair("g6", "bedrock", 30, 3, 3, 4)], compare_models=True)
    assert rec.verdict == "too_thin" and rec.leader == "bedrock" and rec.choice is None
    assert "cannot rule out a drop of more than 3 points" in rec.headline


def test_the_model_compared_is_the_one_most_backends_serve_a_tie_going_to_the_rigs():
    mantle = serving(backend("bedrock-mantle", kind="bedrock-mantle", slo_block=slo(8, [level(8, 700.0)])),
                     "google.gemma-4-e2b", GEMMA, read="google.gemma-4-e2b")
    entries, _ = summary({"bedrock": nova(), "g6": g6(), "bedrock-mantle": mantle}, PRICES)
    found = models.comparison(entries, compare_models=False)
    assert found.compared == "Gemma 4 E2B" and found.different == ["bedrock"] and found.why.startswith("served by 2 of 3")
    assert found.served["bedrock-mantle"].model == "Gemma 4 E2B"  # another id, the same model
    assert found.served["bedrock"].model == "Amazon Nova Micro"  # the profile's base id matches what was expected
    entries, _ = summary({"bedrock": nova(), "g6": g6()}, PRICES)
    tie = models.comparison(entries, compare_models=False)
    assert tie.compared == "Gemma 4 E2B" and "the model the run's rigs were asked for" in tie.why
    entries, _ = summary({"bedrock": nova()}, PRICES)
    assert models.comparison(entries, compare_models=False).different == []  # one backend compares nothing
    # the local rig's toy model neither counts nor is set apart: its own reason (no price) says why it is not chosen
    entries, run = summary({"local": backend("local", toy=True, slo_block=slo(1, [level(1, 20.0)])), "bedrock": nova(),
                            "g6": g6()}, PRICES)
    found = models.comparison(entries, compare_models=False)
    assert found.compared == "Gemma 4 E2B" and found.different == ["bedrock"] and found.why.startswith("a tie")
    rec, _ = choose.recommend(entries, run)
    assert rec.disqualified["local"].startswith("no price: a CPU-served local toy model")


def test_the_served_model_is_what_the_server_reports_else_what_was_asked():
    other = serving(backend("g6"), G6_ID, GEMMA, read="Qwen/Qwen3-8B")
    served = models.served_model(other[0])
    assert served.model == "Qwen/Qwen3-8B" and f"where {G6_ID} was asked" in served.source
    silent = models.served_model(serving(backend("g6"), G6_ID, GEMMA)[0])
    assert silent.model == "Gemma 4 E2B" and silent.source == "the model asked (the server did not answer)"


def test_a_run_whose_backends_all_serve_one_model_is_unchanged():
    mantle = serving(backend("bedrock", kind="bedrock-mantle", slo_block=slo(8, [level(1, 100.0), level(8, 700.0)])),
                     "google.gemma-4-e2b", GEMMA, read="google.gemma-4-e2b")
    rec, _ = recommend({"g6": g6(), "bedrock": mantle})
    assert rec.choice == "bedrock" and rec.disqualified == {} and "model" not in rec.headline.lower()
    assert "**Different models**" not in report({"g6": g6(), "bedrock": mantle})


def test_a_backend_not_run_of_another_model_does_not_hold_the_choice_back():
    # Nova Micro's list price, 100M x $0.147/M = $14.70 a month, is below g6's $587.50; but it serves another model
    not_run = {"bedrock": {"label": "Amazon Bedrock (Nova Micro)", "model": "Amazon Nova Micro", "tool_calls": True,
                           "per_token": NOVA_MICRO}}
    entries, run = summary({"g6": g6()}, PRICES, not_run=not_run, bedrock_reference=None)
    rec, _ = choose.recommend(entries, run)
    assert rec.verdict == "choice" and rec.choice == "g6" and "bedrock" not in rec.headline
    entries, run = summary({"g6": g6()}, PRICES, not_run=not_run, bedrock_reference=None, compare_models=True)
    rec, _ = choose.recommend(entries, run)
    assert rec.verdict == "too_thin" and "bedrock was not run and could cost less here" in rec.headline


GPT_OSS = Weights(model="gpt-oss-20b", precision="MXFP4", bytes_per_weight=None, memory_gib=None, memory_basis=None,
                  engine="vLLM 0.30.0", source=None)


def test_a_rig_not_run_that_cannot_serve_the_model_says_why_in_one_line():
    """A run for gpt-oss-20b: the Neuron rigs of the catalog, not run, cannot serve it (no class AWS's vLLM Neuron
    image serves), and "Which one?" says so beside the model, from what run.json recorded at run time."""
    from agent.bench.command.run_info import not_run_prices
    from rigs.catalog.pricing import PriceBook

    recorded = not_run_prices(PriceBook(None), ["g6", "g5g", "sagemaker", "bedrock", "bedrock-mantle"],
                              asked=["openai/gpt-oss-20b"])
    assert set(recorded) == {"inf2", "trn1"} and recorded["inf2"]["model"] == "Gemma 4 E2B"
    why = recorded["inf2"]["cannot_serve"]["gpt-oss-20b"]
    assert why.startswith("inf2 cannot serve it: its hand-ported image serves Gemma 4 E2B only") and \
        why.endswith("and gpt-oss-20b is GptOssForCausalLM")
    backends = {"g6": serving(backend("g6", slo_block=slo(1, [level(1, 131.5)])), "openai/gpt-oss-20b", GPT_OSS,
                              read="openai/gpt-oss-20b")}
    rec, _ = recommend(backends, not_run=recorded)
    assert rec.models.compared == "gpt-oss-20b" and rec.models.cannot_serve == {
        "inf2": why, "trn1": recorded["trn1"]["cannot_serve"]["gpt-oss-20b"]}
    assert f"- **Cannot serve gpt-oss-20b** (not run): inf2: {why}." in report(backends, not_run=recorded)
    gemma = {"g6": g6()}
    assert recommend(gemma, not_run=recorded)[0].models.cannot_serve == {}  # they serve Gemma 4 E2B
