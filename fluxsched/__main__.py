"""``python -m fluxsched`` is ``fluxlite-flux``."""

import sys

from fluxsched.cli import main

sys.exit(main())
