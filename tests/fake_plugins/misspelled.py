"""A plugin with a misspelled hook implementation (register_adapter, singular)."""

from __future__ import annotations

from typing import Any

import interchange_hub as ih
from tests.fake_plugins.boxes import BoxAdapter


@ih.hookimpl
def register_adapter(register: Any) -> None:
    register(BoxAdapter())
