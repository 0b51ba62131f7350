"""Plugins for the plugin tests: one good third-party library and several broken plugins."""
