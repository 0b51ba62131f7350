"""Conversions between protocol nodes that belong to no library.

``tensors`` (Arrow <-> ndarray), ``devices`` (device arrays <-> tensors, device exports),
``edges`` (the bridge plugin: arrow <-> dlpack, arrow_device -> arrow, copy edges) and
``protocol_source`` (objects no adapter owns, described through their protocol).
"""
