"""Which stack deploys each kind of rig: the one table the app picks a rig's stack from.

A rig's kind says whether a stack deploys it (:attr:`rigs.catalog.kinds.base.RigBase.deployed`); this table says
which, and hands it what it takes (an EC2 rig's stack stands on its region's base stack).
"""

from __future__ import annotations

from typing import Any, Callable

import aws_cdk as cdk
from constructs import Construct

from rigs.catalog.model import DeployableRig, Ec2Rig, SageMakerRig
from rigs.deploy.options import RigOptions

from .base_stack import InferenceBaseStack
from .endpoint_stack import InferenceEndpointStack
from .rig_stack import InferenceRigStack

StackMaker = Callable[..., cdk.Stack]
"""``(scope, id_, *, options, base, **kwargs)``: a rig's stack; ``base`` is its region's base stack."""


def _rig_stack(scope: Construct, id_: str, *, options: RigOptions, base: InferenceBaseStack | None,
               **kwargs: Any) -> cdk.Stack:
    return InferenceRigStack(scope, id_, options=options, base=base, **kwargs)


def _endpoint_stack(scope: Construct, id_: str, *, options: RigOptions, base: InferenceBaseStack | None,
                    **kwargs: Any) -> cdk.Stack:
    return InferenceEndpointStack(scope, id_, options=options, **kwargs)


STACKS: tuple[tuple[type, StackMaker], ...] = ((Ec2Rig, _rig_stack), (SageMakerRig, _endpoint_stack))
"""Each deployed kind of rig and the stack that deploys it."""


def stack_for(rig: DeployableRig) -> StackMaker:
    """The stack that deploys ``rig``'s kind."""
    return next(make for kind, make in STACKS if isinstance(rig, kind))
