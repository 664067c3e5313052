"""The agent: finds the deployed backends, reaches them, and runs the benchmark against them.

Never imports aws_cdk: it runs on machines that only have the runtime requirements.
"""
