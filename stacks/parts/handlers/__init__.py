"""Code of the small custom-resource Lambdas, inlined into templates at synth (no assets).

Each module defines ``compute(properties)`` for Create and Update requests (with a
``context`` argument when it needs the Lambda context, for the time it has left), and
``on_delete(properties)`` when it has something to stop when its stack is deleted. Each
stays under ``INLINE_LIMIT`` (``stacks/parts/inline_function.py``) together with
``respond.py``, which is appended to it and answers CloudFormation. They are imported here
only by the unit tests.
"""
