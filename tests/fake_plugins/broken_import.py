"""A plugin that raises while it is imported."""

from __future__ import annotations

raise RuntimeError("broken_import cannot find its native library")
