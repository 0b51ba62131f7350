"""A plugin whose hook implementation lacks @ih.hookimpl: pluggy registers the module
and calls nothing, so it added nothing, silently (found by a review)."""

from __future__ import annotations

from typing import Any

from tests.fake_plugins.boxes import BoxAdapter


def register_adapters(register: Any) -> None:
    register(BoxAdapter())
