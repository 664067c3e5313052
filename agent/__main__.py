"""``python -m agent`` is ``python -m agent.run``."""

import sys

from .run import main

sys.exit(main())
