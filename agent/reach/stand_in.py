"""``--stand-in URL``: one OpenAI-compatible server plays every discovered rig (offline rehearsals).

``python -m rigs rehearse --offline`` deploys the stacks into moto's server, where nothing serves
a model and ``aws ssm start-session`` cannot work (moto has no Session Manager, and the session
plugin is not installed). There the local rig plays every rig's server: the agent still finds the
rigs by discovery (CloudFormation outputs, the instance running and SSM ``Online``, the endpoint
``InService``), but reaches each EC2 rig through a local TCP relay (:class:`agent.reach.forwarding.RelayPortForward`)
to the stand-in's port instead of an SSM port forward, and SageMaker endpoints are answered by
the stand-in through moto's SageMaker runtime.

Every such backend is what it is: labelled with the model the stand-in serves, marked as an
offline rehearsal of the flow (a note in the report), and neither priced nor given a bandwidth
ceiling, since no accelerator of the rig answered.
"""

from __future__ import annotations

import dataclasses
import http.client
from urllib.parse import urlsplit

from ..backends import Backend, normalize_base_url
from ..bench.results.constants import WEIGHTS_METADATA_PREFIX
from .custom_server import served_models


class StandInError(ValueError):
    """``--stand-in`` is not a usable address."""


@dataclasses.dataclass(frozen=True, slots=True)
class StandIn:
    """The stand-in server: its ``.../v1`` base URL, host, port, and the model it reports."""

    base_url: str
    host: str
    port: int
    model: str | None = None

    def identified(self) -> "StandIn":
        """The same server, with the model it reports at ``/v1/models`` (None when it reports none)."""
        try:
            models = served_models(self.base_url)
        except (OSError, http.client.HTTPException, ValueError):
            models = []
        return dataclasses.replace(self, model=models[0] if models else None)

    def plays(self, backend: Backend) -> Backend:
        """``backend`` as played by this server: its model, a label and note that say so, no price."""
        model = self.model or backend.model_id
        rig = backend.metadata.get("instance_type") or backend.kind
        metadata = {key: value for key, value in backend.metadata.items()  # the rig's, not the stand-in's
                    if key not in ("instance_type", "image", "image_digest", "serve_flags")
                    and not key.startswith(WEIGHTS_METADATA_PREFIX)}
        metadata.update(
            rig_instance_type=rig,
            rig_model_id=backend.model_id,
            stand_in=(f"{backend.name} was played by the stand-in server at {self.base_url} ({model}): an offline "
                      f"rehearsal of the flow (discovery, reach, the benchmark), not of {rig}; its figures say "
                      "nothing about that hardware"),
            unpriced=f"played by the stand-in at {self.base_url}, not by {rig}: not priced, no bandwidth ceiling",
        )
        return dataclasses.replace(backend, label=f"{backend.label}, played by {model} (offline rehearsal)",
                                   model_id=model, metadata=metadata)


def parse_stand_in(url: str) -> StandIn:
    """``http://127.0.0.1:8123`` or ``.../v1``: the stand-in's address (StandInError when unusable)."""
    try:
        base_url = normalize_base_url(url)
        parts = urlsplit(base_url)
        port = parts.port
    except ValueError as exc:
        raise StandInError(f"--stand-in {url}: {exc}; give http://HOST:PORT of an OpenAI-compatible server") from None
    if parts.scheme != "http" or not parts.hostname or port is None:
        raise StandInError(f"--stand-in {url}: give http://HOST:PORT of an OpenAI-compatible server "
                           "(the relay forwards plain TCP to that port)")
    return StandIn(base_url=base_url, host=parts.hostname, port=port)
