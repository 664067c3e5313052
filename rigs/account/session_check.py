"""``python -m rigs.account.session_check [CDK ARGUMENTS]``: the AWS check ``./scripts/cdk`` makes before AWS commands.

The CDK CLI reports missing credentials as "Unable to resolve AWS account to use" (exit
1) and an unreachable endpoint after its own retries. This check gives the same line and
exit status as ``python -m rigs`` and ``python -m agent.run`` for the same cause: 3 for
missing, expired or refused credentials (or an unknown profile), 4 when AWS cannot be
reached. Silent, exit 0, when the credentials work. ``--profile`` is read from the CDK
arguments, the region as the CDK CLI reads it (``AWS_REGION``, then ``AWS_DEFAULT_REGION``).
"""

from __future__ import annotations

import sys
from typing import Sequence

from kit import command
from rigs import aws


def profile_of(arguments: Sequence[str]) -> str | None:
    """The value of the CDK CLI's ``--profile`` option among ``arguments``, if given."""
    for index, argument in enumerate(arguments):
        if argument == "--profile" and index + 1 < len(arguments):
            return arguments[index + 1]
        if argument.startswith("--profile="):
            return argument.split("=", 1)[1]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        aws.check_credentials(aws.make_session(profile_of(arguments)))
    except aws.RigsError as exc:
        ended = aws.outcome(exc)
        assert ended is not None  # the kit knows every error of the library
        print(f"error: {ended.line}", file=sys.stderr)
        return ended.code
    return command.EXIT_OK

if __name__ == "__main__":
    sys.exit(main())
