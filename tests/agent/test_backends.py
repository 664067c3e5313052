"""The Backend record and the reference's environment variables."""

from __future__ import annotations

import pytest

from agent.backends import (KNOWN, Backend, UnknownBackendError, bedrock_backend, from_env, normalize_base_url,
                            parse_names, sort_key)
from rigs.catalog.model import load_catalog

CATALOG = load_catalog()


class TestBackend:
    def test_openai_backend_needs_base_url(self) -> None:
        with pytest.raises(ValueError, match="needs base_url"):
            Backend(name="g6", label="g6", kind="openai", model_id="m", tool_calls=True)

    def test_unknown_kind_rejected(self) -> None:
        with pytest.raises(ValueError, match="kind must be one of"):
            Backend(name="x", label="x", kind="grpc", model_id="m", tool_calls=False, base_url="http://h/v1")

    def test_sagemaker_needs_region_and_endpoint(self) -> None:
        with pytest.raises(ValueError, match="needs region.*needs endpoint_name"):
            Backend(name="sagemaker", label="s", kind="sagemaker", model_id="m", tool_calls=True)

    def test_constrained_tools_only_without_native_tools(self) -> None:
        with pytest.raises(ValueError, match="constrained_tools"):
            Backend(name="local", label="l", kind="openai", model_id="m", tool_calls=True, constrained_tools=True,
                    base_url="http://127.0.0.1:1/v1")

    def test_frozen_with_frozen_metadata(self) -> None:
        source = {"region": "us-east-2"}
        backend = Backend(name="g6", label="g6", kind="openai", model_id="m", tool_calls=True,
                          base_url="http://h/v1", metadata=source)
        source["region"] = "changed"
        assert backend.metadata["region"] == "us-east-2"
        with pytest.raises(TypeError):
            backend.metadata["region"] = "x"  # type: ignore[index]
        with pytest.raises(AttributeError):
            backend.name = "other"  # type: ignore[misc]
        assert hash(backend.name) and not backend.needs_aws and not backend.toy_model


class TestNames:
    def test_registry_order_whatever_the_input_order(self) -> None:
        assert parse_names("local,trn1,bedrock, g6 ,sagemaker") == ("bedrock", "g6", "sagemaker", "trn1", "local")
        assert sorted(["custom", "local", "inf2", "bedrock"], key=sort_key) == ["bedrock", "inf2", "custom", "local"]

    def test_empty_means_no_filter(self) -> None:
        assert parse_names(None) is None
        assert parse_names(" , ") is None

    def test_unknown_name_lists_known_ones(self) -> None:
        with pytest.raises(UnknownBackendError) as caught:
            parse_names("g6,g7,h100")
        message = str(caught.value)
        assert "'g7', 'h100'" in message
        for name in KNOWN:
            assert name in message

    @pytest.mark.parametrize(("given", "expected"), [
        ("http://localhost:8001/v1", "http://localhost:8001/v1"),
        ("http://localhost:8001/v1/", "http://localhost:8001/v1"),
        ("http://localhost:8001", "http://localhost:8001/v1"),
        ("https://proxy.example/llm/openai/v1", "https://proxy.example/llm/openai/v1"),
    ])
    def test_base_url_normalized(self, given: str, expected: str) -> None:
        assert normalize_base_url(given) == expected

    def test_not_a_url(self) -> None:
        with pytest.raises(ValueError, match="not an http"):
            normalize_base_url("localhost:8001")


class TestReferenceEnvironment:
    """The reference's variables work unchanged (docs/reference-run.md, "The workload the benchmark copies")."""

    ALL = {
        "BEDROCK_MODEL": "us.amazon.nova-lite-v1:0", "BEDROCK_REGION": "us-west-2",
        "G6_URL": "http://localhost:8001/v1", "G6_MODEL": "my-g6-model",
        "G5G_URL": "http://localhost:8004/v1", "G5G_MODEL": "google/gemma-4-E2B-it",
        "SM_ENDPOINT": "gemma-ep", "SM_REGION": "us-west-2", "SM_MODEL": "sm-label",
        "INF2_URL": "http://localhost:8002/v1", "INF2_MODEL": "inf2-model",
        "TRN1_URL": "http://localhost:8003/v1", "TRN1_MODEL": "trn1-model",
        "BACKENDS": "g6,trn1",
    }

    def test_every_variable(self) -> None:
        config = from_env(self.ALL, CATALOG)
        assert config.bedrock_model == "us.amazon.nova-lite-v1:0"
        assert config.bedrock_region == "us-west-2"
        assert config.only == ("g6", "trn1")
        by_name = {b.name: b for b in config.backends}
        assert list(by_name) == ["g6", "g5g", "sagemaker", "inf2", "trn1"]
        assert by_name["g6"].base_url == "http://localhost:8001/v1"
        assert by_name["g6"].model_id == "my-g6-model"
        assert by_name["g6"].kind == "openai" and by_name["g6"].tool_calls
        assert by_name["g5g"].model_id == "google/gemma-4-E2B-it"
        sm = by_name["sagemaker"]
        assert (sm.kind, sm.endpoint_name, sm.region, sm.model_id) == ("sagemaker", "gemma-ep", "us-west-2", "sm-label")
        assert sm.needs_aws
        for name in ("inf2", "trn1"):
            assert by_name[name].kind == "neuron"
            assert not by_name[name].tool_calls
            assert by_name[name].max_prompt_tokens == 128
        assert by_name["inf2"].model_id == "inf2-model"
        assert "G6_URL=http://localhost:8001/v1" in by_name["g6"].metadata["reached_via"]

    def test_defaults_from_the_catalog(self) -> None:
        config = from_env({"G6_URL": "http://h:1", "G5G_URL": "http://h:2", "INF2_URL": "http://h:3",
                           "TRN1_URL": "http://h:4", "SM_ENDPOINT": "ep"}, CATALOG)
        assert config.bedrock_model == "us.amazon.nova-micro-v1:0"
        assert config.bedrock_region == "us-east-1"
        by_name = {b.name: b for b in config.backends}
        # The reference defaulted G6_MODEL to google/gemma-4-E2B-it although g6 serves the repack.
        assert by_name["g6"].model_id == CATALOG.get("g6").model_id
        assert by_name["g6"].model_id != "google/gemma-4-E2B-it"
        assert by_name["g5g"].model_id == "google/gemma-4-E2B-it"
        assert by_name["inf2"].model_id == by_name["trn1"].model_id == "gemma-4-E2B-it"
        assert by_name["sagemaker"].region == "us-east-2"
        assert config.only is None

    def test_url_backends_need_no_aws(self) -> None:
        config = from_env({"G6_URL": "http://h:1"}, CATALOG)
        assert [b.needs_aws for b in config.backends] == [False]

    def test_region_flag_beats_variables(self) -> None:
        config = from_env({"BEDROCK_REGION": "us-west-2", "SM_REGION": "us-west-2", "SM_ENDPOINT": "ep"},
                          CATALOG, region="us-east-2")
        assert config.bedrock_region == "us-east-2"
        assert config.backends[0].region == "us-east-2"

    def test_unknown_name_in_backends_variable(self) -> None:
        with pytest.raises(UnknownBackendError, match="known backends: bedrock, bedrock-mantle, g6"):
            from_env({"BACKENDS": "g6,a100"}, CATALOG)

    def test_empty_values_are_unset(self) -> None:
        config = from_env({"G6_URL": "", "BEDROCK_MODEL": "  "}, CATALOG)
        assert config.backends == ()
        assert config.bedrock_model == "us.amazon.nova-micro-v1:0"

    def test_bedrock_backend(self) -> None:
        backend = bedrock_backend(CATALOG, "us.amazon.nova-micro-v1:0", "us-east-1")
        assert (backend.kind, backend.region, backend.tool_calls, backend.needs_aws) == ("bedrock", "us-east-1", True, True)


def test_the_catalogs_weights_ride_with_a_backend_only_for_the_model_it_lists():
    from agent.backends import bedrock_backend, catalog_metadata
    from rigs.catalog.model import load_catalog

    catalog = load_catalog()
    nova = bedrock_backend(catalog, "us.amazon.nova-micro-v1:0", "us-east-1")
    assert (nova.metadata["weights_model"], nova.metadata["weights_engine"]) == ("Amazon Nova Micro", "Amazon Bedrock")
    assert "weights_bytes_per_weight" not in nova.metadata  # not published
    other = bedrock_backend(catalog, "us.amazon.nova-lite-v1:0", "us-east-1")  # BEDROCK_MODEL: not the catalog's
    assert not [k for k in other.metadata if k.startswith("weights_")]
    g6 = catalog.get("g6")
    assert catalog_metadata(g6, "us-east-2", g6.model_id)["weights_precision"] == "W4A16 (emb4 repack)"
    big = catalog_metadata(g6, "us-east-2", "google/gemma-4-12B-it-qat-w4a16-ct")
    assert big["weights_model"] == "Gemma 4 12B"
    assert "weights_model" not in catalog_metadata(g6, "us-east-2")
    qwen = catalog_metadata(g6, "us-east-2", "Qwen/Qwen3-8B")  # -c model.g6=Qwen/Qwen3-8B: the models section's
    assert (qwen["weights_model"], qwen["weights_precision"], qwen["weights_engine"]) == (
        "Qwen3 8B", "bfloat16", "vLLM 0.30.0")
    assert qwen["weights_memory_gib"] == "15.27" and qwen["weights_source"] == "https://huggingface.co/Qwen/Qwen3-8B"
    assert not [k for k in catalog_metadata(g6, "us-east-2", "acme/unlisted") if k.startswith("weights_")]
