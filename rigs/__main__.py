"""``python -m rigs``: see rigs/cli.py."""

import sys

from .cli import main

sys.exit(main())
