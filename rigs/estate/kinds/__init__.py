"""The table of resource kinds: each kind of resource of ours is one :class:`~rigs.estate.kinds.base.Kind`
(what lists it, its price, whether it is kept, how it is deleted, how its deletion is waited for, its
not-found codes), declared once beside its functions, used by ``status`` (:mod:`rigs.estate.inventory`) and
``sweep`` (:mod:`rigs.estate.sweep`).

:data:`TABLE` is the order ``status`` lists in (and its listings run in: the builds in progress are told
ours by the projects listed before them); :data:`SWEEP_ORDER` the order the sweep deletes what is left
outside stacks, dependents first (stacks themselves go before, in waves of their own).
"""

from __future__ import annotations

from rigs.estate.kinds import compute, iam, images, network, outlasting, sagemaker, stacks
from rigs.estate.kinds.base import Kind, Listing

TABLE: tuple[Kind, ...] = (
    stacks.STACK, compute.INSTANCE, compute.VOLUME, compute.ASG, compute.LAUNCH_TEMPLATE, sagemaker.ENDPOINT,
    sagemaker.ENDPOINT_CONFIG, sagemaker.MODEL, images.BUILD_PROJECT, images.RUNNING_BUILD, images.REPOSITORY,
    network.SECURITY_GROUP, network.SUBNET, network.ROUTE_TABLE, network.INTERNET_GATEWAY, network.VPC, iam.ROLE,
    iam.INSTANCE_PROFILE,
)
SWEEP_ORDER: tuple[Kind, ...] = (
    sagemaker.ENDPOINT, sagemaker.ENDPOINT_CONFIG, sagemaker.MODEL, compute.ASG, compute.INSTANCE,
    compute.LAUNCH_TEMPLATE, compute.VOLUME, images.RUNNING_BUILD, images.BUILD_PROJECT, images.REPOSITORY,
    network.SECURITY_GROUP, network.INTERNET_GATEWAY, network.ROUTE_TABLE, network.SUBNET, network.VPC,
    iam.INSTANCE_PROFILE, iam.ROLE,
)
OUTLASTING: tuple[Listing, ...] = outlasting.LISTINGS
"""What outlives ``cdk destroy``: listed by ``status`` only (:mod:`rigs.estate.kinds.outlasting`)."""


def listings(scope: str) -> tuple[Listing, ...]:
    """The listings of the kinds of ``scope``, each once, in the table's order."""
    return tuple(dict.fromkeys(kind.listing for kind in TABLE if kind.listing.scope == scope))
