"""Catalog variants: a variant replaces what it names, checked as the rig's own fields are; the
big-model variants say where their checkpoint is published; a rig without one says why."""

from __future__ import annotations

import copy

import pytest
import yaml

from rigs.catalog.model import BIG_VARIANT, load_catalog, parse_catalog

from tests.rigs.catalog.test_catalog import RAW

from tests.rigs.catalog.test_catalog import problems_for

CATALOG = load_catalog()


def test_every_deployable_rig_has_a_big_variant_or_says_why_not():
    for rig in CATALOG.deployable():
        big = rig.variants.get(BIG_VARIANT)
        assert (big is None) != (rig.no_big_variant is None), rig.name
    assert {r.name for r in CATALOG.deployable() if BIG_VARIANT in r.variants} == {"g6", "sagemaker"}
    assert "never run on Turing" in CATALOG.get("g5g").no_big_variant
    assert "hand-ported E2B" in CATALOG.get("inf2").no_big_variant


def test_big_variants_change_the_model_and_name_its_public_page():
    for name in ("g6", "sagemaker"):
        rig = CATALOG.get(name)
        big = rig.variants[BIG_VARIANT]
        assert big.model_id == "google/gemma-4-12B-it-qat-w4a16-ct"
        assert big.model_source == f"https://huggingface.co/{big.model_id}"
        moved = rig.with_variant(BIG_VARIANT)
        assert moved.model_id == big.model_id and moved.ready_timeout_minutes == 50
        assert moved.image == rig.image and moved.instance_type == rig.instance_type
    g6 = CATALOG.get("g6").with_variant(BIG_VARIANT)
    assert g6.serve_flags == CATALOG.get("g6").serve_flags and g6.root_free_gib == 50
    sagemaker = CATALOG.get("sagemaker").with_variant(BIG_VARIANT)
    assert sagemaker.container_env == CATALOG.get("sagemaker").container_env


def test_a_variant_merges_container_settings_into_the_rigs():
    def add_env(data):
        data["rigs"]["sagemaker"]["variants"]["big"]["container_env"] = {"SM_VLLM_MAX_MODEL_LEN": "4096"}

    data = copy.deepcopy(RAW)
    add_env(data)
    rig = parse_catalog(yaml.safe_dump(data)).get("sagemaker").with_variant("big")
    assert rig.container_env["SM_VLLM_MAX_MODEL_LEN"] == "4096"
    assert rig.container_env["SM_VLLM_TOOL_CALL_PARSER"] == "gemma4"


def test_a_model_without_its_public_page_is_refused():
    problems = problems_for(lambda d: d["rigs"]["g6"]["variants"]["big"].pop("model_source"))
    assert any(p.startswith("rigs.g6.variants.big.model_source: a variant that changes the model must name")
               for p in problems)


@pytest.mark.parametrize("source", ["huggingface.co/google/x", "http://huggingface.co/google/x", "https://", ""])
def test_a_model_source_must_be_an_https_address(source):
    problems = problems_for(lambda d: d["rigs"]["sagemaker"]["variants"]["big"].update(model_source=source))
    assert any(p.startswith("rigs.sagemaker.variants.big.model_source: must be an https:// address") for p in problems)


def test_every_bad_variant_field_is_reported_with_its_path_at_once():
    def break_variants(data):
        big = data["rigs"]["g6"]["variants"]["big"]
        big.update(ready_timeout_minutes=500, root_free_gib="lots", serve_flags=["--max-model-len", 8192],
                   image="vllm/vllm-openai:latest", neuron_devices=["/dev/neuron0"], model_id=" ")
        data["rigs"]["sagemaker"]["variants"]["big"].update(image="x/y:1", container_env={"SM_VLLM_X": 1})
        data["rigs"]["inf2"]["variants"]["tp2"].update(model_id="google/gemma-4-12B-it")

    problems = problems_for(break_variants)
    expected = [
        "rigs.g6.variants.big.ready_timeout_minutes: must be 5 to 120 minutes",
        "rigs.g6.variants.big.root_free_gib: must be int",
        "rigs.g6.variants.big.serve_flags: every entry must be a string",
        "rigs.g6.variants.big.image: 'vllm/vllm-openai:latest' uses :latest",
        "rigs.g6.variants.big.neuron_devices: unknown key",
        "rigs.g6.variants.big.model_id: must not be empty",
        "rigs.sagemaker.variants.big.image: unknown key",
        "rigs.sagemaker.variants.big.container_env.SM_VLLM_X: must be a string",
        "rigs.inf2.variants.tp2.model_id: unknown key",
    ]
    for start in expected:
        assert any(p.startswith(start) for p in problems), (start, problems)


def test_a_variant_that_changes_nothing_is_refused():
    problems = problems_for(lambda d: d["rigs"]["g6"]["variants"].update(empty={}))
    assert any(p.startswith("rigs.g6.variants.empty: a variant must change something") for p in problems)


def test_no_big_variant_beside_a_big_variant_is_refused():
    problems = problems_for(lambda d: d["rigs"]["g6"].update(no_big_variant="none published"))
    assert "rigs.g6.no_big_variant: the rig has a 'big' variant: leave no_big_variant out" in problems


def test_an_unknown_variant_names_the_known_ones():
    with pytest.raises(ValueError, match="rig 'sagemaker' has no variant 'huge'; variants: big"):
        CATALOG.get("sagemaker").with_variant("huge")
