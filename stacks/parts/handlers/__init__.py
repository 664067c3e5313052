"""Code of the small custom-resource Lambdas, inlined into templates at synth (no assets).

Each module defines ``compute(properties)`` for Create and Update requests and stays
under Lambda's 4 KB inline limit together with ``respond.py``, which is appended to it
and answers CloudFormation. They are imported here only by the unit tests.
"""
