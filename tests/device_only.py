"""Producers that speak only the Arrow C Device interface, as pylibcudf objects do."""

from __future__ import annotations

from typing import Any


class DeviceOnly:
    """Exposes only another object's ``__arrow_c_device_array__``."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __arrow_c_device_array__(
        self, requested_schema: object | None = None, **kwargs: object
    ) -> tuple[object, object]:
        return self._source.__arrow_c_device_array__()  # type: ignore[no-any-return]


class DeviceStreamOnly:
    """Exposes only another object's ``__arrow_c_device_stream__``."""

    def __init__(self, source: Any) -> None:
        self._source = source

    def __arrow_c_device_stream__(
        self, requested_schema: object | None = None, **kwargs: object
    ) -> object:
        return self._source.__arrow_c_device_stream__()
