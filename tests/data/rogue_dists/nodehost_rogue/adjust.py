"""Edits the raw config half-way, then raises."""

from nodehost import hookimpl


@hookimpl
def nodehost_adjust_config(raw, source):
    raw["nodeName"] = "hijacked-by-rogue"
    raise RuntimeError("rogue adjust gave up half-way")
