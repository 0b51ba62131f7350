"""A plugin whose first import is interrupted (Ctrl-C), as a user may stop a slow first
load; later imports succeed and register the boxes adapter. The marker file in
``INTERRUPT_MARKER`` says the interruption happened."""

from __future__ import annotations

import os
from pathlib import Path

marker = Path(os.environ["INTERRUPT_MARKER"])
if not marker.exists():
    marker.write_text("interrupted")
    raise KeyboardInterrupt

from tests.fake_plugins.boxes import register_adapters

__all__ = ["register_adapters"]
