"""A plugin whose hook takes an argument the specification does not offer."""

from __future__ import annotations

from typing import Any

import interchange_hub as ih


@ih.hookimpl
def register_adapters(register: Any, hub: Any) -> None:
    raise AssertionError("never called: pluggy refuses the registration")
