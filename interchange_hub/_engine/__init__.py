"""Planning and running conversions; names no library.

``plans`` and ``registry`` < ``cache`` < ``router`` < ``planner``.
"""
