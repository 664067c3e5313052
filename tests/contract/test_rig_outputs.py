"""Contract: every rig stack's outputs parse with the agent's reader, RigOutputs.parse.

Each synthesized rig template's outputs are resolved the way describe-stacks would
return them after a deploy (deploy-time values get realistic stand-ins) and handed to
the one reader the agent uses. A renamed or missing output key fails here, not on AWS.
"""

from __future__ import annotations

import pytest

from rigs.catalog.model import Ec2Rig, load_catalog
from rigs.contract import ImageOutputKey, OutputKey, RigOutputs
from tests.contract.templates import stack_outputs

CATALOG = load_catalog()
DEPLOYABLE = CATALOG.deployable()


def test_there_is_one_stack_per_deployable_rig_and_an_image_stack(templates):
    rig_stacks = {name for name in templates if not name.startswith("InferenceBase-")}
    assert rig_stacks == {rig.stack_name for rig in DEPLOYABLE} | {"InferenceG5gImage"}


@pytest.mark.parametrize("rig", DEPLOYABLE, ids=lambda r: r.name)
def test_rig_outputs_parse_with_the_agents_reader(templates, stack_regions, rig):
    outputs = stack_outputs(templates[rig.stack_name])
    parsed = RigOutputs.parse(outputs)
    assert parsed.rig == rig.name
    assert parsed.region == stack_regions[rig.stack_name]
    assert (parsed.runtime, parsed.model_id, parsed.instance_type) == (rig.runtime, rig.model_id, rig.instance_type)
    assert parsed.log_group
    assert parsed.expires_at and parsed.expires_at.endswith("Z")
    assert parsed.context_tokens == rig.serve_context  # g6 8,192, g5g 16,384, SageMaker 8,192; Neuron: none
    if isinstance(rig, Ec2Rig):
        assert parsed.remote_port == rig.port
        assert parsed.auto_scaling_group and parsed.endpoint_name is None
        assert parsed.zones and all(zone.startswith(parsed.region[:-1]) for zone in parsed.zones)
    else:
        assert parsed.endpoint_name and parsed.auto_scaling_group is None and parsed.remote_port is None
        assert parsed.image_digest == rig.image.digest_for(parsed.region)


def test_an_unpinned_sagemaker_stack_reports_the_digest_read_at_deploy(unpinned_endpoint_templates):
    for region, template in unpinned_endpoint_templates.items():
        parsed = RigOutputs.parse(stack_outputs(template))
        assert parsed.region == region and parsed.image_digest == "sha256:" + "5e" * 32


@pytest.mark.parametrize("rig", DEPLOYABLE, ids=lambda r: r.name)
def test_every_output_key_is_a_contract_key(templates, rig):
    contract_keys = {value for key, value in vars(OutputKey).items() if key.isupper()}
    assert set(templates[rig.stack_name]["Outputs"]) <= contract_keys


def test_image_stack_outputs_use_the_image_contract_keys(templates):
    contract_keys = {value for key, value in vars(ImageOutputKey).items() if key.isupper()}
    assert set(templates["InferenceG5gImage"]["Outputs"]) == contract_keys
