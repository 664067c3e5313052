"""Deploying rigs: the way to a deploy and ``python -m rigs up``'s failover.

- :mod:`.sequence`: doctor, then preflight (once), then the regions each rig may try;
- :mod:`.up`: per rig, region after region until it is up (:class:`~.up.Up`);
- :mod:`.cdk_cli`: the project-pinned CDK CLI it runs, and its errors;
- :mod:`.diagnosis`: why a deploy failed, by AWS error code;
- :mod:`.watch`: the compute coming up (instance, SSM, /health, endpoint);
- :mod:`.records`: the attempts, timelines and evidence folder it writes.
"""
