"""Sizing a model to an instance: ``python -m rigs fit`` and the size ``-c model.<rig>=ID`` deploys on.

``config.py`` reads a model's architecture from its own ``config.json`` (a model the catalog's models section does
not list); ``engine.py`` is vLLM's budget on one GPU as the version a rig pins computes it; ``kv.py`` is vLLM's KV
cache layout (blocks, sliding windows) and what its start-up log counts; ``fit.py`` puts them together for every
accelerated instance size of the catalog (EC2 and SageMaker): the tensor-parallel degree, the replicas of it over
the rest of the accelerators, and the KV cache each holds. Pure functions of the catalog and their inputs: nothing is
fetched, nothing is measured here.
"""
