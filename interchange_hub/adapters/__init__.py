"""Built-in adapters, one module per library, each an ordinary pluggy plugin (marked with
``_core.marks.hookimpl``, so that they load without pluggy until a manager is needed).

``_fastpaths`` holds direct edges between two built-in libraries (numpy <-> torch,
pandas <-> numpy) that skip a protocol node. The library-independent Arrow <-> DLPack
and copy edges are ``interchange_hub._bridge.edges``.
"""
