"""``python -m rigs``: see rigs/cli.py."""

import sys

from rigs.cli import main

sys.exit(main())
