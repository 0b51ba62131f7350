"""Built-in adapters, one module per library, each a pluggy plugin: marked with
``_core.marks.hookimpl``, so that the hub loads them without pluggy until it needs a
manager, whose registration gives them pluggy's own mark (as
``interchange_hub.builtin_plugins()`` does, for a manager of one's own).

``_fastpaths`` holds direct edges between two built-in libraries (numpy <-> torch,
pandas <-> numpy) that skip a protocol node. The library-independent Arrow <-> DLPack
and copy edges are ``interchange_hub._bridge.edges``.
"""
