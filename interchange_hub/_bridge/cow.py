"""Copy-on-write for pandas results that share memory with their source.

A DataFrame that views Arrow buffers (read-only) or a caller's numpy array must be safe to
write to: pandas' own writes (``loc``, ``iloc``, ``at``, ``fillna(inplace=True)``, ...)
should neither fail on read-only memory nor change the source. pandas 3's copy-on-write
copies a block before a write when another object still refers to its values; the hub
registers one permanent reference per block (a pin), so the first write to a column copies
that column, and later writes go to pandas' own copy. Reading stays zero-copy.

pandas keeps the references in each block's ``refs`` (``BlockValuesRefs``). Where that
internal is missing (another pandas), a shallow copy kept alive beside the result gives
the same reference through pandas' public API, at the cost of one shallow copy.
"""

from __future__ import annotations

import weakref
from typing import Any


class _Pin:
    """The object the pins refer to: never collected, so the reference stays alive."""

    __slots__ = ("__weakref__",)


_PIN = _Pin()
_PIN_REF = weakref.ref(_PIN)


def share_on_write(result: Any) -> Any:
    """``result`` (a pandas DataFrame or Series), its blocks copied on their first write."""
    try:
        blocks = result._mgr.blocks
        for block in blocks:
            refs = block.refs.referenced_blocks
            if _PIN_REF not in refs:
                refs.append(_PIN_REF)
    except AttributeError:  # not pandas 3's internals: the public way
        shallow = result.copy(deep=False)
        weakref.finalize(shallow, _keep, result)
        return shallow
    return result


def _keep(_: Any) -> None:
    """Holds the source of a shallow copy until the copy is collected."""
