"""``python -m interchange_hub``: the ``interchange-hub`` command."""

from __future__ import annotations

import sys

from interchange_hub.cli import main

if __name__ == "__main__":
    sys.exit(main())
