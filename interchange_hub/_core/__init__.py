"""Plain values: devices, dtypes, descriptions, protocol detection, optional imports.

No data library and no pluggy is imported here; these modules import only ``errors``.
"""
