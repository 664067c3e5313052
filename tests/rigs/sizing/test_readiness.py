"""A rig's ready allowance from its work: boot, the weights' download at 50 MiB/s, the compile, their load at 125."""

from __future__ import annotations

from rigs.catalog.model import load_catalog
from rigs.deploy.model_options import ModelRequest, serve
from rigs.sizing.readiness import DOWNLOAD_MIB_PER_S, LOAD_MIB_PER_S, allowance, describe

CATALOG = load_catalog()


def test_a_rig_serving_its_own_model_keeps_the_catalogs_allowance_split_by_the_work():
    g6 = CATALOG.get("g6")  # Gemma 4 E2B, 2.86 GiB: a minute to download, one to load
    assert describe(g6) == "40 min: boot 38 + download 1 (2.9 GiB at 50 MiB/s) + compile 0 + load 1 (at 125 MiB/s)"
    assert (DOWNLOAD_MIB_PER_S, LOAD_MIB_PER_S) == (50, 125)


def test_a_70b_on_g6_is_allowed_its_download_and_load_not_the_small_models_40_minutes():
    served = serve(CATALOG.get("g6"), CATALOG, ModelRequest(model="meta-llama/Llama-3.1-70B-Instruct",
                                                            hf_token_parameter="/aws-inference/hf-token")).rig
    work = allowance(served)
    assert served.weights.memory_gib > 130  # on whichever size holds it: the allowance is the work's
    assert (work.boot, work.download, work.compile, work.load) == (38, 45, 0, 18)  # 131.5 GiB at 50 and 125 MiB/s
    assert served.ready_timeout_minutes == work.minutes == 101


def test_a_neuron_rig_adds_the_compile_allowance_for_the_models_size():
    served = serve(CATALOG.get("trn1"), CATALOG, ModelRequest(model="Qwen/Qwen3-32B")).rig
    assert describe(served) == ("127 min: boot 37 + download 21 (61.1 GiB at 50 MiB/s) + compile 60 + load 9 "
                                "(at 125 MiB/s)")
