"""The provisioning library: the rig catalog, the shared stack contract, preflight and cleanup.

Nothing in this package imports aws_cdk: the agent and the CLI use it without the CDK.
"""
