"""One module per kind of rig, each holding the kind's models and its answers to what the rest of the code asks of
a rig (SkyPilot's ``clouds/``: each cloud answers its callers' questions, so no caller tests its type).

``base.py`` holds what every rig states and the questions (:class:`~rigs.catalog.kinds.base.RigBase`), and what
every deployed rig shares (:class:`~rigs.catalog.kinds.base.DeployedRig`); ``ec2.py`` the EC2 rigs, one model per
runtime; ``sagemaker.py`` the SageMaker endpoint; ``bedrock.py`` both ways of calling a Bedrock model. The catalog
tells them apart by ``kind`` and, on EC2, ``runtime`` (the discriminated unions below), so each shape is checked by
its own model and the code has no switch on either.

A new kind is a module here answering :class:`~rigs.catalog.kinds.base.RigBase`'s questions, its place in
:data:`AnyRig` (and ``__all__``), its runtime in ``rigs/catalog/runtimes.py`` and, when a stack deploys it, its stack
in ``stacks/kinds.py``.
"""

from __future__ import annotations

from typing import Annotated, Union

from pydantic import Field

from rigs.catalog.kinds.base import BIG_VARIANT, DeployedRig, RigBase
from rigs.catalog.kinds.bedrock import BedrockBackend
from rigs.catalog.kinds.ec2 import MAX_ROOT_VOLUME_GIB, Ec2Rig, NeuronRig, NeuronVllmRig, VllmRig
from rigs.catalog.kinds.sagemaker import SageMakerRig

__all__ = ["BIG_VARIANT", "MAX_ROOT_VOLUME_GIB", "AnyRig", "BedrockBackend", "DeployableRig", "DeployedRig", "Ec2Rig",
           "NeuronRig", "NeuronVllmRig", "Rig", "RigBase", "SageMakerRig", "VllmRig"]

AnyEc2Rig = Annotated[Union[VllmRig, NeuronRig], Field(discriminator="runtime")]
AnyRig = Annotated[Union[AnyEc2Rig, SageMakerRig, BedrockBackend], Field(discriminator="kind")]
"""A rig as the catalog writes it: one of the kinds, by ``kind`` (and on EC2 by ``runtime``)."""
Rig = Union[Ec2Rig, SageMakerRig, BedrockBackend]
DeployableRig = Union[Ec2Rig, SageMakerRig]
