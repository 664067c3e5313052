"""The backends a run calls, one module per way a backend is made (as strands' ``models/`` holds one module per
provider beside the shared ``Model``):

* ``backend.py``: the :class:`Backend` record every part of the agent consumes, the backends' names and order;
* ``deployed.py``: a rig this app deployed (an EC2 rig behind its port forward, a SageMaker endpoint);
* ``bedrock.py``: Bedrock through its runtime API; ``mantle.py``: Bedrock's OpenAI-compatible endpoint;
* ``custom.py``: a custom server at a ``*_URL``; ``local.py``: the local rig;
* ``env.py``: the reference's environment variables, read into the backends they configure;
* ``expected.py``: what the catalog says of a rig, asked of its kind (``rigs/catalog/kinds/``).

Nothing here talks to the network.
"""

from .backend import KNOWN, LOCAL, MANTLE, ORDER, Backend, UnknownBackendError, normalize_base_url, parse_names, \
    service_tier_args, sort_key, token_limits
from .bedrock import bedrock_backend
from .custom import custom_backend
from .deployed import endpoint_backend, forwarded_backend
from .env import EnvConfig, from_env
from .expected import catalog_expectation, catalog_metadata, model_name
from .mantle import MantleSettings, bedrock_card, mantle_backend

__all__ = ["KNOWN", "LOCAL", "MANTLE", "ORDER", "Backend", "EnvConfig", "MantleSettings", "UnknownBackendError",
           "bedrock_backend", "bedrock_card", "catalog_expectation", "catalog_metadata", "custom_backend",
           "endpoint_backend", "forwarded_backend", "from_env", "mantle_backend", "model_name",
           "normalize_base_url", "parse_names", "service_tier_args", "sort_key", "token_limits"]
