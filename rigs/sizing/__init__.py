"""Sizing a model to an instance: ``python -m rigs fit`` and the size ``-c model.<rig>=ID`` deploys on.

``config.py`` reads a model's architecture from its own ``config.json`` (a model the catalog's models section does
not list); ``fit.py`` works out what its weights and KV cache take and, for every accelerated instance size of the
catalog (EC2 and SageMaker), the smallest tensor-parallel degree it fits at and how many tokens of cache are left.
Pure functions of the catalog and their inputs: nothing is fetched, nothing is measured here.
"""
