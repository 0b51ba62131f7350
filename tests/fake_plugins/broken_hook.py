"""A plugin whose hook raises."""

from __future__ import annotations

from typing import Any

import interchange_hub as ih


@ih.hookimpl
def register_adapters(register: Any) -> None:
    raise ValueError("broken_hook failed to set up")
