"""A plugin whose adapter claims zero-copy but copies: the conformance kit must catch it."""

from __future__ import annotations

from typing import Any

import interchange_hub as ih
from tests.fake_plugins.boxes import BoxAdapter


@ih.hookimpl
def register_adapters(register: Any) -> None:
    register(BoxAdapter(honest=False))
