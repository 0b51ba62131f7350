"""Built-in adapters, one module per library, each an ordinary pluggy plugin.

``_bridge`` holds the library-independent Arrow <-> DLPack and copy edges.
"""
