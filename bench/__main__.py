"""``python -m bench``: see ``bench/run.py`` and ``bench/README.md``."""

from __future__ import annotations

import sys

from bench.run import main

sys.exit(main())
