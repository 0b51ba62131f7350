"""Built-in adapters, one module per library, each an ordinary pluggy plugin.

``_fastpaths`` holds direct edges between two built-in libraries (numpy <-> torch,
pandas <-> numpy) that skip a protocol node. The library-independent Arrow <-> DLPack
and copy edges are ``interchange_hub._bridge.edges``.
"""
