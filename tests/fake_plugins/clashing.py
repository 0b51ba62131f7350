"""A plugin that registers an adapter under a name a built-in adapter already uses."""

from __future__ import annotations

from typing import Any

import interchange_hub as ih
from tests.fake_plugins.boxes import BoxAdapter


class FakePyArrow(BoxAdapter):
    name = "pyarrow"


@ih.hookimpl
def register_adapters(register: Any) -> None:
    register(FakePyArrow())
