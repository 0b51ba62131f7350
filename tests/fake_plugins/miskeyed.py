"""A plugin whose fast-path key function disagrees with its route_key: the conformance kit
must catch it (the hub would keep runs under one key and look them up under another)."""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

import interchange_hub as ih
from tests.fake_plugins.boxes import BoxAdapter


class MiskeyedAdapter(BoxAdapter):
    def route_key(self, obj: Any) -> Hashable | None:
        return ("box", tuple(obj.table.schema.names))

    def route_key_of(self, cls: type) -> Callable[[Any], Hashable | None]:
        return lambda obj: ("box", obj.table.num_rows)  # not what route_key says


@ih.hookimpl
def register_adapters(register: Any) -> None:
    register(MiskeyedAdapter())


class RaisingAdapter(BoxAdapter):
    def route_key(self, obj: Any) -> Hashable | None:
        raise ValueError("no key for this box")


class Raising:
    """A plugin (an object, not a module) whose adapter's route_key raises."""

    @ih.hookimpl
    def register_adapters(self, register: Any) -> None:
        register(RaisingAdapter())
