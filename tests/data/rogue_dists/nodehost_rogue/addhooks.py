"""Raises while adding its own hook specifications (a historic hook)."""

from nodehost import hookimpl


@hookimpl
def nodehost_addhooks(pluginmanager):
    raise ImportError("rogue hookspecs are missing")
