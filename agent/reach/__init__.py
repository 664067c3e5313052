"""Reaching backends: discovery of deployed rigs, SSM port forwards, custom servers and stand-ins,
and the readiness probe."""
