"""Every EC2 rig's user data within 4,096 bytes at synth, for every model the catalog offers it (``-c model.<rig>``).

The user data carries only what the stack decides and the bootstrap (the model, its flags and the devices travel in
the boot scripts' asset), and the rig stack bounds it at synth with every deploy-time value at its longest
(``stacks/parts/boot_scripts.py``), so a value that would push it over fails the synth in one line.
"""

from __future__ import annotations

import aws_cdk as cdk
import pytest

from app import build_app, project_context, rig_options
from rigs.catalog.model import load_catalog
from rigs.contract import base_stack_name
from rigs.deploy.model_options import ModelOptionsError
from rigs.userdata import USER_DATA_LIMIT_BYTES, UserDataError
from stacks.base_stack import InferenceBaseStack
from stacks.rig_stack import InferenceRigStack

CATALOG = load_catalog()
TOKEN_PARAMETER = "/aws-inference/hf-token"


def offered(context: dict) -> cdk.App:
    """An app that only carries ``context`` (what ``-c`` gives), for ``app.rig_options``."""
    return cdk.App(context={**project_context(), **context})


@pytest.fixture(scope="module")
def sizes(tmp_path_factory) -> dict[tuple[str, str], int]:
    """(rig, model) -> the longest its user data can be once deployed, for every EC2 rig and every model of the
    catalog it serves (about 30 rig stacks, made once; 10 s on a quiet machine)."""
    app = cdk.App(context=project_context(), outdir=str(tmp_path_factory.mktemp("sizes")))
    bases: dict[str, InferenceBaseStack] = {}
    found = {}
    for model in CATALOG.models:
        context = offered({"hf_token_parameter": TOKEN_PARAMETER,
                           **{f"model.{rig.name}": model for rig in CATALOG.ec2_rigs()}})
        for rig in CATALOG.ec2_rigs():
            region = rig.regions[0]
            try:
                options = rig_options(context, rig, region)
            except ModelOptionsError:
                continue  # the catalog does not offer this model on this rig (it says why in one line)
            if region not in bases:
                bases[region] = InferenceBaseStack(app, base_stack_name(region), zone_slots=2, named_zones=(),
                                                   instance_types=[rig.instance_type],
                                                   env=cdk.Environment(region=region))
            stack = InferenceRigStack(app, f"{rig.stack_name}{len(found)}", options=options, base=bases[region],
                                      env=cdk.Environment(region=region), stack_name=rig.stack_name)
            found[(rig.name, model)] = stack.user_data_bytes
    return found


def test_every_model_the_catalog_offers_each_rig_keeps_its_user_data_within_4_kb(sizes):
    assert {rig for rig, _ in sizes} == {rig.name for rig in CATALOG.ec2_rigs()}
    assert len(sizes) >= 20  # every rig serves several of the catalog's models
    over = {key: size for key, size in sizes.items() if size > USER_DATA_LIMIT_BYTES}
    assert not over and USER_DATA_LIMIT_BYTES == 4096, over


def test_the_user_data_does_not_grow_with_the_model(sizes):
    """A model's flags, devices and id travel in the boot scripts: a rig's sizes differ only by what the stack itself
    decides (the image's reference: the Neuron rigs' own image or AWS's vLLM Neuron image; the ready timeout's
    digits), a few bytes, never by the model's flags (hundreds)."""
    for rig in CATALOG.ec2_rigs():
        found = {size for (name, _), size in sizes.items() if name == rig.name}
        assert max(found) - min(found) <= 16, (rig.name, sorted(found))


def test_user_data_over_the_limit_fails_the_synth_in_one_line_naming_the_fix():
    """A 2,000-character SSM parameter name is a valid -c hf_token_parameter; it would take the user data over."""
    with pytest.raises(UserDataError, match=r"^rig g6: its user data would be \d,\d{3} bytes, over the 4,096 this "
                                            r"project allows \(EC2 takes 16,384\): what grew belongs in the boot "
                                            r"scripts \(rigs/userdata/\*\.sh, shipped as an S3 asset\)"):
        build_app(context={"hf_token_parameter": "/" + "a" * 2000})
