"""Built-in adapters, one module per library, each an ordinary pluggy plugin.

``_bridge`` holds the library-independent Arrow <-> DLPack edges and ``_protocol`` the
description of objects that no adapter owns but that speak a protocol.
"""
