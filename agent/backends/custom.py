"""A custom server reached through a ``*_URL`` variable (``G6_URL``, ``INF2_URL`` ...): whatever answers there, not a
rig this app deployed, driven like the catalog's rig the variable names."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rigs.catalog.facts import fact

from .backend import Backend
from .expected import model_name

if TYPE_CHECKING:
    from rigs.catalog.model import Ec2Rig


def is_instance_type(name: str) -> bool:
    """Whether ``name`` is an EC2 instance type or a SageMaker endpoint instance type, as the installed
    botocore's service models list them (read offline, from the models botocore ships)."""
    import botocore.session

    session = botocore.session.get_session()
    shape = ("sagemaker", "ProductionVariantInstanceType") if name.startswith("ml.") else ("ec2", "InstanceType")
    return name in (session.get_service_model(shape[0]).shape_for(shape[1]).enum or ())


def custom_backend(rig: Ec2Rig, prefix: str, base_url: str, model: str | None, instance_type: str | None) -> Backend:
    """The backend behind ``<prefix>_URL``: a custom server, not the catalog's rig.

    It is driven like the rig the variable names (the same client kind, tool-call ability and
    prompt limit: ``INF2_URL`` expects the Neuron server's API), but nothing else of the rig is
    assumed: no image, flags or instance type. The model id sent is ``<prefix>_MODEL``, else the
    one the server reports (asked by :func:`agent.reach.custom_server.identify` before the run; until
    then the catalog's model id stands in).

    Raises:
        ValueError: ``<prefix>_INSTANCE_TYPE`` is not an instance type name.
    """
    variable = f"{prefix}_URL"
    metadata = {
        "server": f"custom server at {variable} (not a rig deployed by this app)",
        "reached_via": f"{variable}={base_url}",
        "url_variable": variable,
        "model_source": f"{prefix}_MODEL" if model else "the server's /v1/models",
        **model_name(rig, model or rig.model_id),
    }
    label = f"custom server at {variable}"
    if instance_type is not None:
        if not is_instance_type(instance_type):
            raise ValueError(f"{prefix}_INSTANCE_TYPE={instance_type!r} is not an EC2 or SageMaker instance type "
                             f"(e.g. {rig.instance_type}); the list is botocore's")
        metadata["instance_type"] = instance_type
        metadata["instance_type_source"] = f"stated by {prefix}_INSTANCE_TYPE"
        label += f" on {instance_type} (stated)"
    else:
        metadata["unpriced"] = (f"custom server at {variable}: no instance type stated (set "
                                f"{prefix}_INSTANCE_TYPE, e.g. {prefix}_INSTANCE_TYPE={rig.instance_type}, to price "
                                "it and give it a bandwidth ceiling)")
    expected = {"model": fact(model, f"{prefix}_MODEL")} if model else {}
    if instance_type is not None:
        expected["instance_type"] = fact(instance_type, f"{prefix}_INSTANCE_TYPE (stated, not read)")
    return Backend(name=rig.name, label=label, kind=rig.backend_kind, model_id=model or rig.model_id,
                   tool_calls=rig.tool_calls, base_url=base_url, **rig.stated_limits(),
                   metadata=metadata, custom=True, provenance={"expected": expected})
